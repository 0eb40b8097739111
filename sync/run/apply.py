"""apply over a run's targets (a fleet without targets: is one implicit target): every target
read at once, a saved plan checked for all of them before the first write, then each applied in
promotion order behind its gate (sync/core/promotion.py): a target whose predecessors in this
run did not converge is held, sent no write at all. An interrupt (sync/run/interrupt.py) settles
the target being written and starts no other."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sync.core.promotion import HELD_CODE, hold, worst
from sync.run.console import EXIT_INCOMPLETE, EXIT_OK, EXIT_REFUSED, err, fail, out, tell
from sync.run.endpoint import check_can_write
from sync.run.github import on_github
from sync.run.interrupt import Interrupted
from sync.run.outcome import Outcome, attempt, named
from sync.run.reading import Reading, TargetPlan, plan_all, plan_target
from sync.run.saved import Reviewed, check_reviewed, read_reviewed, refuse_stale
from sync.run.show import header, sectioned, show_plan, show_plans
from sync.run.verdicts import apply_verdict
from sync.run.writes import write_plan

if TYPE_CHECKING:
    from sync.core.health import Verified
    from sync.core.result import Result
    from sync.fleet.targets import Target
    from sync.run.interrupt import Signals


@dataclass(frozen=True)
class ApplyOptions:
    fmt: str
    force: bool
    dry_run: bool
    concurrency: int
    verify: bool
    github_comment: bool
    saved: Path | None = None


@dataclass(frozen=True)
class Applied:
    """One target's apply: its result, what verify found (None: not asked), its exit code."""

    result: Result
    verified: tuple[Verified, ...] | None
    code: int
    wrote: bool


@dataclass
class _Run:
    """What the targets applied so far in this run leave for the next."""

    codes: dict[str | None, int]
    entries: list[dict[str, Any]]
    wrote: bool = False


def run_apply(
    reading: Reading, targets: Sequence[Target], options: ApplyOptions, signals: Signals
) -> int:
    reviewed = read_reviewed(options.saved, bool(targets)) if options.saved else None
    outcomes = plan_all(reading, targets)  # the saved plan is read before any proxy is asked
    if reviewed is not None:
        refuse_stale(reviewed, outcomes)
    if options.dry_run:
        return dry_run(reading, outcomes, options)
    run = _Run({}, [])
    selected = {t.name for t in targets}
    after = {t.name: t.after for t in targets}
    for outcome in outcomes:
        name = outcome.target
        if name is not None and options.fmt != "json":
            out(header(options.fmt, name))
        if name is not None and signals.signum is not None:  # a later target of the run
            _not_started(run, name, options)
            continue
        if name is not None and (gate := hold(name, after[name], selected, named(run.codes))):
            _held(reading, run, name, gate.message, options)
            continue
        if outcome.value is None:
            _unplanned(run, outcome, options)
            continue
        work = partial(apply_target, reading, outcome.value, options, reviewed, run.wrote, signals)
        try:
            done = attempt(name, work)
        except Interrupted:  # while this later target was read: it and the rest not started
            if name is None or not signals.wrote:
                raise
            _not_started(run, name, options)
            continue
        run.codes[name] = done.code if done.value is None else done.value.code
        # A target stopped part-way (exit 1 from an aborted apply) may have written too.
        run.wrote = run.wrote or (
            done.value.wrote if done.value is not None else done.code != EXIT_REFUSED
        )
        run.entries.append(_entry(name, done))
    if options.fmt == "json" and sectioned(outcomes):
        from sync.report.json_format import to_json

        complete = all(code == EXIT_OK for code in run.codes.values())
        document = {"version": 1, "fleet": reading.fleet.name, "complete": complete}
        out(to_json({**document, "targets": run.entries}))
    return signals.exit_code or worst(run.codes.values())


def dry_run(
    reading: Reading, outcomes: Sequence[Outcome[TargetPlan]], options: ApplyOptions
) -> int:
    """apply --dry-run: the plans as apply would take them, nothing written; exit 3 for a
    target apply would refuse."""
    if not sectioned(outcomes):
        return worst(o.code or _dry_run_one(o.value, options) for o in outcomes)
    show_plans(options.fmt, reading.fleet.name, outcomes)
    return worst(o.code or _dry_run_code(o, options.force) for o in outcomes)


def _dry_run_one(value: TargetPlan | None, options: ApplyOptions) -> int:
    """Without targets the dry run takes apply's whole verdict, the reviewed force included."""
    if value is None:
        return EXIT_OK
    verdict = apply_verdict(value.plan, value.fleet, options.force, options.github_comment)
    show_plan(value.plan, options.fmt, verdict.refused)
    if verdict.refused:
        return attempt(None, lambda: fail("refused: " + " | ".join(verdict.refused),
                                          EXIT_REFUSED)).code  # fmt: skip
    return EXIT_OK


