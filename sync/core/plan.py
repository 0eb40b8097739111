"""The Plan: the changes (sync/core/changes.py) that converge the fleet, ignored routes,
conflicts, its JSON and hash. sync/core/planner.py makes it from (desired, live)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sync.core.changes import Change as Change
from sync.core.changes import Conflict as Conflict
from sync.core.changes import Create as Create
from sync.core.changes import Delete as Delete
from sync.core.changes import Ignored as Ignored
from sync.core.changes import RouteChange as RouteChange
from sync.core.changes import Update as Update
from sync.core.changes import Withheld as Withheld
from sync.core.compare import prune_before, shown, update_before
from sync.core.health import HostHealth
from sync.core.references import References
from sync.core.render import Route, canonical_json
from sync.fleet.proxyaddress import place_key


@dataclass(frozen=True)
class Binding:
    """What a plan was made for, in its hash (apply --plan refuses a plan made for another):
    the target (None without targets:), the endpoint it read — a digest of its pod URLs in one
    spelling each (sync/fleet/proxyaddress.py), never a credential nor a URL the output would
    have to mask — and the rails apply obeys, safety and the target's promotion order."""

    target: str | None
    endpoint: str  # "sha256:…" of the sorted place keys of the pod URLs
    max_prune_percent: float
    after: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, target: str | None, urls: tuple[str, ...], max_prune_percent: float,
        after: tuple[str, ...] = (),
    ) -> Binding:  # fmt: skip
        places = sorted({place_key(u) for u in urls})
        digest = hashlib.sha256(canonical_json(places).encode()).hexdigest()
        return cls(target, f"sha256:{digest}", max_prune_percent, tuple(after))

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "endpoint": self.endpoint,
            "safety": {"max_prune_percent": self.max_prune_percent},
            "after": list(self.after),
        }

    def differences(self, saved: Any) -> list[str]:
        """What a saved plan's `binds` says it was made for that this plan is not (empty: the
        same); `saved` is untrusted JSON."""
        if not isinstance(saved, dict):
            return ["it names no target, endpoint and rails (made by an older fleet-sync)"]
        mine = self.as_dict()
        said: list[str] = []
        if saved.get("target") != mine["target"]:
            said.append(
                f"it was made for {_target(saved.get('target'))}, not {_target(self.target)}"
            )
        if saved.get("endpoint") != mine["endpoint"]:
            said.append("it was made for another endpoint (other proxy URLs)")
        if saved.get("safety") != mine["safety"]:
            said.append(f"it was made under safety {_shown(saved.get('safety'))}, not "
                        f"{_shown(mine['safety'])}")  # fmt: skip
        if saved.get("after") != mine["after"]:
            said.append(f"it was made under after {_shown(saved.get('after'))}, not "
                        f"{_shown(mine['after'])}")  # fmt: skip
        return said


def _target(name: Any) -> str:
    return "no target (a fleet without targets:)" if name is None else f"target {_shown(name)}"


def _shown(value: Any) -> str:
    """A value of an untrusted saved plan, in one short line."""
    return canonical_json(value)[:120] if not isinstance(value, str) else value[:64]


@dataclass(frozen=True)
class Plan:
    fleet: str
    changes: tuple[Change, ...]
    ignored: tuple[Ignored, ...]
    owned_live: int  # routes the fleet owned on the proxy before the plan
    desired_count: int  # routes fleet.yaml renders
    declared_models: frozenset[str]
    # (model_name, routes the router lists serving it): every route but a team's (its team only)
    live_groups: tuple[tuple[str, int], ...]
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
    # What the plan was made for (target, endpoint, rails): hashed and shown as `binds`; None
    # for a plan made from data alone (its hash covers the changes only).
    binding: Binding | None = None
    # What still names the model groups the plan leaves without routes (sync/core/references.py,
    # read by sync/live/references.py): hashed, so `apply --plan` refuses a plan whose
    # references changed since review. None: the plan leaves no group empty, or was not read.
    references: References | None = None
    # What listed routes name (sync/core/reference_match.py route_links): (field, holder,
    # group) of auto-routers' models and model access groups. Read only for the references.
    links: tuple[tuple[str, str, str], ...] = ()

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
        if self.binding is not None:
            content["binds"] = self.binding.as_dict()
        if self.references is not None:
            content["references"] = self.references.as_dict()
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
            **({"binds": self.binding.as_dict()} if self.binding is not None else {}),
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
            **({"references": self.references.as_dict()} if self.references is not None else {}),
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
    if isinstance(change, Update) and change.pause is not None:
        out["pause"] = "pause" if change.pause else "resume"  # LiteLLM's `blocked`, set/cleared
    if isinstance(change, Create) and change.route.paused:
        out["paused"] = True  # created paused (its host is drained)
    if isinstance(change, Update | Delete):
        if change.removes:
            out["removes"] = list(change.removes)
        if not change.listed:
            out["listed"] = False  # stored by LiteLLM, not listed by its router
    return out


def split_by_base(head: Plan, base: Plan | None) -> tuple[tuple[Change, ...], tuple[Change, ...]]:
    """(what this PR changes, drift already live): a head change that the base fleet.yaml would
    cause identically is drift, not the PR's doing."""
    if base is None:
        return head.changes, ()
    at_base = {canonical_json(change_json(c)) for c in base.changes}
    drift = tuple(c for c in head.changes if canonical_json(change_json(c)) in at_base)
    return tuple(c for c in head.changes if c not in drift), drift
