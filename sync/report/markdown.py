"""The GitHub markdown format: a plan (the drift issue, --format markdown), the pull-request
view of one, and an apply result (the merge commit's comment, the job summary).

A string from the proxy is only ever inside a code span or a fenced block whose fence outruns
its backticks (sync/secrets/display.py).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sync.core.plan import Change, Conflict, Plan
from sync.core.verdict import Verdict
from sync.litellm.releases import LiteLLMRelease
from sync.report.common import (
    SYMBOL,
    change_lines,
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
    unhealthy_markdown,
    verify_markdown,
)
from sync.report.references import references_markdown
from sync.secrets.display import cell, code, fence, text

if TYPE_CHECKING:
    from sync.core.health import Verified
    from sync.core.result import Result

STATUS_ICON = {"done": "✅", "failed": "❌", "unconfirmed": "⚠️", "skipped": "⏭️", "not started": "⏹️"}
WITHHELD_ICON = "⏸️"


def _frame(
    plan: Plan,
    heading: str,
    refused: str,
    refusals: Sequence[str],
    body: list[str],
    lead: Sequence[str] = (),
) -> str:
    """The one frame of a plan in markdown: heading, `lead` (what a reviewer must see first),
    summary, refusals, warnings, notes, probe summary and conflicts above `body`; hosts not
    serving, ignored routes and the hash below."""
    out = [f"### {heading}", "", *lead, f"**{summary(plan)}**", ""]
    out += [f"> [!CAUTION]\n> {refused}: {code(r)}\n" for r in refusals]
    out += _untested(plan) + _notes(plan)
    out += [f"<sub>{line}</sub>\n" for line in [probe_summary(plan)] if line]
    out += _conflicts(plan)
    out += references_markdown(plan)
    out += body
    out += unhealthy_markdown(plan)
    out += _ignored(plan)
    out.append(f"<sub>plan hash `{plan.hash}` · {litellm_label(plan, markdown=True)}</sub>")
    return "\n".join(out) + "\n"


def _notes(plan: Plan) -> list[str]:
    """What the plan could not look at (fleet.yaml's history), where reviewers read."""
    return [f"> [!NOTE]\n> {text(note)}\n" for note in plan.notes]


def _untested(plan: Plan) -> list[str]:
    """A known version outside the tested range, said where reviewers read (never a refusal)."""
    release = LiteLLMRelease(plan.litellm_version)
    warning = release.warning() if plan.litellm_version else None
    return [f"> [!WARNING]\n> {code(warning)}\n"] if warning else []


def on_target(target: str | None) -> str:
    """What a heading adds for one target of a fleet with `targets:` ("" without one)."""
    return "" if target is None else f" on {code(target)}"


def plan_markdown(plan: Plan, title: str | None = None, refusals: Sequence[str] = ()) -> str:
    """`title` is markdown (its live parts in code spans); default: the plan's."""
    heading = title or f"fleet-sync plan for {code(plan.fleet)}"
    body = _changes(plan.changes, plan)
    body += [no_changes(), ""] if plan.empty else []
    body += _withheld(plan)
    return _frame(plan, heading, "Refused without `--force`", refusals, body)


def pr_markdown(
    plan: Plan,
    this_pr: Sequence[Change],
    drift: Sequence[Change],
    base_note: str,
    refusals: Sequence[str] = (),
    target: str | None = None,
    verdict: Verdict | None = None,
    label_notes: Sequence[str] = (),
) -> str:
    """The pull-request view: what this PR changes apart from drift that is already live (on
    `target`, when the fleet has targets). `base_note` is markdown (its live parts in code
    spans). It leads with apply's verdict (`verdict`, else `refusals` all refused): what is
    refused and how to proceed, what a reviewed force accepted, and what became of a label
    (`label_notes`, plain text)."""
    verdict = verdict or Verdict(tuple(refusals))
    body = _withheld(plan)
    body += [f"#### This PR changes ({len(this_pr)})", f"<sub>{text(base_note)}</sub>", ""]
    body += _changes(this_pr, plan) or ["Nothing: fleet.yaml changes no route.", ""]
    if drift:
        body += [
            f"#### Drift already live ({len(drift)})",
            "<sub>The proxy differs from fleet.yaml at the merge base too: apply on merge "
            "repairs these as well.</sub>",
            "",
        ]
        body += _changes(drift, plan)
    heading = f"fleet-sync plan for {code(plan.fleet)}{on_target(target)}"
    lead = verdict_markdown(verdict, label_notes)
    return _frame(plan, heading, "", (), body, lead)


FORCE_LABEL = "fleet-sync:force"


def verdict_markdown(verdict: Verdict, label_notes: Sequence[str] = ()) -> list[str]:
    """What leads a pull request's plan: the refusals that fail its check and how to proceed,
    then the refusals a reviewed force accepted and by whom."""
    out: list[str] = []
    if verdict.refused:
        out += [
            f"> [!CAUTION]\n> **apply would refuse this plan ({len(verdict.refused)}): this "
            "check fails, and merging would leave the proxy behind `main`.**",
            *(f"> - {code(r)}" for r in verdict.refused),
            ">",
            "> To proceed: change fleet.yaml (or the proxy) until the plan passes, or, to accept "
            f"exactly these refusals after review, have someone with write access add the "
            f"`{FORCE_LABEL}` label to this pull request (the plan runs again and lists them as "
            "accepted; apply on merge forces those and nothing else).",
            "",
        ]
    if verdict.accepted:
        out += [
            f"> [!WARNING]\n> **Accepted by {text(verdict.by or '')} ({len(verdict.accepted)}):"
            " apply on merge forces exactly these; any other refusal still stops it.**",
            *(f"> - {code(r)}" for r in verdict.accepted),
            "",
        ]
    out += [f"> [!NOTE]\n> {text(note)}\n" for note in label_notes]
    return out


def _conflict_markdown(conflict: Conflict) -> str:
    desired, held = conflict.desired, conflict.held_by
    if conflict.held == "host":
        return (
            f"{code(desired.model_name)} host {code(desired.host or '')} ({code(conflict.id)}): "
            f"served by route {code(held.id)}, which this fleet does not own "
            f"({code(conflict.reason)}); left alone, no second route is made beside it"
        )
    return (
        f"{code(desired.model_name)} host {code(desired.host or '')} ({code(conflict.id)}): "
        f"held by a route of {code(held.model_name)} this fleet does not own "
        f"({code(conflict.reason)}); left alone, this host has no route"
    )


def _conflicts(plan: Plan) -> list[str]:
    if not plan.conflicts:
        return []
    head = f"#### Conflicts ({len(plan.conflicts)}): ids held by routes this fleet does not own"
    return [head, "", *(f"- {_conflict_markdown(c)}" for c in plan.conflicts), ""]


def _ignored(plan: Plan) -> list[str]:
    if not plan.ignored:
        return []
    head = (
        f"<details><summary>Ignored routes (not owned by this fleet): {len(plan.ignored)}</summary>"
    )
    items = [
        f"- {code(i.route.model_name)} {code(i.route.id)}: {code(i.reason)}" for i in plan.ignored
    ]
    return [head, "", *items, "", "</details>", ""]


def _withheld(plan: Plan) -> list[str]:
    """Changes health: require holds back: their host does not serve the declared model."""
    if not plan.withheld:
        return []
    body = []
    for w in plan.withheld:
        c = w.change
        body.append(f"! {verb(c)} {c.model_name} {c.host or c.id} ({c.id})")
        body += [f"!     {line}" for line in change_lines(c)]
        body.append(f"!     withheld: {w.reason}")
    return [
        f"#### {WITHHELD_ICON} Withheld: the host does not serve its model ({len(plan.withheld)})",
        "<sub>health: require: apply leaves these routes as they are and exits 4.</sub>",
        "",
        *fence(body, "diff"),
        "",
    ]


def _changes(changes: Iterable[Change], plan: Plan) -> list[str]:
    """Changes grouped by model; each group folds when it is long. Each change shows its host's
    probe result (when the hosts were probed)."""
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
            lines.append(f"{symbol} {verb(change)} {change.host or change.id} ({change.id})")
            lines += [f"{symbol}     {line}" for line in change_lines(change)]
            health = change_health(plan, change)
            lines += [f"      {health_line(health, icon=True)}"] if health else []
        body = fence(lines, "diff")
        if len(body) > 20:
            # An HTML block: the name is escaped for HTML, not markdown.
            summary_ = f"<code>{html.escape(text(model))}</code> ({counts})"
            out += [f"<details><summary>{summary_}</summary>", "", *body, "", "</details>", ""]
        else:
            out += [f"#### {code(model)} ({counts})", "", *body, ""]
    return out


def result_markdown(
    result: Result,
    note: str = "",
    verified: Sequence[Verified] = (),
    target: str | None = None,
    forced: Verdict | None = None,
) -> str:
    """`forced`: apply's verdict when it overrode refusals (who accepted them, and which)."""
    verdict = "applied" if result.complete else "**incomplete**"
    heading = f"fleet-sync apply for {code(result.plan.fleet)}{on_target(target)}"
    out = [f"### {heading}: {verdict}", ""]
    if note:
        out += [f"> [!NOTE]\n> {text(note)}", ""]
    if forced is not None and forced.accepted:
        out += [
            f"> [!WARNING]\n> **Forced, accepted by {text(forced.by or '')} "
            f"({len(forced.accepted)}):**",
            *(f"> - {code(r)}" for r in forced.accepted),
            "",
        ]
    out += [outcome_counts(result), ""]
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
    out += ["", *_conflicts(result.plan)] if result.plan.conflicts else []
    out += ["", f"<sub>plan hash `{result.plan.hash}`</sub>"]
    return "\n".join(out) + "\n"