def _dry_run_code(outcome: Outcome[TargetPlan], force: bool) -> int:
    value = outcome.value
    if value is None or not value.unsafe or force:
        return EXIT_OK
    err(f"[{outcome.target}] error: refused: {' | '.join(value.unsafe)}")
    return EXIT_REFUSED


def _say(options: ApplyOptions, line: str, log: bool = False) -> None:
    """A line of a target's section (text and markdown); with `log` on stderr too, where no
    error line said it already."""
    if options.fmt != "json":
        out(line + "\n")
    if log:
        err(line)


def _not_started(run: _Run, name: str, options: ApplyOptions) -> None:
    why = "not started: the run was interrupted"
    run.codes[name] = EXIT_INCOMPLETE
    _say(options, f"target {name} {why}; nothing was sent to it", True)
    run.entries.append({"target": name, "exit": EXIT_INCOMPLETE, "error": why})


def _held(reading: Reading, run: _Run, name: str, why: str, options: ApplyOptions) -> None:
    from sync.gitops import loops as gitops

    run.codes[name] = HELD_CODE
    _say(options, f"target {name} {why}; nothing was sent to it", True)
    run.entries.append({"target": name, "exit": HELD_CODE, "held": why})
    if options.github_comment:
        report = partial(gitops.report_held, reading.fleet.name, name, why, os.environ)
        attempt(name, partial(on_github, report))


def _unplanned(run: _Run, outcome: Outcome[TargetPlan], options: ApplyOptions) -> None:
    run.codes[outcome.target] = outcome.code
    if outcome.target is not None:
        _say(options, f"target {outcome.target} could not be planned (exit {outcome.code}): "
             f"{outcome.error}")  # fmt: skip
    run.entries.append({"target": outcome.target, "exit": outcome.code, "error": outcome.error})


def _entry(name: str | None, done: Outcome[Applied]) -> dict[str, Any]:
    """A target's part of apply's JSON result: today's result document with its `target`."""
    from sync.report.json_format import result_json

    if done.value is None:
        return {"target": name, "exit": done.code, "error": done.error}
    body = {"target": name, "exit": done.value.code, **result_json(done.value.result)}
    if done.value.verified is not None:
        body["verify"] = [v.as_dict() for v in done.value.verified]
    return body


def apply_target(
    reading: Reading, planned: TargetPlan, options: ApplyOptions, reviewed: Reviewed | None,
    reread: bool, signals: Signals,
) -> Applied:  # fmt: skip
    """One target's apply. Read again when an earlier target of this run wrote (its plan may
    be minutes old); a saved plan is checked again then."""
    from sync.core.ownership import Owner
    from sync.core.result import Result
    from sync.report.formats import format_named

    if reread:
        with signals.reads():
            planned = plan_target(reading, planned.name, planned.endpoint, planned.after)
        if reviewed is not None:
            check_reviewed(reviewed, planned.name, planned.plan)
    the_plan, fmt, name = planned.plan, options.fmt, planned.name
    shown = name is None or fmt != "json"  # with targets, JSON is one document at the end
    verdict = apply_verdict(the_plan, planned.fleet, options.force, options.github_comment, name)
    if verdict.refused:
        if shown:
            show_plan(the_plan, fmt, verdict.refused)
        fail("refused: " + " | ".join(verdict.refused), EXIT_REFUSED)
    client = reading.clients.of(planned.endpoint)
    if the_plan.empty:
        result = Result(the_plan, ())
    else:
        check_can_write(client)
        if format_named(fmt).plan_before_apply:
            show_plan(the_plan, fmt)
        owner = Owner(planned.fleet, reading.take_over)
        result = write_plan(the_plan, client, owner, options.concurrency, reading.settle_timeout,
                            signals)  # fmt: skip
    verified = _verified(reading, planned, result, options)
    if shown:
        out(format_named(fmt).show_result(result, verified, client.write_url))
    if options.github_comment:
        from sync.gitops import loops as gitops

        on_github(lambda: gitops.comment_result(
            result, os.environ, verified or (), target=name, forced=verdict))  # fmt: skip
    if the_plan.conflicts:
        tell(f"error: {len(the_plan.conflicts)} host(s) have no route: their ids are held by "
             "routes this fleet does not own (left alone; see the plan's conflicts)")  # fmt: skip
    ok = result.complete and all(v.ok for v in verified or ())
    return Applied(result, verified, EXIT_OK if ok else EXIT_INCOMPLETE, not the_plan.empty)


def _verified(
    reading: Reading, planned: TargetPlan, result: Result, options: ApplyOptions
) -> tuple[Verified, ...] | None:
    from sync.run.verify import verify_result

    if not options.verify:
        return None
    url = reading.clients.of(planned.endpoint).write_url
    return verify_result(result, planned.fleet, url, planned.endpoint.key, reading.clients.timeout)
