"""(desired, live) → Plan: Create / Update / Delete value objects, ignored routes, plan hash."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from .compare import FieldChange, diff, prune_before, removed_keys, shown, update_before
from .fleet import Fleet, normalise_address
from .health import HostHealth
from .ownership import claim
from .render import Route, canonical_json, generation, with_generation
from .versions import LiteLLMRelease


@dataclass(frozen=True)
class RouteChange:
    """What every change says about its route (the desired one, or the live one for a delete)."""

    route: Route

    @property
    def id(self) -> str:
        return self.route.id

    @property
    def model_name(self) -> str:
        return self.route.model_name

    @property
    def host(self) -> str | None:
        return self.route.host


@dataclass(frozen=True)
class Create(RouteChange):
    action: Literal["create"] = "create"
    # A replacement: the id of the live route it replaces (deleted after this is created) and
    # what differs from it. LiteLLM cannot remove a key in place, so removing one is this.
    replaces: str | None = None
    diff: tuple[FieldChange, ...] = ()


@dataclass(frozen=True)
class Update(RouteChange):
    before: Route
    diff: tuple[FieldChange, ...]
    action: Literal["update"] = "update"
    # False: LiteLLM stored the route but its router does not list it (it serves nothing), so
    # the update is sent even when nothing differs: it is what makes the router load it again.
    listed: bool = True
    # Top-level litellm_params keys it removes in place (LiteLLM 1.109+ litellm_params_to_remove).
    removes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Delete(RouteChange):
    reason: str
    replaced_by: str | None = None  # id of the route created in its place
    action: Literal["delete"] = "delete"
    removes: tuple[str, ...] = ()  # the keys whose removal replaces this route
    replacement: Route | None = None  # the route created in its place (shapes `before`)
    listed: bool = True  # False: a stored row the router does not list (it serves nothing)

    @property
    def prune(self) -> bool:
        """Counted by the safety rails: a route removed, or replaced to drop keys (its
        replacement has a new id; the rails see both sides like any prune)."""
        return self.replaced_by is None or bool(self.removes)


Change = Create | Update | Delete


@dataclass(frozen=True)
class Ignored:
    route: Route
    reason: str


@dataclass(frozen=True)
class Conflict:
    """A route fleet.yaml wants whose id is held by a live route the fleet does not own: never
    touched, never reported as matching; apply refuses without --force."""

    desired: Route
    held_by: Route
    reason: str  # why the holder is not the fleet's

    @property
    def id(self) -> str:
        return self.desired.id

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model_name": self.desired.model_name,
            "host": self.desired.host,
            "held_by": {
                "model_name": self.held_by.model_name,
                "fleet": self.held_by.fleet,
                "source": self.held_by.source,
            },
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Withheld:
    """A change held back because its host does not serve (health: require); not applied."""

    change: Change
    reason: str


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

    def health_of(self, route_id: str) -> HostHealth | None:
        base = generation(route_id)[0]  # a host is probed under its first id
        return next((h for h in self.health or () if h.route_id == base), None)

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

    def to_json(self) -> dict[str, Any]:
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
        }

    def _with_health(self, change: Change, body: dict[str, Any]) -> dict[str, Any]:
        """A change's JSON with its host's probe result (outside the hash: a probe is not a
        change, and a host that flaps must not make a reviewed plan stale)."""
        health = None if isinstance(change, Delete) else self.health_of(change.id)
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
    if isinstance(change, Delete):
        out["reason"] = change.reason
        if change.replaced_by:
            out["replaced_by"] = change.replaced_by
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
    in_place = LiteLLMRelease(litellm_version).removes_params_in_place
    generations: dict[str, list[Route]] = {}
    for route in sorted(owned.values(), key=lambda r: generation(r.id)[1]):
        generations.setdefault(generation(route.id)[0], []).append(route)
    for route in desired:
        found = generations.get(route.id, [])
        if not found:
            holder = live_by_id.get(route.id)
            if holder is None:
                creates.append(Create(route))
            else:  # held by a route this fleet does not own
                conflicts.append(Conflict(route, holder, reasons[holder.id]))
            continue
        if route.id in reasons:  # the host is served by a later generation: the holder is aside
            ignored.append(Ignored(live_by_id[route.id], reasons[route.id]))
        *older, current = found
        target, change, removes = _converge(route, current, live_by_id, in_place, dead)
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
        deletes += [
            Delete(
                old,
                f"an older generation of host {old.host or '?'}",
                replaced_by=target.id,
                listed=old.id not in dead,
            )
            for old in older
        ]

    by_address = {
        (r.model_name, normalise_address(r.api_base or "")): r for r in desired if r.api_base
    }
    drained = {(m.name, h.name) for m in fleet.models for h in m.hosts if not h.enabled}
    for route in owned.values():
        if route.id in claims:
            continue
        listed = route.id not in dead
        if route.id in adopted:
            replacement = by_address.get((route.model_name, _address(route)))
            reason = (
                f"untagged route of {route.model_name} replaced by a tagged one"
                if replacement
                else f"untagged route of {route.model_name} at an address no longer listed"
            )
            deletes.append(
                Delete(
                    route,
                    reason,
                    replaced_by=replacement.id if replacement else None,
                    replacement=replacement,
                    listed=listed,
                )
            )
        elif (route.model_name, route.host) in drained:
            deletes.append(
                Delete(route, f"host {route.host} is drained (enabled: false)", listed=listed)
            )
        else:
            deletes.append(
                Delete(route, f"host {route.host or '?'} is no longer in fleet.yaml", listed=listed)
            )

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
    )


def _converge(
    desired: Route,
    current: Route,
    live_by_id: dict[str, Route],
    in_place: bool,
    dead: set[str],
) -> tuple[Route, Create | Update | None, tuple[str, ...]]:
    """What brings the host's current live route to the desired one: nothing, an in-place
    update (removing litellm_params keys too where PATCH honours litellm_params_to_remove),
    or, when other keys must go, a create of the next generation, whose Delete of the current
    route follows it (create first: no gap). Returns (the route that will serve, the change,
    the keys removed)."""
    target = with_generation(desired, generation(current.id)[1])
    changes = diff(current, target)
    removes = removed_keys(changes, target)
    listed = current.id not in dead
    if not removes or (in_place and all(r.startswith("litellm_params.") for r in removes)):
        if not changes and listed:
            return target, None, ()
        update = Update(target, before=current, diff=changes, listed=listed, removes=removes)
        return target, update, ()
    n = generation(current.id)[1] + 1
    while with_generation(desired, n).id in live_by_id:  # held by a route not this fleet's
        n += 1
    successor = with_generation(desired, n)
    replace = Create(successor, replaces=current.id, diff=diff(current, successor))
    return successor, replace, removes


def _address(route: Route) -> str:
    try:
        return normalise_address(route.api_base or "")
    except (KeyError, ValueError):
        return route.api_base or ""


def split_by_base(head: Plan, base: Plan | None) -> tuple[tuple[Change, ...], tuple[Change, ...]]:
    """(what this PR changes, drift already live): a head change that the base fleet.yaml would
    cause identically is drift, not the PR's doing."""
    if base is None:
        return head.changes, ()
    at_base = {canonical_json(change_json(c)) for c in base.changes}
    drift = tuple(c for c in head.changes if canonical_json(change_json(c)) in at_base)
    return tuple(c for c in head.changes if c not in drift), drift
