"""What apply would refuse, and with which force: the verdict plan reports and apply obeys
(sync/core/verdict.py), and plan's exit code from it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sync.run.console import EXIT_CHANGES, EXIT_OK, EXIT_REFUSED, tell
from sync.run.github import github_value

if TYPE_CHECKING:
    from sync.core.plan import Plan
    from sync.core.verdict import Verdict
    from sync.fleet.model import Fleet


def plan_code(verdict: Verdict, changed: bool, detailed_exitcode: bool) -> int:
    """plan's exit: 3 when apply would refuse it (whatever --detailed-exitcode), else 2 for
    changes with --detailed-exitcode, else 0."""
    if verdict.refused:
        return EXIT_REFUSED
    return EXIT_CHANGES if detailed_exitcode and changed else EXIT_OK


def apply_verdict(
    plan: Plan, fleet: Fleet, force: bool, github: bool, target: str | None = None
) -> Verdict:
    """apply's verdict (sync/core/verdict.py, the one plan reports): --force accepts every
    refusal; on GitHub (--github-comment), the merged pull request's reviewed force accepts
    those its plan comment accepted (sync/gitops/force.py)."""
    from sync.core.verdict import FORCE, decide

    verdict = decide(plan, fleet.max_prune_percent, FORCE if force else None)
    if verdict.refused and github:
        from sync.gitops.loops import reviewed_force

        review = github_value(
            lambda: ("reading the merged pull request's fleet-sync:force label",
                     reviewed_force(os.environ, plan.fleet, target))
        )  # fmt: skip
        for note in review.notes:
            tell(f"note: {note}")
        if review.acceptance is not None:
            verdict = decide(plan, fleet.max_prune_percent, review.acceptance)
    if verdict.accepted:
        tell(f"forcing {len(verdict.accepted)} refusal(s) accepted by {verdict.by}: "
             + " | ".join(verdict.accepted))  # fmt: skip
    return verdict
