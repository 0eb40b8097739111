"""Plans, results and validation problems as terminal text, GitHub markdown and JSON.

Route names, ids, hosts, keys, reasons and details come from the proxy (or GitHub, a payload,
an upstream): they are shown by sync/secrets/display.py's rule. Text: every line is escaped whole
and starts with fleet-sync's own words. Markdown: such a string is only ever inside a code span or
a fenced block whose fence outruns its backticks.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sync.core.compare import ABSENT, UNREADABLE, FieldChange, shown
from sync.core.health import Verified
from sync.core.plan import Change, Conflict, Create, Plan, Update
from sync.fleet.problems import Problem
from sync.litellm.releases import LiteLLMRelease
from sync.report.health import (
    change_health,
    health_line,
    probe_summary,
    unhealthy_markdown,
    unhealthy_text,
    verify_markdown,
)
from sync.report.redaction import Hidden, desired_value, field_values, shaped, shown_path
from sync.secrets.display import cell, code, fence, text

if TYPE_CHECKING:  # validate prints problems through here; it needs no proxy client
    from sync.core.result import Result

SYMBOL = {"create": "+", "update": "~", "delete": "-"}
COLOUR = {"create": "\033[32m", "update": "\033[33m", "delete": "\033[31m"}
RESET, DIM = "\033[0m", "\033[2m"
IGNORED_SHOWN = 20  # a shared proxy can hold thousands of other fleets' routes
STATUS_ICON = {"done": "✅", "failed": "❌", "unconfirmed": "⚠️", "skipped": "⏭️"}
WITHHELD_ICON = "⏸️"


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def summary(plan: Plan) -> str:
    c, u, d = (len(plan.of(a)) for a in ("create", "update", "delete"))
    held = f", {len(plan.withheld)} withheld" if plan.withheld else ""
    return f"+{c} create, ~{u} update, -{d} prune{held}"


def litellm_label(plan: Plan, markdown: bool = False) -> str:
    if not plan.litellm_version:
        return "LiteLLM version unknown"
    return f"LiteLLM {code(plan.litellm_version) if markdown else plan.litellm_version}"


def _notes_markdown(plan: Plan) -> list[str]:
    """What the plan could not look at (fleet.yaml's history), where reviewers read."""
    return [f"> [!NOTE]\n> {text(note)}\n" for note in plan.notes]


def _untested_markdown(plan: Plan) -> list[str]:
    """A known version outside the tested range, said where reviewers read (never a refusal)."""
    release = LiteLLMRelease(plan.litellm_version)
    warning = release.warning() if plan.litellm_version else None
    return [f"> [!WARNING]\n> {code(warning)}\n"] if warning else []


def _value(v: Any) -> str:
    if isinstance(v, Hidden) or v in (ABSENT, UNREADABLE):
        return str(v)
    return json.dumps(v, ensure_ascii=False)


def _label(change: Change) -> str:
    host = f" host={change.host}" if change.host else ""
    return f"{change.model_name}{host} ({change.id})"


NOT_LISTED = "not listed by the router: LiteLLM stored this route but serves nothing from it"


def _field(d: FieldChange) -> str:
    before, after = field_values(d.path, d.before, d.after)
    via = " (checked through the digest)" if d.checked == "digest" else ""
    return f"{shown_path(d.path)}: {_value(before)} -> {_value(after)}{via}"


def _lines(change: Change) -> list[str]:
    """What a change shows, live values hidden by provenance (sync/report/redaction.py)."""
    if isinstance(change, Update):
        lines = [f"{NOT_LISTED}; sent again"] if not change.listed else []
        return lines + [_field(d) for d in change.diff]
    if isinstance(change, Create) and change.replaces:
        return [
            f"replaces {change.replaces} (created first, then it is deleted):",
            *(_field(d) for d in change.diff),
            *_leftovers(change),
        ]
    if isinstance(change, Create):
        params = desired_value(shown(change.route)["litellm_params"])
        return [f"litellm_params.{k}: {_value(v)}" for k, v in params.items()]
    note = f"reason: {change.reason}"
    if change.replaced_by:
        note += f"; replaced by {change.replaced_by}"
    address = change.route.api_base  # live: shown in an address's shape only
    shown_address = shaped("litellm_params.api_base", address) if address else address
    lines = [f"api_base: {_value(shown_address)}", note]
    return lines if change.listed else [*lines, NOT_LISTED]


def _leftovers(change: Create) -> list[str]:
    """What a replacement takes over from the route it replaces, and what it cannot: paths,
    never values."""
    out = []
    if change.carries:
        out.append(f"carries from {change.replaces}: {', '.join(change.carries)}")
    if change.drops:
        out.append(
            f"drops (listed on {change.replaces}, not set by fleet.yaml): {', '.join(change.drops)}"
        )
    if change.may_drop:
        out.append(
            "may drop (LiteLLM never lists them; fleet-sync did not write them on "
            f"{change.replaces}): " + ", ".join(change.may_drop)
        )
    return out


def _conflict(conflict: Conflict) -> str:
    held = conflict.held_by
    return (
        f"{conflict.desired.model_name} host={conflict.desired.host} ({conflict.id}): held by a "
        f"route of {held.model_name} this fleet does not own ({conflict.reason}); left alone, "
        "this host has no route"
    )


# -- plan: terminal ------------------------------------------------------------------------


def plan_text(plan: Plan, colour: bool = False, refusals: Sequence[str] = ()) -> str:
    # (colour, line): each line is escaped whole (a newline in a route name stays on its
    # line), then painted; every line starts with fleet-sync's own words.
    rows: list[tuple[str, str]] = [
        ("", f"fleet {plan.fleet}: {summary(plan)}  {plan.hash}  {litellm_label(plan)}")
    ]
    rows += [("", line) for line in [probe_summary(plan)] if line]
    if plan.empty:
        rows.append(("", "No changes. The proxy matches fleet.yaml."))
    for change in plan.changes:
        head = f"{SYMBOL[change.action]} {change.action} {_label(change)}"
        rows.append((COLOUR[change.action], head))
        rows += [("", f"    {line}") for line in _lines(change)]
        rows += [("", f"    {health_line(h)}") for h in [change_health(plan, change)] if h]
    if plan.withheld:
        rows.append(("", f"withheld by health: require, not applied ({len(plan.withheld)}):"))
        for w in plan.withheld:
            rows.append(("", f"! {w.change.action} {_label(w.change)}"))
            rows += [("", f"    {line}") for line in _lines(w.change)]
            rows.append(("", f"    withheld: {w.reason}"))
    rows += [("", line) for line in unhealthy_text(plan)]
    rows += [(COLOUR["delete"], f"! conflict {_conflict(c)}") for c in plan.conflicts]
    if plan.ignored:
        rows.append((DIM, f"ignored ({len(plan.ignored)}):"))
        listed = plan.ignored[:IGNORED_SHOWN]
        rows += [("", f"    route {i.route.model_name} ({i.route.id}): {i.reason}") for i in listed]
        if len(plan.ignored) > IGNORED_SHOWN:
            rest = len(plan.ignored) - IGNORED_SHOWN
            rows.append(("", f"    ... and {rest} more (--format json lists every one)"))
    rows += [("", f"REFUSED: {reason}") for reason in refusals]
    return "".join(
        f"{paint}{text(line)}{RESET}\n" if paint and colour else f"{text(line)}\n"
        for paint, line in rows
    )


# -- plan: markdown ------------------------------------------------------------------------


def plan_markdown(plan: Plan, title: str | None = None, refusals: Sequence[str] = ()) -> str:
    """`title` is markdown (its live parts in code spans); default: the plan's."""
    heading = title or f"fleet-sync plan for {code(plan.fleet)}"
    out = [f"### {heading}", "", f"**{summary(plan)}**", ""]
    out += [f"> [!CAUTION]\n> Refused without `--force`: {code(r)}\n" for r in refusals]
    out += _untested_markdown(plan) + _notes_markdown(plan)
    out += [f"<sub>{line}</sub>\n" for line in [probe_summary(plan)] if line]
    out += conflicts_markdown(plan)
    out += changes_markdown(plan.changes, plan)
    out += ["No changes. The proxy matches fleet.yaml.", ""] if plan.empty else []
    out += withheld_markdown(plan) + unhealthy_markdown(plan)
    out += ignored_markdown(plan)
    out.append(f"<sub>plan hash `{plan.hash}` · {litellm_label(plan, markdown=True)}</sub>")
    return "\n".join(out) + "\n"


def _conflict_markdown(conflict: Conflict) -> str:
    desired, held = conflict.desired, conflict.held_by
    return (
        f"{code(desired.model_name)} host {code(desired.host or '')} ({code(conflict.id)}): "
        f"held by a route of {code(held.model_name)} this fleet does not own "
        f"({code(conflict.reason)}); left alone, this host has no route"
    )


def conflicts_markdown(plan: Plan) -> list[str]:
    if not plan.conflicts:
        return []
    head = f"#### Conflicts ({len(plan.conflicts)}): ids held by routes this fleet does not own"
    return [head, "", *(f"- {_conflict_markdown(c)}" for c in plan.conflicts), ""]


def ignored_markdown(plan: Plan) -> list[str]:
    if not plan.ignored:
        return []
    head = (
        f"<details><summary>Ignored routes (not owned by this fleet): {len(plan.ignored)}</summary>"
    )
    items = [
        f"- {code(i.route.model_name)} {code(i.route.id)}: {code(i.reason)}" for i in plan.ignored
    ]
    return [head, "", *items, "", "</details>", ""]


def withheld_markdown(plan: Plan) -> list[str]:
    """Changes health: require holds back: their host does not serve the declared model."""
    if not plan.withheld:
        return []
    body = []
    for w in plan.withheld:
        c = w.change
        body.append(f"! {c.action} {c.model_name} {c.host or c.id} ({c.id})")
        body += [f"!     {line}" for line in _lines(c)]
        body.append(f"!     withheld: {w.reason}")
    return [
        f"#### {WITHHELD_ICON} Withheld: the host does not serve its model ({len(plan.withheld)})",
        "<sub>health: require: apply leaves these routes as they are and exits 4.</sub>",
        "",
        *fence(body, "diff"),
        "",
    ]


def changes_markdown(changes: Iterable[Change], plan: Plan | None = None) -> list[str]:
    """Changes grouped by model; each group folds when it is long. With the plan, each change
    shows its host's probe result (when the hosts were probed)."""
    groups: dict[str, list[Change]] = {}
    for change in changes:
        groups.setdefault(change.model_name, []).append(change)
    out: list[str] = []
    for model, items in groups.items():
        counts = ", ".join(
            f"{SYMBOL[a]}{n}"
            for a in ("create", "update", "delete")
            if (n := sum(1 for c in items if c.action == a))
        )
        lines = []
        for change in items:
            symbol = SYMBOL[change.action]
            lines.append(f"{symbol} {change.action} {change.host or change.id} ({change.id})")
            lines += [f"{symbol}     {line}" for line in _lines(change)]
            health = change_health(plan, change) if plan else None
            lines += [f"      {health_line(health, icon=True)}"] if health else []
        body = fence(lines, "diff")
        if len(body) > 20:
            # An HTML block: the name is escaped for HTML, not markdown.
            summary_ = f"<code>{html.escape(text(model))}</code> ({counts})"
            out += [f"<details><summary>{summary_}</summary>", "", *body, "", "</details>", ""]
        else:
            out += [f"#### {code(model)} ({counts})", "", *body, ""]
    return out


def pr_markdown(
    plan: Plan,
    this_pr: Sequence[Change],
    drift: Sequence[Change],
    base_note: str,
    refusals: Sequence[str] = (),
) -> str:
    """The pull-request view: what this PR changes apart from drift that is already live.
    `base_note` is markdown (its live parts in code spans)."""
    out = [f"### fleet-sync plan for {code(plan.fleet)}", "", f"**{summary(plan)}**", ""]
    out += [f"> [!CAUTION]\n> apply would refuse without `--force`: {code(r)}\n" for r in refusals]
    out += _untested_markdown(plan) + _notes_markdown(plan)
    out += [f"<sub>{line}</sub>\n" for line in [probe_summary(plan)] if line]
    out += conflicts_markdown(plan)
    out += withheld_markdown(plan)
    out += [f"#### This PR changes ({len(this_pr)})", f"<sub>{text(base_note)}</sub>", ""]
    out += changes_markdown(this_pr, plan) or ["Nothing: fleet.yaml changes no route.", ""]
    if drift:
        out += [
            f"#### Drift already live ({len(drift)})",
            "<sub>The proxy differs from fleet.yaml at the merge base too: apply on merge "
            "repairs these as well.</sub>",
            "",
        ]
        out += changes_markdown(drift, plan)
    out += unhealthy_markdown(plan)
    out += ignored_markdown(plan)
    out.append(f"<sub>plan hash `{plan.hash}` · {litellm_label(plan, markdown=True)}</sub>")
    return "\n".join(out) + "\n"


# -- apply result ------------------------------------------------------------------------


def result_text(result: Result) -> str:
    out = [
        f"fleet {result.plan.fleet}: {result.count('done')} done, {result.count('failed')} failed, "
        f"{result.count('unconfirmed')} unconfirmed, {result.count('skipped')} skipped"
        + (f", {len(result.plan.withheld)} withheld" if result.plan.withheld else "")
    ]
    for o in result.outcomes:
        out.append(f"  {o.status:<11} {o.change.action} {_label(o.change)}: {o.detail}")
    for w in result.plan.withheld:
        out.append(f"  {'withheld':<11} {w.change.action} {_label(w.change)}: {w.reason}")
    out += [f"  {'conflict':<11} {_conflict(c)}" for c in result.plan.conflicts]
    return "".join(f"{text(line)}\n" for line in out)


def result_markdown(result: Result, note: str = "", verified: Sequence[Verified] = ()) -> str:
    verdict = "applied" if result.complete else "**incomplete**"
    out = [f"### fleet-sync apply for {code(result.plan.fleet)}: {verdict}", ""]
    if note:
        out += [f"> [!NOTE]\n> {text(note)}", ""]
    out += [
        f"{result.count('done')} done, {result.count('failed')} failed, "
        f"{result.count('unconfirmed')} unconfirmed, {result.count('skipped')} skipped"
        + (f", {len(result.plan.withheld)} withheld" if result.plan.withheld else ""),
        "",
    ]
    rows = [
        (f"{STATUS_ICON[o.status]} {o.status}", o.change, o.detail) for o in result.outcomes
    ] + [(f"{WITHHELD_ICON} withheld", w.change, w.reason) for w in result.plan.withheld]
    if rows:
        out += ["| | change | model | host | detail |", "|---|---|---|---|---|"]
        for status, change, detail in rows:
            live = (change.model_name, change.host or "", detail)
            model, host, shown = (cell(code(v)) if v else "" for v in live)
            out.append(f"| {status} | {change.action} | {model} | {host} | {shown} |")
    out += verify_markdown(verified)
    out += ["", *conflicts_markdown(result.plan)] if result.plan.conflicts else []
    out += ["", f"<sub>plan hash `{result.plan.hash}`</sub>"]
    return "\n".join(out) + "\n"


def result_json(result: Result) -> dict[str, Any]:
    return {
        "version": 1,
        "fleet": result.plan.fleet,
        "hash": result.plan.hash,
        "litellm_version": result.plan.litellm_version,
        "complete": result.complete,
        "conflicts": [c.as_dict() for c in result.plan.conflicts],
        "outcomes": [
            {
                "action": o.change.action,
                "id": o.change.id,
                "model_name": o.change.model_name,
                "host": o.change.host,
                "status": o.status,
                "detail": o.detail,
                "lagging": list(o.lagging),
            }
            for o in result.outcomes
        ],
        "withheld": [
            {
                "action": w.change.action,
                "id": w.change.id,
                "model_name": w.change.model_name,
                "host": w.change.host,
                "reason": w.reason,
            }
            for w in result.plan.withheld
        ],
        "health": None if result.plan.health is None else [h.as_dict() for h in result.plan.health],
    }


# -- validation --------------------------------------------------------------------------


def problems_text(problems: Sequence[Problem]) -> str:
    return "".join(f"{text(str(p))}\n" for p in problems)


def problems_github(problems: Sequence[Problem]) -> str:
    """GitHub workflow commands: each problem becomes an annotation on its line."""

    def esc(text: str, prop: bool = False) -> str:
        text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return text.replace(":", "%3A").replace(",", "%2C") if prop else text

    return "".join(
        f"::error file={esc(p.file, True)},line={p.line},col={p.col}::{esc(p.message)}\n"
        for p in problems
    )
