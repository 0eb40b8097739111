"""Whether apply runs a plan: the one decision `apply` makes before its first write and `plan`
reports as its exit code (3 when apply would refuse), so the pull request's check is apply's
verdict. The rails themselves are sync/core/safety.py; what may override them is an
Acceptance: `--force` (every refusal) or a reviewed force (a pull request's `fleet-sync:force`
label, sync/gitops/force.py), which accepts only the refusals the reviewed plan showed, each
named by its key."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sync.core.plan import Plan
from sync.core.safety import refusals


def refusal_key(reason: str) -> str:
    """A refusal's short name for the record of what a review accepted: its text determines it,
    and the text names what it is about (the model, the host, the ids, the counts), so a plan
    whose refusal says anything else has another key."""
    return "r" + hashlib.sha256(reason.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Acceptance:
    """What overrides the rails: every refusal (`keys` None: `--force`) or only those whose key
    a review accepted. `by` says who, for the plan, the result and the logs."""

    by: str
    keys: frozenset[str] | None = None

    def accepts(self, reason: str) -> bool:
        return self.accepts_key(refusal_key(reason))

    def accepts_key(self, key: str) -> bool:
        return self.keys is None or key in self.keys


FORCE = Acceptance("--force")


@dataclass(frozen=True)
class Verdict:
    """refused: what stops apply (exit 3); accepted: refusals it overrides, by `by`."""

    refused: tuple[str, ...]
    accepted: tuple[str, ...] = ()
    by: str | None = None

    @property
    def runs(self) -> bool:
        return not self.refused

    @property
    def reasons(self) -> tuple[str, ...]:
        """Every refusal, accepted or not."""
        return self.refused + self.accepted


def judge(reasons: Sequence[str], acceptance: Acceptance | None = None) -> Verdict:
    """The verdict on a plan's refusals (sync/core/safety.py) under what accepts some."""
    if acceptance is None:
        return Verdict(tuple(reasons))
    refused = tuple(r for r in reasons if not acceptance.accepts(r))
    accepted = tuple(r for r in reasons if acceptance.accepts(r))
    return Verdict(refused, accepted, acceptance.by if accepted else None)


def decide(plan: Plan, max_prune_percent: float, acceptance: Acceptance | None = None) -> Verdict:
    """apply's verdict on `plan`: every rail it checks (safety.refusals), then what accepts
    some of them. `plan` exits 3 on the same verdict, so the two never disagree."""
    return judge(refusals(plan, max_prune_percent), acceptance)


def keys(reasons: Iterable[str]) -> tuple[str, ...]:
    return tuple(refusal_key(r) for r in reasons)
