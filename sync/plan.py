"""(desired, live) → Plan: Create / Update / Delete value objects, ignored routes, plan hash."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from deepdiff import DeepDiff

from .fleet import Fleet, normalise_address
from .health import HostHealth
from .normalise import clean_info, clean_params
from .ownership import claim
from .render import Route, canonical_json

ABSENT = "(absent)"


@dataclass(frozen=True)
class FieldChange:
    path: str  # e.g. "litellm_params.api_base"
    before: Any  # ABSENT when the key is missing on the live route
    after: Any  # ABSENT when fleet.yaml no longer sets it

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}


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


@dataclass(frozen=True)
class Update(RouteChange):
    before: Route
    diff: tuple[FieldChange, ...]
    action: Literal["update"] = "update"
    # False: LiteLLM stored the route but its router does not list it (it serves nothing), so
    # the update is sent even when nothing differs: it is what makes the router load it again.
    listed: bool = True

    @property
    def removed_params(self) -> tuple[str, ...]:
        """litellm_params keys live has and fleet.yaml no longer wants."""
        wanted = set(view(self.route)["litellm_params"])
        return tuple(sorted(set(view(self.before)["litellm_params"]) - wanted))


@dataclass(frozen=True)
class Delete(RouteChange):
    reason: str
    replaced_by: str | None = None  # id of the tagged route created in its place
    action: Literal["delete"] = "delete"
    listed: bool = True  # False: a stored row the router does not list (it serves nothing)


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
        return next((h for h in self.health or () if h.route_id == route_id), None)

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


def view(route: Route, info_keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The comparable form of a route. model_info is compared on the keys fleet.yaml sets
    (LiteLLM enriches the rest, and PATCH merges model_info so extra keys cannot be removed);
    api_key is compared through the digest tag because LiteLLM never returns it."""
    params = {k: v for k, v in clean_params(route.litellm_params).items() if k != "api_key"}
    info = clean_info(route.model_info)
    if info_keys is not None:
        keys = set(info_keys)
        info = {k: v for k, v in info.items() if k in keys}
    return {"model_name": route.model_name, "litellm_params": params, "model_info": info}


def shown(route: Route) -> dict[str, Any]:
    """A route as plans show it: comparable fields plus the api_key reference we send."""
    out = view(route)
    if "api_key" in route.litellm_params:
        out["litellm_params"]["api_key"] = clean_params(route.litellm_params)["api_key"]
    return out


def diff(live: Route, desired: Route) -> tuple[FieldChange, ...]:
    after = view(desired)
    before = view(live, after["model_info"].keys())
    result = DeepDiff(before, after, ignore_numeric_type_changes=True, view="tree")
    changes: list[FieldChange] = []
    for level in (lvl for group in result.values() for lvl in group):
        parts = level.path(output_format="list")
        changes.append(
            FieldChange(
                path=".".join(str(p) for p in parts),
                before=_plain(level.t1),
                after=_plain(level.t2),
            )
        )
    return tuple(sorted(changes, key=lambda c: c.path))


def _plain(value: Any) -> Any:
    return ABSENT if type(value).__name__ == "NotPresent" else value


def change_json(change: Change) -> dict[str, Any]:
    before = (
        None
        if isinstance(change, Create)
        else shown(change.before if isinstance(change, Update) else change.route)
    )
    after = None if isinstance(change, Delete) else shown(change.route)
    out: dict[str, Any] = {
        "action": change.action,
        "id": change.id,
        "model_name": change.model_name,
        "host": change.host,
        "before": before,
        "after": after,
        "diff": [d.as_dict() for d in change.diff] if isinstance(change, Update) else [],
    }
    if isinstance(change, Delete):
        out["reason"] = change.reason
        if change.replaced_by:
            out["replaced_by"] = change.replaced_by
    if isinstance(change, Update | Delete) and not change.listed:
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
    owned: dict[str, Route] = {}
    adopted: set[str] = set()
    ignored: list[Ignored] = []
    reasons: dict[str, str] = {}
    for route in everything:
        decision = claim(route, fleet, desired_by_id, take_over)
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
    conflicts: list[Conflict] = []
    for route in desired:
        current = live_by_id.get(route.id)
        if current is None:
            creates.append(Create(route))
        elif current.id in owned:
            changes = diff(current, route)
            listed = current.id not in dead
            if changes or not listed:
                updates.append(Update(route=route, before=current, diff=changes, listed=listed))
        else:
            conflicts.append(Conflict(route, current, reasons[current.id]))

    by_address = {
        (r.model_name, normalise_address(r.api_base or "")): r.id for r in desired if r.api_base
    }
    drained = {(m.name, h.name) for m in fleet.models for h in m.hosts if not h.enabled}
    deletes: list[Change] = []
    for route in owned.values():
        if route.id in desired_by_id:
            continue
        listed = route.id not in dead
        if route.id in adopted:
            replacement = by_address.get((route.model_name, _address(route)))
            reason = (
                f"untagged route of {route.model_name} replaced by a tagged one"
                if replacement
                else f"untagged route of {route.model_name} at an address no longer listed"
            )
            deletes.append(Delete(route, reason, replacement, listed=listed))
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
