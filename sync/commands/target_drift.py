"""drift over fleet.yaml's targets: every target read at once, one section each; --fix heals
them in promotion order behind the same gate as apply; --github-issue keeps one drift issue
per fleet and target. A fleet without `targets:` never comes here."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import click

from sync.commands.common import (
    CONCURRENCY,
    EXIT_CHANGES,
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_REFUSED,
    Exit,
    check_can_write,
    connect,
    fail,
    run_apply,
    target_prefix,
)
from sync.commands.target_plans import (
    Reading,
    TargetPlan,
    each_github,
    plan_all,
    plan_target,
    show_sections,
)
from sync.commands.targets import Outcome, attempt
from sync.core.promotion import HELD_CODE, hold, worst
from sync.secrets import display

if TYPE_CHECKING:
    from sync.fleet.targets import Target


def run_drift(
    reading: Reading, targets: Sequence[Target], fmt: str, fix: bool, github_issue: bool
) -> None:
    """drift over targets; exit: the worst of the targets' (sync/core/promotion.py)."""
    from sync.gitops import loops as gitops

    outcomes = plan_all(reading, targets)
    show_sections(fmt, reading.fleet.name, outcomes, "read")
    codes = {o.target: o.code for o in outcomes if o.value is None}
    if fix:
        outcomes = fix_all(reading, targets, outcomes, codes, fmt)
    if github_issue:
        posted = each_github(
            outcomes, lambda value: gitops.report_drift(value.plan, os.environ, target=value.name)
        )
        codes.update({name: code for name, code in posted.items() if code})
    retired = retire_old_issue(reading.fleet.name) if github_issue else EXIT_OK
    for outcome in outcomes:
        if outcome.value is not None and not outcome.value.plan.empty:
            codes.setdefault(outcome.target, EXIT_CHANGES)
    code = worst([retired, *(codes.get(o.target, EXIT_OK) for o in outcomes)])
    if code != EXIT_OK:
        raise Exit(code)


def retire_old_issue(fleet: str) -> int:
    """The drift issue of the fleet from before it had targets is closed (README "Several
    proxies"); a GitHub failure there is exit 1, the targets' issues already kept."""
    from sync.github.actions import GitHubError
    from sync.gitops import loops as gitops

    try:
        line = gitops.retire_drift_issue(fleet, os.environ)
    except GitHubError as exc:
        click.echo(f"error: GitHub: {display.text(str(exc))}", err=True)
        return EXIT_ERROR
    if line:
        click.echo(display.text(line), err=True)
    return EXIT_OK


def fix_all(
    reading: Reading,
    targets: Sequence[Target],
    outcomes: list[Outcome[TargetPlan]],
    codes: dict[str, int],
    fmt: str,
) -> list[Outcome[TargetPlan]]:
    """drift --fix per target in promotion order: a target whose predecessors in this run did
    not end clean is held (no write). Returns the plans read after the fixes."""
    selected = {t.name for t in targets}
    after: list[Outcome[TargetPlan]] = []
    for target, outcome in zip(targets, outcomes, strict=True):
        value = outcome.value
        if value is None or value.plan.empty:
            codes.setdefault(target.name, EXIT_OK)
            after.append(outcome)
            continue
        gate = hold(target.name, target.after, selected, codes)
        if gate is not None:
            click.echo(f"[{target.name}] --fix {gate.message}; nothing was sent to it", err=True)
            codes[target.name] = HELD_CODE
            after.append(outcome)
            continue
        done = attempt(target.name, partial(fix_one, reading, target, value, fmt))
        codes[target.name] = done.code if done.value is None else done.value[0]
        after.append(outcome if done.value is None else replace(outcome, value=done.value[1]))
    return after


def fix_one(
    reading: Reading, target: Target, value: TargetPlan, fmt: str
) -> tuple[int, TargetPlan]:
    """One target's fix, as drift --fix does it without targets; its plan read again after.
    With --format json the result goes to stderr, each line under the target's name: stdout
    holds the one JSON document."""
    from sync.core.ownership import Owner
    from sync.report.text import result_text

    if value.unsafe:
        fixed = display.text(" | ".join(value.unsafe))  # reasons quote the proxy's names
        fail(f"--fix refused: {fixed}", EXIT_REFUSED)
    endpoint = value.endpoint
    with connect(
        endpoint.urls, endpoint.key, reading.timeout, True, endpoint.key_name, endpoint.url_name
    ) as client:
        check_can_write(client)
        owner = Owner(value.fleet, reading.take_over)
        result = run_apply(value.plan, client, owner, CONCURRENCY, reading.settle_timeout)
    if fmt == "json":
        for line in result_text(result).splitlines():
            click.echo(f"{target_prefix()}{line}", err=True)
    else:
        click.echo(result_text(result), nl=False)
    again = plan_target(reading, target, endpoint)
    if not result.complete:
        return EXIT_INCOMPLETE, again
    return (EXIT_OK if again.plan.empty else EXIT_CHANGES), again
