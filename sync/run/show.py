"""How a run's plans are shown: without targets the one plan as ever; with them one section per
target in promotion order (text, markdown), or one JSON document with a plan per target."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sync.run.console import out

if TYPE_CHECKING:
    from sync.core.plan import Plan
    from sync.run.outcome import Outcome
    from sync.run.reading import TargetPlan


def colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def show_plan(plan: Plan, fmt: str, unsafe: Sequence[str] = ()) -> None:
    from sync.report.formats import format_named

    out(format_named(fmt).show_plan(plan, tuple(unsafe), colour()))


def header(fmt: str, name: str | None) -> str:
    """The line that opens a target's section of text or markdown output."""
    if fmt == "markdown":
        return f"## Target `{name}`\n\n"
    return f"=== target {name} ===\n"


def sectioned(outcomes: Sequence[Outcome[TargetPlan]]) -> bool:
    """Whether a run's output is one section per target (fleet.yaml declares targets:)."""
    return any(o.target is not None for o in outcomes)


def show_plans(fmt: str, fleet: str, outcomes: Sequence[Outcome[TargetPlan]],
               verb: str = "planned") -> None:  # fmt: skip
    """Every target's plan with what apply would refuse: the one plan, or one section each
    (a target that could not be planned says so in its section)."""
    if not sectioned(outcomes):
        for outcome in outcomes:
            if outcome.value is not None:
                show_plan(outcome.value.plan, fmt, outcome.value.unsafe)
        return
    if fmt == "json":
        from sync.report.json_format import to_json

        out(to_json(plans_document(fleet, outcomes, True)))
        return
    for outcome in outcomes:
        out(header(fmt, outcome.target))
        if outcome.value is None:
            out(f"target {outcome.target} could not be {verb} (exit {outcome.code}): "
                f"{outcome.error}\n")  # fmt: skip
        else:
            show_plan(outcome.value.plan, fmt, outcome.value.unsafe)


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


def saved_document(fleet: str, outcomes: Sequence[Outcome[TargetPlan]]) -> str | None:
    """What plan --out saves: the one plan, or every target's (None: nothing was planned)."""
    from sync.report.json_format import to_json
    from sync.report.redaction import plan_json

    if sectioned(outcomes):
        return to_json(plans_document(fleet, outcomes, False))
    plans = [o.value.plan for o in outcomes if o.value is not None]
    return to_json(plan_json(plans[0])) if plans else None
