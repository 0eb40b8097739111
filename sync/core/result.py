"""What apply did: one Outcome per change, and the Result of a plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sync.core.changes import Change
from sync.core.plan import Plan

# "not started": the apply was interrupted (SIGINT, SIGTERM) before this change's write began.
Status = Literal["done", "failed", "unconfirmed", "skipped", "not started"]


@dataclass(frozen=True)
class Outcome:
    change: Change
    status: Status
    detail: str = ""
    lagging: tuple[str, ...] = ()  # pods that did not show the change by the deadline


@dataclass(frozen=True)
class Result:
    plan: Plan
    outcomes: tuple[Outcome, ...]

    @property
    def complete(self) -> bool:
        """Every change confirmed, none withheld for want of a serving host, and no desired
        route left without one by a conflict."""
        return (
            all(o.status == "done" for o in self.outcomes)
            and not self.plan.withheld
            and not self.plan.conflicts
        )

    def count(self, status: Status) -> int:
        return sum(1 for o in self.outcomes if o.status == status)
