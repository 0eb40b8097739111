"""Plans, results and validation problems as terminal text, GitHub markdown and JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .compare import ABSENT, UNREADABLE, FieldChange, shown
from .health import Verified
from .plan import Change, Conflict, Create, Plan, Update
from .problems import Problem
from .redaction import Hidden, desired_value, field_values, shaped, shown_path
from .report_health import (
    change_health,
    code_safe,
    health_line,
    probe_summary,
    unhealthy_markdown,
    unhealthy_text,
    verify_markdown,
)
from .versions import LiteLLMRelease

if TYPE_CHECKING:  # validate prints problems through here; it needs no proxy client
    from .apply import Result

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


def litellm_label(plan: Plan) -> str:
    return f"LiteLLM {plan.litellm_version}" if plan.litellm_version else "LiteLLM version unknown"


def _notes_markdown(plan: Plan) -> list[str]:
    """What the plan could not look at (fleet.yaml's history), where reviewers read."""
    return [f"> [!NOTE]\n> {note}\n" for note in plan.notes]


def _untested_markdown(plan: Plan) -> list[str]:
    """A known version outside the tested range, said where reviewers read (never a refusal)."""
    release = LiteLLMRelease(plan.litellm_version)
    warning = release.warning() if plan.litellm_version else None
    return [f"> [!WARNING]\n> {warning}\n"] if warning else []


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
    """What a change shows, live values hidden by provenance (sync/redaction.py)."""
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
        return [f"{k}: {_value(v)}" for k, v in params.items()]
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
    def paint(action: str, text: str) -> str:
        return f"{COLOUR[action]}{text}{RESET}" if colour else text

    out = [f"fleet {plan.fleet}: {summary(plan)}  {plan.hash}  {litellm_label(plan)}"]
    out += [line for line in [probe_summary(plan)] if line]
    if plan.empty:
        out.append("No changes. The proxy matches fleet.yaml.")
    for change in plan.changes:
        out.append(
            paint(change.action, f"{SYMBOL[change.action]} {change.action} {_label(change)}")
        )
        out += [f"    {line}" for line in _lines(change)]
        out += [f"    {health_line(h)}" for h in [change_health(plan, change)] if h]
    if plan.withheld:
        out.append(f"withheld by health: require, not applied ({len(plan.withheld)}):")
        for w in plan.withheld:
            out.append(f"! {w.change.action} {_label(w.change)}")
            out += [f"    {line}" for line in _lines(w.change)]
            out.append(f"    withheld: {w.reason}")
    out += unhealthy_text(plan)
    out += [paint("delete", f"! conflict {_conflict(c)}") for c in plan.conflicts]
    if plan.ignored:
        out.append(
            f"{DIM if colour else ''}ignored ({len(plan.ignored)}):{RESET if colour else ''}"
        )
        listed = plan.ignored[:IGNORED_SHOWN]
        out += [f"    {i.route.model_name} ({i.route.id}): {i.reason}" for i in listed]
        if len(plan.ignored) > IGNORED_SHOWN:
            rest = len(plan.ignored) - IGNORED_SHOWN
            out.append(f"    ... and {rest} more (--format json lists every one)")
    out += [f"REFUSED: {reason}" for reason in refusals]
    return "\n".join(out) + "\n"


# -- plan: markdown ------------------------------------------------------------------------


def plan_markdown(plan: Plan, title: str | None = None, refusals: Sequence[str] = ()) -> str:
    out = [f"### {title or f'fleet-sync plan for `{plan.fleet}`'}", "", f"**{summary(plan)}**", ""]
    out += [f"> [!CAUTION]\n> Refused without `--force`: {r}\n" for r in refusals]
    out += _untested_markdown(plan) + _notes_markdown(plan)
    out += [f"<sub>{line}</sub>\n" for line in [probe_summary(plan)] if line]
    out += conflicts_markdown(plan)
    out += changes_markdown(plan.changes, plan)
    out += ["No changes. The proxy matches fleet.yaml.", ""] if plan.empty else []
    out += withheld_markdown(plan) + unhealthy_markdown(plan)
    out += ignored_markdown(plan)
    out.append(f"<sub>plan hash `{plan.hash}` · {litellm_label(plan)}</sub>")
    return "\n".join(out) + "\n"


def conflicts_markdown(plan: Plan) -> list[str]:
    if not plan.conflicts:
        return []
    head = f"#### Conflicts ({len(plan.conflicts)}): ids held by routes this fleet does not own"
    return [head, "", *(f"- {_conflict(c)}" for c in plan.conflicts), ""]


def ignored_markdown(plan: Plan) -> list[str]:
    if not plan.ignored:
        return []
    head = (
        f"<details><summary>Ignored routes (not owned by this fleet): {len(plan.ignored)}</summary>"
    )
    items = [f"- `{i.route.model_name}` `{i.route.id}`: {i.reason}" for i in plan.ignored]
    return [head, "", *items, "", "</details>", ""]


def withheld_markdown(plan: Plan) -> list[str]:
    """Changes health: require holds back: their host does not serve the declared model."""
    if not plan.withheld:
        return []
    out = [
        f"#### {WITHHELD_ICON} Withheld: the host does not serve its model ({len(plan.withheld)})",
        "<sub>health: require: apply leaves these routes as they are and exits 4.</sub>",
        "",
        "```diff",
    ]
    for w in plan.withheld:
        c = w.change
        out.append(f"! {c.action} {c.model_name} {c.host or c.id} ({c.id})")
        out += [f"!     {line}" for line in _lines(c)]
        out.append(f"!     withheld: {code_safe(w.reason)}")
    return [*out, "```", ""]


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
        body = ["```diff"]
        for change in items:
            body.append(
                f"{SYMBOL[change.action]} {change.action} {change.host or change.id} ({change.id})"
            )
            body += [f"{SYMBOL[change.action]}     {line}" for line in _lines(change)]
            health = change_health(plan, change) if plan else None
            body += [f"      {code_safe(health_line(health, icon=True))}"] if health else []
        body.append("```")
        if len(body) > 20:
            out += [
                f"<details><summary><code>{model}</code> ({counts})</summary>",
                "",
                *body,
                "",
                "</details>",
                "",
            ]
        else:
            out += [f"#### `{model}` ({counts})", "", *body, ""]
    return out


def pr_markdown(
    plan: Plan,
    this_pr: Sequence[Change],
    drift: Sequence[Change],
    base_note: str,
    refusals: Sequence[str] = (),
) -> str:
    """The pull-request view: what this PR changes apart from drift that is already live."""
    out = [f"### fleet-sync plan for `{plan.fleet}`", "", f"**{summary(plan)}**", ""]
    out += [f"> [!CAUTION]\n> apply would refuse without `--force`: {r}\n" for r in refusals]
    out += _untested_markdown(plan) + _notes_markdown(plan)
    out += [f"<sub>{line}</sub>\n" for line in [probe_summary(plan)] if line]
    out += conflicts_markdown(plan)
    out += withheld_markdown(plan)
    out += [f"#### This PR changes ({len(this_pr)})", f"<sub>{base_note}</sub>", ""]
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
    out.append(f"<sub>plan hash `{plan.hash}` · {litellm_label(plan)}</sub>")
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
    return "\n".join(out) + "\n"


def result_markdown(result: Result, note: str = "", verified: Sequence[Verified] = ()) -> str:
    verdict = "applied" if result.complete else "**incomplete**"
    out = [f"### fleet-sync apply for `{result.plan.fleet}`: {verdict}", ""]
    if note:
        out += [f"> [!NOTE]\n> {note}", ""]
    out += [
        f"{result.count('done')} done, {result.count('failed')} failed, "
        f"{result.count('unconfirmed')} unconfirmed, {result.count('skipped')} skipped"
        + (f", {len(result.plan.withheld)} withheld" if result.plan.withheld else ""),
        "",
    ]
    if result.outcomes or result.plan.withheld:
        out += ["| | change | model | host | detail |", "|---|---|---|---|---|"]
        for o in result.outcomes:
            detail = o.detail.replace("|", "\\|")
            out.append(
                f"| {STATUS_ICON[o.status]} {o.status} | {o.change.action} | "
                f"`{o.change.model_name}` | {o.change.host or ''} | {detail} |"
            )
        for w in result.plan.withheld:
            reason = w.reason.replace("|", "\\|")
            out.append(
                f"| {WITHHELD_ICON} withheld | {w.change.action} | `{w.change.model_name}` | "
                f"{w.change.host or ''} | {reason} |"
            )
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
    return "".join(f"{p}\n" for p in problems)


def problems_github(problems: Sequence[Problem]) -> str:
    """GitHub workflow commands: each problem becomes an annotation on its line."""

    def esc(text: str, prop: bool = False) -> str:
        text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return text.replace(":", "%3A").replace(",", "%2C") if prop else text

    return "".join(
        f"::error file={esc(p.file, True)},line={p.line},col={p.col}::{esc(p.message)}\n"
        for p in problems
    )
