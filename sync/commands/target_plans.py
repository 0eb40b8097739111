"""Plans of several targets (fleet.yaml's `targets:`): each target's projected fleet read from
its own proxy, concurrently, and shown one section per target in promotion order; `plan` and
`drift` over targets. A fleet without `targets:` never comes here."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sync.commands.common import (
    EXIT_OK,
    Exit,
    bound,
    connect,
    on_github,
    plan_code,
    read_live,
    show_plan,
    with_source,
)
from sync.commands.health_options import gate_plan
from sync.commands.targets import Outcome, Overrides, attempt, each, endpoints, header
from sync.core.promotion import worst
from sync.core.verdict import Verdict
from sync.live.state import CONFIRM_TIMEOUT

if TYPE_CHECKING:
    from sync.commands.targets import Endpoint
    from sync.core.keytrust import TrustedRef
    from sync.core.plan import Plan
    from sync.fleet.model import Fleet
    from sync.fleet.targets import Target
    from sync.live.state import LiveState


@dataclass(frozen=True)
class Health:
    probe: bool = False
    require: bool = False
    timeout: float = 5.0


@dataclass(frozen=True)
class Reading:
    """How each target is read: the same for every target of one run."""

    fleet: Fleet  # the whole fleet, its source resolved
    fleet_file: Path
    write: bool  # the write key (apply, drift --fix) or the read key
    override: Overrides
    timeout: float
    take_over: bool
    health: Health
    ref: TrustedRef  # the ref the run trusts: each target's endpoint and its hosts' keys
    settle_timeout: float = CONFIRM_TIMEOUT


@dataclass(frozen=True)
class TargetPlan:
    name: str
    fleet: Fleet  # the fleet this target sees (for_target)
    endpoint: Endpoint
    live: LiveState
    plan: Plan
    unsafe: tuple[str, ...]


def plan_target(reading: Reading, target: Target, endpoint: Endpoint) -> TargetPlan:
    """One target's plan: its projected fleet against its own proxy's live state, and what
    apply would refuse in it (apply's own verdict)."""
    from sync.core.verdict import decide
    from sync.fleet.targets import for_target

    fleet = for_target(reading.fleet, target.name)
    with connect(
        endpoint.urls, endpoint.key, reading.timeout, True, endpoint.key_name, endpoint.url_name
    ) as client:
        live = read_live(
            client, fleet, reading.take_over, reading.settle_timeout, reading.fleet_file
        )
    health = reading.health
    plan = gate_plan(
        fleet, live.plan(fleet, reading.take_over), health.probe, health.require,
        health.timeout, lambda: reading.ref.key_trust(target.name),
    )  # fmt: skip
    plan = bound(plan, fleet, endpoint.urls, target.name, target.after)
    unsafe = decide(plan, fleet.max_prune_percent).refused
    return TargetPlan(target.name, fleet, endpoint, live, plan, unsafe)


def plan_all(reading: Reading, targets: Sequence[Target]) -> list[Outcome[TargetPlan]]:
    """Every target's plan: all endpoints resolved first (two on one proxy stop the run before
    any request), then the targets read at once."""
    resolved = endpoints(targets, reading.ref, reading.write, reading.override)
    ready = {o.target: o.value for o in resolved if o.value is not None}
    planned = iter(
        each(
            [t for t in targets if t.name in ready],
            lambda target: plan_target(reading, target, ready[target.name]),
        )
    )
    return [
        next(planned) if o.value is not None else Outcome(o.target, None, o.code, o.error)
        for o in resolved
    ]


def base_for(base: Fleet, name: str) -> Fleet:
    """What a target wanted at the pull request's base: its projection when the base declares
    it; the whole fleet when the base had no targets (every model went everywhere); nothing
    when the base declares targets but not this one (it is new in this pull request)."""
    from sync.fleet.targets import for_target

    if any(t.name == name for t in base.targets):
        return for_target(base, name)
    return base if not base.targets else replace(base, models=())


def plans_document(
    fleet: str, outcomes: Sequence[Outcome[TargetPlan]], with_refusals: bool
) -> dict[str, Any]:
    """The JSON of a run over targets: one plan per target, each with its `target` name and
    its own hash (and `refused` as printed); a target that could not be planned is its
    `error` and `exit` code. `plan --out` saves it without `refused`; apply --plan reads it."""
    from sync.report.redaction import plan_json

    entries: list[dict[str, Any]] = []
    for outcome in outcomes:
        if outcome.value is None:
            entries.append({"target": outcome.target, "error": outcome.error, "exit": outcome.code})
            continue
        entry = {"target": outcome.target, **plan_json(outcome.value.plan)}
        if with_refusals:
            entry["refused"] = list(outcome.value.unsafe)
        entries.append(entry)
    return {"version": 1, "fleet": fleet, "targets": entries}


def show_sections(
    fmt: str, fleet: str, outcomes: Sequence[Outcome[TargetPlan]], verb: str = "planned"
) -> None:
    """Every target's plan, in promotion order: one section each, or one JSON document."""
    if fmt == "json":
        from sync.report.json_format import to_json

        click.echo(to_json(plans_document(fleet, outcomes, True)), nl=False)
        return
    for outcome in outcomes:
        click.echo(header(fmt, outcome.target), nl=False)
        if outcome.value is None:
            click.echo(
                f"target {outcome.target} could not be {verb} (exit {outcome.code}): "
                f"{outcome.error}"
            )
        else:
            show_plan(outcome.value.plan, fmt, outcome.value.unsafe)


def each_github(
    outcomes: Sequence[Outcome[TargetPlan]], call: Callable[[TargetPlan], str]
) -> dict[str, int]:
    """A GitHub step per planned target (its own comment or issue); a failure is exit 1 for
    that target, the others still posted."""
    codes: dict[str, int] = {}
    for outcome in outcomes:
        value = outcome.value
        if value is not None:
            done = attempt(outcome.target, partial(on_github, partial(call, value)))
            codes[outcome.target] = done.code
    return codes


def run_plan(
    reading: Reading,
    targets: Sequence[Target],
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    github_comment: bool,
    base_ref: str | None,
) -> None:
    """plan over targets; exit: the worst of the targets' (sync/core/promotion.py)."""
    from sync.gitops import loops as gitops
    from sync.report.json_format import to_json
    from sync.secrets import scrub

    outcomes = plan_all(reading, targets)
    show_sections(fmt, reading.fleet.name, outcomes)
    if out:
        scrub.write_text(out, to_json(plans_document(reading.fleet.name, outcomes, False)))
    fleet_file = reading.fleet_file

    def comment(value: TargetPlan) -> str:
        def base_plan(base: Fleet) -> Plan:
            projected = with_source(base_for(base, value.name), fleet_file, os.environ)
            return value.live.plan(projected, reading.take_over)

        line, verdicts[value.name] = gitops.comment_reviewed_plan(
            fleet_file, value.plan, base_plan, value.unsafe, base_ref, os.environ,
            target=value.name,
        )  # fmt: skip
        return line

    verdicts: dict[str, Verdict] = {}

    posted = each_github(outcomes, comment) if github_comment else {}
    code = worst(
        o.code or posted.get(o.target, EXIT_OK) or target_code(o.value, verdicts, detailed_exitcode)
        for o in outcomes
    )
    if code != EXIT_OK:
        raise Exit(code)


def target_code(
    value: TargetPlan | None, verdicts: dict[str, Verdict], detailed_exitcode: bool
) -> int:
    """A target's plan exit: 3 when apply would refuse it (under its reviewed force, when the
    comment read one), 2 for changes with --detailed-exitcode, else 0."""
    if value is None:
        return EXIT_OK
    verdict = verdicts.get(value.name) or Verdict(value.unsafe)
    return plan_code(verdict, not value.plan.empty, detailed_exitcode)
