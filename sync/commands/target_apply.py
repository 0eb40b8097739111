"""apply over fleet.yaml's targets: every target read at once, a saved plan checked for all of
them before the first write, then each applied in promotion order behind its gate
(sync/core/promotion.py): a target whose predecessors in this run did not converge is held,
sent no write at all. A fleet without `targets:` never comes here."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sync.commands.common import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_REFUSED,
    Exit,
    apply_verdict,
    check_can_write,
    connect,
    fail,
    on_github,
    run_apply,
    show_plan,
    target_prefix,
)
from sync.commands.target_plans import Reading, TargetPlan, plan_all, plan_target, show_sections
from sync.commands.targets import Outcome, attempt, header
from sync.core.promotion import HELD_CODE, hold, worst

if TYPE_CHECKING:
    from sync.commands.saved_plan import SavedTargets
    from sync.core.health import Verified
    from sync.core.result import Result
    from sync.fleet.targets import Target


@dataclass(frozen=True)
class ApplyOptions:
    fmt: str
    force: bool
    dry_run: bool
    concurrency: int
    spread_writes: bool
    verify: bool
    github_comment: bool


@dataclass(frozen=True)
class Applied:
    """One target's apply: its result, what verify found (None: not asked), its exit code."""

    result: Result
    verified: tuple[Verified, ...] | None
    code: int
    wrote: bool


def run_apply_targets(
    reading: Reading, targets: Sequence[Target], options: ApplyOptions, saved: Path | None
) -> None:
    from sync.commands.saved_plan import read_saved_targets

    reviewed = read_saved_targets(saved) if saved is not None else None  # before any proxy
    outcomes = plan_all(reading, targets)
    if reviewed is not None:
        refuse_stale(reviewed, outcomes)
    if options.dry_run:
        show_sections(options.fmt, reading.fleet.name, outcomes)
        raise_worst([o.code or dry_run_code(o, options.force) for o in outcomes])
        return  # a dry run writes nothing, whatever its exit
    codes: dict[str, int] = {}
    entries: list[dict[str, Any]] = []
    selected = {t.name for t in targets}
    wrote = False
    for target, outcome in zip(targets, outcomes, strict=True):
        if options.fmt != "json":
            click.echo(header(options.fmt, target.name), nl=False)
        gate = hold(target.name, target.after, selected, codes)
        if gate is not None:
            codes[target.name] = HELD_CODE
            say(options, f"target {target.name} {gate.message}; nothing was sent to it", True)
            entries.append({"target": target.name, "exit": HELD_CODE, "held": gate.message})
            if options.github_comment:
                attempt(target.name, partial(report_held, reading.fleet.name, target.name,
                                             gate.message))  # fmt: skip
            continue
        if outcome.value is None:
            codes[target.name] = outcome.code
            say(options, f"target {target.name} could not be planned (exit {outcome.code}): "
                f"{outcome.error}")  # fmt: skip
            entries.append({"target": target.name, "exit": outcome.code, "error": outcome.error})
            continue
        work = partial(apply_target, reading, target, outcome.value, options, reviewed, wrote)
        done = attempt(target.name, work)
        codes[target.name] = done.code if done.value is None else done.value.code
        # A target stopped part-way (exit 1 from an aborted apply) may have written too.
        wrote = wrote or (done.value.wrote if done.value is not None else done.code != EXIT_REFUSED)
        entries.append(entry(target.name, done))
    if options.fmt == "json":
        from sync.report.json_format import to_json

        complete = all(code == EXIT_OK for code in codes.values())
        document = {"version": 1, "fleet": reading.fleet.name, "complete": complete}
        click.echo(to_json({**document, "targets": entries}), nl=False)
    raise_worst(codes.values())


def raise_worst(codes: Any) -> None:
    code = worst(codes)
    if code != EXIT_OK:
        raise Exit(code)


def dry_run_code(outcome: Outcome[TargetPlan], force: bool) -> int:
    """apply --dry-run exits as apply would: 3 for a target apply would refuse."""
    value = outcome.value
    if value is None or not value.unsafe or force:
        return EXIT_OK
    click.echo(f"[{outcome.target}] error: refused: {' | '.join(value.unsafe)}", err=True)
    return EXIT_REFUSED


