"""(desired, live) → Plan: the changes (sync/core/changes.py) that converge the fleet, ignored
routes, conflicts, plan hash."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence, Set
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sync.core.carry import carrying, leftovers, unseen
from sync.core.changes import Change as Change
from sync.core.changes import Conflict as Conflict
from sync.core.changes import Create as Create
from sync.core.changes import Delete as Delete
from sync.core.changes import Ignored as Ignored
from sync.core.changes import RouteChange as RouteChange
from sync.core.changes import Update as Update
from sync.core.changes import Withheld as Withheld
from sync.core.compare import diff, prune_before, removed_keys, shown, update_before
from sync.core.health import HostHealth
from sync.core.identity import Extra, HostRoutes, address, created, match_hosts
from sync.core.ownership import claim
from sync.core.render import Route, canonical_json, generation, with_generation, with_id
from sync.fleet.model import Fleet
from sync.litellm.releases import LiteLLMRelease


@dataclass(frozen=True)
class Plan:
    fleet: str
    changes: tuple[Change, ...]
    ignored: tuple[Ignored, ...]
    owned_live: int  # routes the fleet owned on the proxy before the plan
    desired_count: int  # routes fleet.yaml renders
    declared_models: frozenset[str]
    live_groups: tuple[tuple[str, int], ...]  # (model_name, routes the router lists), all routes
    # Set by healthgate.gate when hosts were probed: changes holds only what apply may write.
    withheld: tuple[Withheld, ...] = ()
    health: tuple[HostHealth, ...] | None = None  # None: not probed
    conflicts: tuple[Conflict, ...] = ()
    # The LiteLLM version the proxy reported (None: unknown). Shown, never hashed: the same
    # changes against an upgraded proxy are the same plan.
    litellm_version: str | None = None
    # Each desired host's route once the plan is applied, under the id that will serve it (the
    # live id it keeps, a replacement's, or the derived id of a create): what answers for it.
    serving: tuple[Route, ...] = ()
    # What the plan could not look at (e.g. fleet.yaml's git history): shown, never hashed.
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing to do and nothing in the way: a conflict is never "matches"."""
        return not self.changes and not self.withheld and not self.conflicts

    @property
    def agreement(self) -> str:
        """What two pods must agree on to plan from either: the changes and conflicts (the
        hash) and the route counts the safety rules read, never unrelated routes."""
        declared = [g for g in self.live_groups if g[0] in self.declared_models]
        return canonical_json([self.hash, self.owned_live, declared])

    def health_of(self, model_name: str, host: str | None) -> HostHealth | None:
        """A host's probe result: by identity, since its route may keep LiteLLM's id."""
        return next(
            (h for h in self.health or () if (h.model_name, h.host) == (model_name, host or "")),
            None,
        )

    def of(self, action: str) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.action == action)

    def changes_json(self) -> list[dict[str, Any]]:
        return [change_json(c) for c in self.changes]

    @cached_property  # the canonical JSON of every change; computed once per plan
    def hash(self) -> str:
        content: dict[str, Any] = {"fleet": self.fleet, "changes": self.changes_json()}
        if self.conflicts:
            content["conflicts"] = [c.as_dict() for c in self.conflicts]
        body = canonical_json(content)
        return "sha256:" + hashlib.sha256(body.encode()).hexdigest()

    def unredacted_json(self) -> dict[str, Any]:
        """The plan with the live values as the proxy listed them: what the hash covers and
        what tests and benchmarks compare, never an output. Every output shows
        sync/report/redaction.py's plan_json, which hides live values by provenance."""
        return {
            "version": 1,
            "fleet": self.fleet,
            "hash": self.hash,
            "litellm_version": self.litellm_version,
            "summary": {a: len(self.of(a)) for a in ("create", "update", "delete")},
            "changes": [self._with_health(c, change_json(c)) for c in self.changes],
            "conflicts": [c.as_dict() for c in self.conflicts],
            "ignored": [
                {"id": i.route.id, "model_name": i.route.model_name, "reason": i.reason}
                for i in self.ignored
            ],
            "withheld": [
                {**self._with_health(w.change, change_json(w.change)), "withheld": w.reason}
                for w in self.withheld
            ],
            "health": None if self.health is None else [h.as_dict() for h in self.health],
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    def _with_health(self, change: Change, body: dict[str, Any]) -> dict[str, Any]:
        """A change's JSON with its host's probe result (outside the hash: a probe is not a
        change, and a host that flaps must not make a reviewed plan stale)."""
        health = (
            None if isinstance(change, Delete) else self.health_of(change.model_name, change.host)
        )
        return {**body, "health": health.as_dict()} if health else body


def change_json(change: Change) -> dict[str, Any]:
    before: dict[str, Any] | None = None
    if isinstance(change, Update):
        before = update_before(change.before, change.route, change.diff)
    elif isinstance(change, Delete):
        before = prune_before(change.route, change.replacement)
    out: dict[str, Any] = {
        "action": change.action,
        "id": change.id,
        "model_name": change.model_name,
        "host": change.host,
        "before": before,
        "after": None if isinstance(change, Delete) else shown(change.route),
        "diff": [d.as_dict() for d in change.diff] if not isinstance(change, Delete) else [],
    }
    if isinstance(change, Create) and change.replaces:
        out["replaces"] = change.replaces
        for key in ("carries", "drops", "may_drop"):
            if paths := getattr(change, key):
                out[key] = list(paths)
    if isinstance(change, Delete):
        out["reason"] = change.reason
        if change.replaced_by:
            out["replaced_by"] = change.replaced_by
        if change.may_drop:
            out["may_drop"] = list(change.may_drop)
    if isinstance(change, Update | Delete):
        if change.removes:
            out["removes"] = list(change.removes)
        if not change.listed:
            out["listed"] = False  # stored by LiteLLM, not listed by its router
    return out


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
    fleet's to repair or prune like any other, but they serve nothing."""
    desired_by_id = {r.id: r for r in desired}
    listed_ids = {r.id for r in live}
    dead = {r.id for r in unlisted} - listed_ids
    everything = [*live, *(r for r in unlisted if r.id in dead)]
    live_by_id = {r.id: r for r in everything}
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
        decision = claim(route, fleet, claims, take_over)
        if decision.owned:
            owned[route.id] = route
            if decision.adopted:
                adopted.add(route.id)
        elif route.id in desired_by_id:
            reasons[route.id] = decision.reason  # a conflict, listed as such, not as ignored
        else:
            ignored.append(Ignored(route, decision.reason))

    creates: list[Change] = []
    updates: list[Change] = []
    deletes: list[Change] = []
    conflicts: list[Conflict] = []
    serving: list[Route] = []
    in_place = LiteLLMRelease(litellm_version).removes_params_in_place
    hosts = match_hosts(desired, owned.values(), adopted, dead)
    for route in desired:
        found = hosts.get(route.id)
        if found is None:
            holder = live_by_id.get(route.id)
            if holder is None:
                creates.append(Create(route))
                serving.append(route)
            else:  # held by a route this fleet does not own, and the host has none of its own
                conflicts.append(Conflict(route, holder, reasons[holder.id]))
            continue
        if route.id in reasons:  # the host has a route of its own: the holder is left aside
            ignored.append(Ignored(live_by_id[route.id], reasons[route.id]))
        current = found.current
        target, change, removes = _converge(route, current, live_by_id, in_place, dead)
        serving.append(target)
        if isinstance(change, Create):
            creates.append(change)
            deletes.append(
                Delete(
                    current,
                    f"LiteLLM cannot remove {', '.join(removes)} from a route in place",
                    replaced_by=target.id,
                    removes=removes,
                    listed=current.id not in dead,
                )
            )
        elif change is not None:
            updates.append(change)
        deletes += [_extra(extra, route, target, adopted, dead) for extra in found.extras]
    orphans = _orphans(fleet, owned, adopted, hosts, dead, desired_by_id.keys())
    renamed = _renames(creates, orphans, desired_by_id.keys())
    creates = [renamed.get(c.id, c) for c in creates]
    deletes += [renamed.get(d.id, d) for d in orphans]
    successors = {c.id: c.route for c in renamed.values() if isinstance(c, Create)}
    serving = [successors.get(r.id, r) for r in serving]

    def order(c: Change) -> tuple[str, str, str]:
        return (c.model_name, c.host or "", c.id)

    groups: dict[str, int] = {}
    for route in live:  # what serves: rows the router does not list count for nothing
        groups[route.model_name] = groups.get(route.model_name, 0) + 1
    return Plan(
        fleet=fleet.name,
        changes=tuple(
            sorted(creates, key=order) + sorted(updates, key=order) + sorted(deletes, key=order)
        ),
        ignored=tuple(sorted(ignored, key=lambda i: (i.route.model_name, i.route.id))),
        owned_live=len(owned),
        desired_count=len(desired),
        declared_models=fleet.model_names,
        live_groups=tuple(sorted(groups.items())),
        conflicts=tuple(sorted(conflicts, key=lambda c: (c.desired.model_name, c.id))),
        litellm_version=litellm_version,
        serving=tuple(serving),
        notes=tuple(notes),
    )


# Said beside the delete of a route fleet-sync did not create: nothing read from the proxy shows
# what it holds that LiteLLM never lists, and nothing can take it over.
NOT_CREATED = (
    "; this route was not created by fleet-sync: its api_key and other values LiteLLM never "
    "lists go with it"
)


def _extra(
    extra: Extra, desired: Route, target: Route, adopted: set[str], dead: set[str]
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
    owned: dict[str, Route],
    adopted: set[str],
    hosts: dict[str, HostRoutes],
    dead: set[str],
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
    live_by_id: dict[str, Route],
    in_place: bool,
    dead: set[str],
) -> tuple[Route, Create | Update | None, tuple[str, ...]]:
    """What brings the host's current live route to the desired one: nothing, an in-place
    update (removing litellm_params keys too where PATCH honours litellm_params_to_remove),
    or, when other keys must go, a create of a new route, whose Delete of the current route
    follows it (create first: no gap). The route keeps its id: a generation of the host's
    derived id, or LiteLLM's id for a route the fleet adopted. Returns (the route that will
    serve, the change, the keys removed)."""
    base, n = generation(current.id)
    ours = base == desired.id  # fleet-sync created it (under the host's derived id)
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


def split_by_base(head: Plan, base: Plan | None) -> tuple[tuple[Change, ...], tuple[Change, ...]]:
    """(what this PR changes, drift already live): a head change that the base fleet.yaml would
    cause identically is drift, not the PR's doing."""
    if base is None:
        return head.changes, ()
    at_base = {canonical_json(change_json(c)) for c in base.changes}
    drift = tuple(c for c in head.changes if canonical_json(change_json(c)) in at_base)
    return tuple(c for c in head.changes if c not in drift), drift
