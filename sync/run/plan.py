"""plan over a run's targets: each read and shown, saved when asked, each its sticky comment on
the pull request; the exit is the worst of the targets' (sync/core/promotion.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sync.core.promotion import worst
from sync.core.verdict import Verdict
from sync.run.console import EXIT_OK
from sync.run.github import each_github
from sync.run.reading import Reading, TargetPlan, base_plan, plan_all
from sync.run.show import saved_document, show_plans
from sync.run.verdicts import plan_code
from sync.secrets import scrub

if TYPE_CHECKING:
    from sync.fleet.targets import Target


@dataclass(frozen=True)
class PlanOptions:
    fmt: str
    out: Path | None
    detailed_exitcode: bool
    github_comment: bool
    base_ref: str | None


def run_plan(reading: Reading, targets: Sequence[Target], options: PlanOptions) -> int:
    """plan's exit: 3 when apply would refuse a target's plan (under its reviewed force, when
    the comment read one), else 2 for changes with --detailed-exitcode, else 0."""
    from sync.gitops import loops as gitops

    outcomes = plan_all(reading, targets)
    show_plans(options.fmt, reading.fleet.name, outcomes)
    if options.out and (document := saved_document(reading.fleet.name, outcomes)) is not None:
        scrub.write_text(options.out, document)
    verdicts: dict[str | None, Verdict] = {}

    def comment(value: TargetPlan) -> str:
        line, verdicts[value.name] = gitops.comment_reviewed_plan(
            reading.fleet_file, value.plan, base_plan(reading, value), value.unsafe,
            options.base_ref, os.environ, target=value.name,
        )  # fmt: skip
        return line

    posted = each_github(outcomes, comment) if options.github_comment else {}
    return worst(
        o.code
        or posted.get(o.target, EXIT_OK)
        or target_code(o.value, verdicts, options.detailed_exitcode)
        for o in outcomes
    )


def target_code(
    value: TargetPlan | None, verdicts: Mapping[str | None, Verdict], detailed_exitcode: bool
) -> int:
    if value is None:
        return EXIT_OK
    verdict = verdicts.get(value.name) or Verdict(value.unsafe)
    return plan_code(verdict, not value.plan.empty, detailed_exitcode)
