"""(desired, live) → Plan, in named phases: claim (which live routes the fleet owns), converge
(each desired host against its routes), prune (owned routes no host has; renames taken as
replacements), assemble. The Plan value and its JSON are in sync/core/plan.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field

from sync.core.addressing import unaddressable
from sync.core.carry import carrying, leftovers, unseen
from sync.core.changes import Change, Conflict, Create, Delete, Ignored, Update
from sync.core.compare import diff, removed_keys
from sync.core.identity import Extra, HostRoutes, address, created, match_hosts
from sync.core.ownership import claim
from sync.core.plan import Plan
from sync.core.reference_match import route_links
from sync.core.render import (
    PAUSED,
    Route,
    generation,
    pausing,
    render_drained,
    with_generation,
    with_id,
)
from sync.fleet.model import Fleet
from sync.litellm.releases import LiteLLMRelease
from sync.litellm.teams import team_scope


def make_plan(
    fleet: Fleet,
    desired: Sequence[Route],
    live: Sequence[Route],
    unlisted: Sequence[Route] = (),
    take_over: bool = False,
    litellm_version: str | None = None,
    notes: Sequence[str] = (),
) -> Plan:
    """`live` is what the router lists (what clients route on); `unlisted` holds rows LiteLLM
    stored in its database but does not list (a create it could not load): they are the
    fleet's to repair or prune like any other, but they serve nothing.

    In phases: claim (which live routes the fleet owns), converge (each desired host against
    its routes), prune (owned routes no host has, renames taken as replacements), assemble."""
    release = LiteLLMRelease(litellm_version)
    # A drained host's route is paused where LiteLLM can pause (its listing shows the flag on
    # every database route, whatever version it reports), else deleted as a prune.
    pauses = release.pauses or any(PAUSED in r.model_info for r in live)
    wanted = [*desired, *(render_drained(fleet) if pauses else ())]
    desired_by_id = {r.id: r for r in wanted}
    dead = {r.id for r in unlisted} - {r.id for r in live}
    everything = [*live, *(r for r in unlisted if r.id in dead)]
    claimed = _claim(fleet, desired_by_id, everything, take_over, dead)
    work = _Work(ignored=list(claimed.ignored))
    in_place = release.removes_params_in_place
    hosts = match_hosts(wanted, claimed.owned.values(), claimed.adopted, dead)
    live_by_id = {r.id: r for r in everything}
    for route in wanted:
        _converge_host(route, hosts.get(route.id), live_by_id, claimed, in_place, dead, work)
    orphans = _orphans(fleet, claimed.owned, claimed.adopted, hosts, dead, desired_by_id.keys())
    renamed = _renames(work.creates, orphans, desired_by_id.keys())
    work.creates = [renamed.get(c.id, c) for c in work.creates]
    work.deletes += [renamed.get(d.id, d) for d in orphans]
    successors = {c.id: c.route for c in renamed.values() if isinstance(c, Create)}
    work.serving = [successors.get(r.id, r) for r in work.serving]
    return _assemble(fleet, desired, live, claimed, work, litellm_version, notes)


@dataclass(frozen=True)
class _Claimed:
    """The claim phase: the live routes the fleet owns (adopted ones among them), the ones it
    ignores, and why a desired id's holder is not the fleet's (a conflict)."""

    owned: dict[str, Route]
    adopted: frozenset[str]
    ignored: tuple[Ignored, ...]
    reasons: dict[str, str]
    # Routes of this fleet's name the fleet does not own (another source), by (model, "host:H")
    # and (model, "at:address"): the host they serve must not get a second route beside them.
    copies: Mapping[tuple[str, str], Ignored] = field(default_factory=dict)


@dataclass
class _Work:
    """The changes the converge and prune phases collect (private to make_plan)."""

    creates: list[Change] = field(default_factory=list)
    updates: list[Change] = field(default_factory=list)
    deletes: list[Change] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    serving: list[Route] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)


def _claim(
    fleet: Fleet,
    desired_by_id: Mapping[str, Route],
    everything: Sequence[Route],
    take_over: bool,
    dead: Set[str],
) -> _Claimed:
    # Every generation of a desired id is that host's route (see render.generation).
    claims = {
        r.id: desired_by_id[b] for r in everything if (b := generation(r.id)[0]) in desired_by_id
    }
    claims.update(desired_by_id)
    owned: dict[str, Route] = {}
    adopted: set[str] = set()
    ignored: list[Ignored] = []
    reasons: dict[str, str] = {}
    for route in everything:
        decision = unaddressable(route) or claim(route, fleet, claims, take_over)
        if decision.owned:
            owned[route.id] = route
            if decision.adopted:
                adopted.add(route.id)
        elif route.id in desired_by_id:
            reasons[route.id] = decision.reason  # a conflict, listed as such, not as ignored
        else:
            ignored.append(Ignored(route, decision.reason))
    copies = _copies(fleet, ignored, dead)
    return _Claimed(owned, frozenset(adopted), tuple(ignored), reasons, copies)


def _copies(
    fleet: Fleet, ignored: Sequence[Ignored], dead: Set[str]
) -> dict[tuple[str, str], Ignored]:
    """The ignored routes tagged with this fleet's name (written from another source, or by a
    run that resolved another) that serve the public group, by the host they serve: its tag
    and its address. A route a run adopted keeps LiteLLM's id, so no id of fleet.yaml's
    collides with it: without this, a run whose source differs would create a second, keyless
    route beside each of them. A row the router does not list, a paused route or a team's
    serves no one of the group: a create beside it is no twin."""
    out: dict[tuple[str, str], Ignored] = {}
    for entry in ignored:
        route = entry.route
        if route.fleet != fleet.name or not route.db_model or route.id in dead or route.paused:
            continue
        if team_scope(route.model_name, route.model_info) is not None:
            continue
        if route.host is not None:
            out.setdefault((route.model_name, f"host:{route.host}"), entry)
        if route.api_base:
            out.setdefault((route.model_name, f"at:{address(route)}"), entry)
    return out


def _converge_host(
    route: Route,
    found: HostRoutes | None,
    live_by_id: Mapping[str, Route],
    claimed: _Claimed,
    in_place: bool,
    dead: Set[str],
    work: _Work,
) -> None:
    """One desired host against the routes it has: create, update, replace, or a conflict. A
    drained host (its route paused) without a route gets none: there is nothing to pause."""
    if found is None and route.paused:
        if route.id in claimed.reasons:  # its id held by a route not the fleet's: shown aside
            work.ignored.append(Ignored(live_by_id[route.id], claimed.reasons[route.id]))
        return
    if found is None:
        holder = live_by_id.get(route.id)
        copy = claimed.copies.get((route.model_name, f"host:{route.host}")) or (
            claimed.copies.get((route.model_name, f"at:{address(route)}"))
            if route.api_base
            else None
        )
        if holder is None and copy is not None:
            work.conflicts.append(Conflict(route, copy.route, copy.reason, held="host"))
        elif holder is None:
            work.creates.append(Create(route))
            work.serving.append(route)
        else:  # held by a route this fleet does not own, and the host has none of its own
            work.conflicts.append(Conflict(route, holder, claimed.reasons[holder.id]))
        return
    if route.id in claimed.reasons:  # the host has a route of its own: the holder is left aside
        work.ignored.append(Ignored(live_by_id[route.id], claimed.reasons[route.id]))
    current = found.current
    target, change, removes = _converge(route, current, live_by_id, in_place, dead)
    if not target.paused:  # a paused route answers nothing
        work.serving.append(target)
    if isinstance(change, Create):
        work.creates.append(change)
        work.deletes.append(
            Delete(
                current,
                f"LiteLLM cannot remove {', '.join(removes)} from a route in place",
                replaced_by=target.id,
                removes=removes,
                listed=current.id not in dead,
            )
        )
    elif change is not None:
        work.updates.append(change)
    work.deletes += [_extra(e, route, target, claimed.adopted, dead) for e in found.extras]


def _assemble(
    fleet: Fleet,
    desired: Sequence[Route],
    live: Sequence[Route],
    claimed: _Claimed,
    work: _Work,
    litellm_version: str | None,
    notes: Sequence[str],
) -> Plan:
    def order(c: Change) -> tuple[str, str, str]:
        return (c.model_name, c.host or "", c.id)

    groups: dict[str, int] = {}
    for route in live:  # what serves: rows the router does not list count for nothing
        if team_scope(route.model_name, route.model_info) is None:  # a team's serves its team only
            groups[route.model_name] = groups.get(route.model_name, 0) + (not route.paused)
    holding = {c.held_by.id for c in work.conflicts}  # listed as conflicts, not again as ignored
    ignored = [i for i in work.ignored if i.route.id not in holding]
    changes = (
        sorted(work.creates, key=order)
        + sorted(work.updates, key=order)
        + sorted(work.deletes, key=order)
    )
    return Plan(
        fleet=fleet.name,
        changes=tuple(changes),
        ignored=tuple(sorted(ignored, key=lambda i: (i.route.model_name, i.route.id))),
        owned_live=len(claimed.owned),
        desired_count=len(desired),
        declared_models=fleet.model_names,
        live_groups=tuple(sorted(groups.items())),
        conflicts=tuple(sorted(work.conflicts, key=lambda c: (c.desired.model_name, c.id))),
        litellm_version=litellm_version,
        serving=tuple(work.serving),
        notes=tuple(notes),
        links=route_links(live),
    )


# Said beside the delete of a route fleet-sync did not create: nothing read from the proxy shows
# what it holds that LiteLLM never lists, and nothing can take it over.
NOT_CREATED = (
    "; this route was not created by fleet-sync: its api_key and other values LiteLLM never "
    "lists go with it"
)


def _extra(
    extra: Extra, desired: Route, target: Route, adopted: Set[str], dead: Set[str]
) -> Delete:
    """The delete of another route of a host than the one that serves it (`target`). A route
    fleet-sync did not create may hold keys LiteLLM never lists that the serving route does
    not (a portal's working api_key beside a stale one): the safety rails refuse its delete."""
    old = extra.route
    may_drop = () if extra.created else unseen(old, desired.litellm_params)
    return Delete(
        old,
        extra.reason + (NOT_CREATED if may_drop else ""),
        replaced_by=target.id,
        replacement=target if old.id in adopted else None,
        listed=old.id not in dead,
        may_drop=may_drop,
    )


def _orphans(
    fleet: Fleet,
    owned: Mapping[str, Route],
    adopted: Set[str],
    hosts: dict[str, HostRoutes],
    dead: Set[str],
    desired_ids: Set[str],
) -> list[Delete]:
    """Prunes of the owned routes no desired host has: drained or removed hosts, untagged
    routes at an address fleet.yaml does not list for their model."""
    kept = {r.id for h in hosts.values() for r in (h.current, *(e.route for e in h.extras))}
    drained = {(m.name, h.name) for m in fleet.models for h in m.hosts if not h.enabled}
    out: list[Delete] = []
    for route in owned.values():
        if route.id in kept:
            continue
        listed = route.id not in dead
        if route.id in adopted:
            reason = f"untagged route of {route.model_name} at an address no longer listed"
        elif (route.model_name, route.host) in drained:
            reason = f"host {route.host} is drained (enabled: false)"
        else:
            reason = f"host {route.host or '?'} is no longer in fleet.yaml"
        may_drop = () if created(route, desired_ids) else unseen(route)
        reason += NOT_CREATED if may_drop else ""
        is_drained = (route.model_name, route.host) in drained
        out.append(Delete(route, reason, listed=listed, may_drop=may_drop, drained=is_drained))
    return out


def _renames(
    creates: Sequence[Change], orphans: Sequence[Delete], desired_ids: Set[str]
) -> dict[str, Change]:
    """A prune in the same plan as a create at the same address in the same model group (a
    host fleet-sync created, renamed) is a replacement: the new route carries what it can of
    the old one and the plan names what it may lose, and the old route is deleted once the new
    one is listed, not counted as lost. By id, the changes that take their place. (A route
    fleet-sync did not create is never such a prune: identity adopts it under the new name.)"""
    new = {
        (c.model_name, address(c.route)): c
        for c in creates
        if isinstance(c, Create) and not c.replaces and c.route.api_base
    }
    out: dict[str, Change] = {}
    for old in sorted(orphans, key=lambda d: (not d.listed, -generation(d.id)[1], d.id)):
        create = new.pop((old.model_name, address(old.route)), None)
        if create is None or not old.route.api_base:
            continue
        left = leftovers(old.route, create.route)
        successor = carrying(create.route, left.carries)
        out[create.id] = Create(
            successor,
            replaces=old.id,
            diff=diff(old.route, successor),
            carries=tuple(f"litellm_params.{key}" for key in left.carries),
            drops=left.drops,
            may_drop=left.unseen,
            foreign=not created(old.route, desired_ids),
        )
        out[old.id] = Delete(
            old.route,
            f"{old.reason}; host {create.host} at the same address replaces it",
            replaced_by=successor.id,
            listed=old.listed,
        )
    return out


def _converge(
    desired: Route,
    current: Route,
    live_by_id: Mapping[str, Route],
    in_place: bool,
    dead: Set[str],
) -> tuple[Route, Create | Update | None, tuple[str, ...]]:
    """What brings the host's current live route to the desired one: nothing, an in-place
    update (removing litellm_params keys too where PATCH honours litellm_params_to_remove),
    or, when other keys must go, a create of a new route, whose Delete of the current route
    follows it (create first: no gap). The route keeps its id: a generation of the host's
    derived id, or LiteLLM's id for a route the fleet adopted. Returns (the route that will
    serve, the change, the keys removed)."""
    base, n = generation(current.id)
    ours = base == desired.id  # fleet-sync created it (under the host's derived id)
    if current.paused:  # paused on the proxy: written back to what fleet.yaml wants
        desired = pausing(desired, desired.paused)
    target = with_generation(desired, n) if ours else with_id(desired, current.id)
    changes = diff(current, target)
    removes = removed_keys(changes, target)
    listed = current.id not in dead
    if not removes or (in_place and all(r.startswith("litellm_params.") for r in removes)):
        if not changes and listed:
            return target, None, ()
        update = Update(target, before=current, diff=changes, listed=listed, removes=removes)
        return target, update, ()
    # The next generation of the derived id; for an adopted route the first free one.
    n = n + 1 if ours else 1
    while with_generation(desired, n).id in live_by_id:  # held by a route not this fleet's
        n += 1
    left = leftovers(current, desired)
    successor = carrying(with_generation(desired, n), left.carries)
    replace = Create(
        successor,
        replaces=current.id,
        diff=diff(current, successor),
        carries=tuple(f"litellm_params.{key}" for key in left.carries),
        drops=left.drops,
        may_drop=left.unseen,
        foreign=not ours,
    )
    return successor, replace, removes