def refuse_stale(reviewed: SavedTargets, outcomes: Sequence[Outcome[TargetPlan]]) -> None:
    """apply --plan: every target read must still plan what was reviewed, else nothing is
    written anywhere (exit 3, each stale or missing target named)."""
    from sync.commands.saved_plan import check_saved_target

    checks = [
        attempt(o.target, partial(check_saved_target, reviewed, o.target, o.value.plan))
        for o in outcomes
        if o.value is not None
    ]
    refused = [c for c in checks if c.code != EXIT_OK]
    if refused:
        fail(f"{reviewed.path}: {len(refused)} target(s) moved since the plan was saved; "
             "nothing was applied to any target", EXIT_REFUSED)  # fmt: skip


def say(options: ApplyOptions, line: str, log: bool = False) -> None:
    """A line of a target's section (text and markdown); with `log` on stderr too, where no
    error line said it already."""
    if options.fmt != "json":
        click.echo(line)
    if log:
        click.echo(line, err=True)


def entry(name: str, done: Outcome[Applied]) -> dict[str, Any]:
    """A target's part of apply's JSON result: today's result document with its `target`."""
    from sync.report.json_format import result_json

    if done.value is None:
        return {"target": name, "exit": done.code, "error": done.error}
    body = {"target": name, "exit": done.value.code, **result_json(done.value.result)}
    if done.value.verified is not None:
        body["verify"] = [v.as_dict() for v in done.value.verified]
    return body


def apply_target(
    reading: Reading,
    target: Target,
    planned: TargetPlan,
    options: ApplyOptions,
    reviewed: SavedTargets | None,
    reread: bool,
) -> Applied:
    """One target's apply, as apply does it without targets. Read again when an earlier target
    of this run wrote (its plan may be minutes old); a saved plan is checked again then."""
    from sync.commands.health_options import verify_result
    from sync.commands.saved_plan import check_saved_target
    from sync.core.ownership import Owner
    from sync.core.result import Result
    from sync.report.formats import format_named

    if reread:
        planned = plan_target(reading, target, planned.endpoint)
        if reviewed is not None:
            check_saved_target(reviewed, target.name, planned.plan)
    the_plan, fmt = planned.plan, options.fmt
    verdict = apply_verdict(
        the_plan, planned.fleet, options.force, options.github_comment, target.name
    )
    if verdict.refused:
        if fmt != "json":
            show_plan(the_plan, fmt, verdict.refused)
        fail("refused: " + " | ".join(verdict.refused), EXIT_REFUSED)
    endpoint = planned.endpoint
    with connect(
        endpoint.urls,
        endpoint.key,
        reading.timeout,
        options.spread_writes,
        endpoint.key_name,
        endpoint.url_name,
    ) as client:
        if the_plan.empty:
            result = Result(the_plan, ())
        else:
            check_can_write(client)
            if format_named(fmt).plan_before_apply:
                show_plan(the_plan, fmt)
            owner = Owner(planned.fleet, reading.take_over)
            result = run_apply(the_plan, client, owner, options.concurrency, reading.settle_timeout)
    verified = (
        verify_result(result, planned.fleet, client.write_url, endpoint.key, reading.timeout)
        if options.verify
        else None
    )
    if fmt != "json":
        shown = format_named(fmt).show_result(result, verified, client.write_url)
        click.echo(shown, nl=False)
    if options.github_comment:
        from sync.gitops import loops as gitops

        on_github(
            lambda: gitops.comment_result(
                result, os.environ, verified or (), target=target.name, forced=verdict
            )
        )
    if the_plan.conflicts:
        click.echo(
            f"{target_prefix()}error: {len(the_plan.conflicts)} host(s) have no route: their ids "
            "are held by routes this fleet does not own (left alone; see the plan's conflicts)",
            err=True,
        )
    ok = result.complete and all(v.ok for v in verified or ())
    return Applied(result, verified, EXIT_OK if ok else EXIT_INCOMPLETE, not the_plan.empty)


def report_held(fleet: str, name: str, why: str) -> None:
    from sync.gitops import loops as gitops

    on_github(lambda: gitops.report_held(fleet, name, why, os.environ))
