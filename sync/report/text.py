"""The terminal format: a plan, an apply result and validation problems as text lines.

Every line is escaped whole (sync/secrets/display.py: a newline in a route name stays on its
line) and starts with fleet-sync's own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sync.core.plan import Plan
from sync.fleet.problems import Problem
from sync.report.common import (
    SYMBOL,
    change_label,
    change_lines,
    conflict_line,
    litellm_label,
    no_changes,
    outcome_counts,
    summary,
    verb,
)
from sync.report.health import (
    change_health,
    health_line,
    probe_summary,
    unhealthy_text,
    verify_text,
)
from sync.report.references import references_text
from sync.secrets.display import text

if TYPE_CHECKING:  # validate prints problems through here; it needs no proxy client
    from sync.core.health import Verified
    from sync.core.result import Result

COLOUR = {"create": "\033[32m", "update": "\033[33m", "delete": "\033[31m"}
RESET, DIM = "\033[0m", "\033[2m"
IGNORED_SHOWN = 20  # a shared proxy can hold thousands of other fleets' routes


def plan_text(plan: Plan, colour: bool = False, refusals: Sequence[str] = ()) -> str:
    # (colour, line): each line is escaped whole, then painted.
    rows: list[tuple[str, str]] = [
        ("", f"fleet {plan.fleet}: {summary(plan)}  {plan.hash}  {litellm_label(plan)}")
    ]
    rows += [("", line) for line in [probe_summary(plan)] if line]
    if plan.empty:
        rows.append(("", no_changes()))
    for change in plan.changes:
        head = f"{SYMBOL[change.action]} {verb(change)} {change_label(change)}"
        rows.append((COLOUR[change.action], head))
        rows += [("", f"    {line}") for line in change_lines(change)]
        rows += [("", f"    {health_line(h)}") for h in [change_health(plan, change)] if h]
    if plan.withheld:
        rows.append(("", f"withheld by health: require, not applied ({len(plan.withheld)}):"))
        for w in plan.withheld:
            rows.append(("", f"! {verb(w.change)} {change_label(w.change)}"))
            rows += [("", f"    {line}") for line in change_lines(w.change)]
            rows.append(("", f"    withheld: {w.reason}"))
    rows += [("", line) for line in unhealthy_text(plan)]
    rows += [(COLOUR["delete"], f"! conflict {conflict_line(c)}") for c in plan.conflicts]
    rows += [("", line) for line in references_text(plan)]
    rows += _ignored(plan)
    rows += [("", f"REFUSED: {reason}") for reason in refusals]
    return "".join(
        f"{paint}{text(line)}{RESET}\n" if paint and colour else f"{text(line)}\n"
        for paint, line in rows
    )


def _ignored(plan: Plan) -> list[tuple[str, str]]:
    if not plan.ignored:
        return []
    rows = [(DIM, f"ignored ({len(plan.ignored)}):")]
    listed = plan.ignored[:IGNORED_SHOWN]
    rows += [("", f"    route {i.route.model_name} ({i.route.id}): {i.reason}") for i in listed]
    if len(plan.ignored) > IGNORED_SHOWN:
        rest = len(plan.ignored) - IGNORED_SHOWN
        rows.append(("", f"    ... and {rest} more (--format json lists every one)"))
    return rows


def result_text(result: Result) -> str:
    out = [f"fleet {result.plan.fleet}: {outcome_counts(result)}"]
    for o in result.outcomes:
        out.append(f"  {o.status:<11} {verb(o.change)} {change_label(o.change)}: {o.detail}")
    for w in result.plan.withheld:
        out.append(f"  {'withheld':<11} {w.change.action} {change_label(w.change)}: {w.reason}")
    out += [f"  {'conflict':<11} {conflict_line(c)}" for c in result.plan.conflicts]
    return "".join(f"{text(line)}\n" for line in out)


def apply_text(result: Result, verified: Sequence[Verified] | None, proxy_url: str) -> str:
    """What apply prints after its plan: the result (one sentence when there was nothing to
    do), then what the proxy answered when asked (`verified` None: not asked)."""
    plan = result.plan
    out = f"{no_changes(plan.fleet)}\n" if plan.empty else result_text(result)
    return out + ("" if verified is None else verify_text(verified, proxy_url))


def problems_text(problems: Sequence[Problem], valid: Sequence[str] = ()) -> str:
    """Each problem, then a line for each file that is valid."""
    return "".join(f"{text(str(p))}\n" for p in problems) + "".join(f"{line}\n" for line in valid)
