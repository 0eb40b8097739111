"""drift over a run's targets: every target read at once and shown; --fix heals them in
promotion order behind the same gate as apply; --github-issue keeps one drift issue per fleet
and target. Exit 2 while any target drifts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from sync.core.promotion import HELD_CODE, hold, worst
from sync.run.console import (
    EXIT_CHANGES,
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_REFUSED,
    err,
    fail,
    out,
    target_prefix,
)
from sync.run.endpoint import check_can_write
from sync.run.github import each_github
from sync.run.outcome import Outcome, attempt, named
from sync.run.reading import Reading, TargetPlan, plan_target
from sync.run.show import sectioned, show_plan, show_plans
from sync.run.writes import CONCURRENCY, write_plan
from sync.secrets import display

if TYPE_CHECKING:
    from sync.fleet.targets import Target
    from sync.run.interrupt import Signals


@dataclass(frozen=True)
class DriftOptions:
    fmt: str
    fix: bool
    github_issue: bool


def run_drift(
    reading: Reading, targets: Sequence[Target], options: DriftOptions, signals: Signals
) -> int:
    from sync.gitops import loops as gitops
    from sync.run.reading import plan_all

    outcomes = plan_all(reading, targets)
    if sectioned(outcomes):
        show_plans(options.fmt, reading.fleet.name, outcomes, "read")
    else:  # without targets drift shows the plan alone (--fix says what it refuses)
        for o in outcomes:
            if o.value is not None:
                show_plan(o.value.plan, options.fmt)
    codes = {o.target: o.code for o in outcomes if o.value is None}
    if not options.fix and (drifted := [o for o in outcomes if o.value and not o.value.plan.empty]):
        where = "" if not sectioned(outcomes) else f" on {len(drifted)} target(s)"
        err(f"drift{where}: the proxy differs from fleet.yaml; apply (or drift --fix) converges it")
    if options.fix:
        outcomes = fix_all(reading, targets, outcomes, codes, options.fmt, signals)
    retired = EXIT_OK
    if options.github_issue:
        posted = each_github(outcomes, lambda value: gitops.report_drift(
            value.plan, os.environ, target=value.name))  # fmt: skip
        codes.update({name: code for name, code in posted.items() if code})
        retired = retire_old_issue(reading.fleet.name) if sectioned(outcomes) else EXIT_OK
    for outcome in outcomes:
        if outcome.value is not None and not outcome.value.plan.empty:
            codes.setdefault(outcome.target, EXIT_CHANGES)
    return signals.exit_code or worst([retired, *(codes.get(o.target, EXIT_OK) for o in outcomes)])


def retire_old_issue(fleet: str) -> int:
    """The drift issue of the fleet from before it had targets is closed (README "Several
    proxies"); a GitHub failure there is exit 1, the targets' issues already kept."""
    from sync.github.actions import GitHubError
    from sync.gitops import loops as gitops

    try:
        line = gitops.retire_drift_issue(fleet, os.environ)
    except GitHubError as exc:
        err(f"error: GitHub: {display.text(str(exc))}")
        return EXIT_ERROR
    if line:
        err(display.text(line))
    return EXIT_OK


def fix_all(
    reading: Reading, targets: Sequence[Target], outcomes: list[Outcome[TargetPlan]],
    codes: dict[str | None, int], fmt: str, signals: Signals,
) -> list[Outcome[TargetPlan]]:  # fmt: skip
    """drift --fix per target in promotion order: a target whose predecessors in this run did
    not end clean is held (no write). Returns the plans read after the fixes."""
    selected = {t.name for t in targets}
    after: list[Outcome[TargetPlan]] = []
    for outcome in outcomes:
        name, value = outcome.target, outcome.value
        if value is None or value.plan.empty or signals.signum is not None:
            codes.setdefault(name, EXIT_OK if signals.signum is None else EXIT_INCOMPLETE)
            after.append(outcome)
            continue
        if name is not None and (gate := hold(name, value.after, selected, named(codes))):
            err(f"[{name}] --fix {gate.message}; nothing was sent to it")
            codes[name] = HELD_CODE
            after.append(outcome)
            continue
        done = attempt(name, partial(fix_one, reading, value, fmt, signals))
        codes[name] = done.code if done.value is None else done.value[0]
        after.append(outcome if done.value is None else replace(outcome, value=done.value[1]))
    return after


def fix_one(
    reading: Reading, value: TargetPlan, fmt: str, signals: Signals
) -> tuple[int, TargetPlan]:
    """One target's fix; its plan read again after. With --format json the result goes to
    stderr, each line under the target's name: stdout holds the one JSON document."""
    from sync.core.ownership import Owner
    from sync.report.text import result_text

    if value.unsafe:
        fixed = display.text(" | ".join(value.unsafe))  # reasons quote the proxy's names
        fail(f"--fix refused: {fixed}", EXIT_REFUSED)
    client = reading.clients.of(value.endpoint)
    check_can_write(client)
    owner = Owner(value.fleet, reading.take_over)
    result = write_plan(value.plan, client, owner, CONCURRENCY, reading.settle_timeout, signals)
    if fmt == "json":
        for line in result_text(result).splitlines():
            err(f"{target_prefix()}{line}")
    else:
        out(result_text(result))
    if signals.signum is not None:  # interrupted: the account is printed, nothing more is read
        return EXIT_INCOMPLETE, value
    again = plan_target(reading, value.name, value.endpoint, value.after)
    if not result.complete:
        return EXIT_INCOMPLETE, again
    return (EXIT_OK if again.plan.empty else EXIT_CHANGES), again
