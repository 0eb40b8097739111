"""What every format of a plan and a result says the same way: the summary, the count line,
"no changes", and each change's lines (its live values hidden by sync/report/redaction.py).

Route names, ids, hosts, keys, reasons and details come from the proxy (or GitHub, a payload,
an upstream): they are shown by sync/secrets/display.py's rule. Text: every line is escaped whole
and starts with fleet-sync's own words. Markdown: such a string is only ever inside a code span or
a fenced block whose fence outruns its backticks.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sync.core.compare import ABSENT, UNREADABLE, FieldChange, pause_of, shown
from sync.core.plan import Change, Conflict, Create, Plan, Update
from sync.report.redaction import Hidden, desired_value, field_values, shaped, shown_path
from sync.secrets.display import code, printable

if TYPE_CHECKING:  # validate prints problems through the formats; it needs no proxy client
    from sync.core.result import Result

SYMBOL = {"create": "+", "update": "~", "delete": "-"}
_NO_CHANGES = "no changes. The proxy matches fleet.yaml."


def no_changes(fleet: str | None = None) -> str:
    """The one "no changes" sentence: on its own, or after the fleet's name."""
    return f"fleet {fleet}: {_NO_CHANGES}" if fleet else _NO_CHANGES[0].upper() + _NO_CHANGES[1:]


def outcome_counts(result: Result) -> str:
    """'2 done, 0 failed, 0 unconfirmed, 0 skipped[, 3 not started][, 1 withheld]': the count
    line of a result."""
    counts = ", ".join(
        f"{result.count(s)} {s}" for s in ("done", "failed", "unconfirmed", "skipped")
    )
    withheld, unstarted = result.plan.withheld, result.count("not started")
    counts += f", {unstarted} not started" if unstarted else ""  # only an interrupted apply's
    return counts + (f", {len(withheld)} withheld" if withheld else "")


def summary(plan: Plan) -> str:
    c, u, d = (len(plan.of(a)) for a in ("create", "update", "delete"))
    verbs = [verb(x) for x in plan.changes]
    p, r = verbs.count("pause"), verbs.count("resume")
    held = f", {len(plan.withheld)} withheld" if plan.withheld else ""
    paused = "".join(f", ~{n} {w}" for n, w in ((p, "pause"), (r, "resume")) if n)
    return f"+{c} create, ~{u - p - r} update{paused}, -{d} prune{held}"


def verb(change: Change) -> str:
    """What a change does, in the words plans use: a drain pauses its host's route (LiteLLM's
    `blocked`: the route keeps its id, api_key and spend, and serves nothing) and an enabled
    host's paused route is resumed; neither is a prune."""
    if isinstance(change, Update) and change.pause is not None:
        return "pause" if change.pause else "resume"
    return change.action


def _pause_line(change: Change) -> list[str]:
    if isinstance(change, Update) and change.pause:
        return [
            f"pause: host {change.host} is drained (enabled: false); the route keeps its id, "
            "api_key and spend and serves nothing; enabled: true resumes it"
        ]
    if isinstance(change, Update) and change.pause is False:
        return [
            "resume: the route is paused on the proxy (by hand, or drained before) and "
            f"fleet.yaml enables host {change.host}; apply resumes it"
        ]
    if isinstance(change, Create) and change.route.paused:
        return [f"created paused: host {change.host} is drained (enabled: false)"]
    if isinstance(change, Create) and pause_of(change.diff) is False:
        return [f"resume: {change.replaces} is paused on the proxy; its replacement serves"]
    return []


def litellm_label(plan: Plan, markdown: bool = False) -> str:
    if not plan.litellm_version:
        return "LiteLLM version unknown"
    return f"LiteLLM {code(plan.litellm_version) if markdown else plan.litellm_version}"


def _shown_value(v: Any) -> str:
    if isinstance(v, Hidden) or v in (ABSENT, UNREADABLE):
        return str(v)
    return json.dumps(v, ensure_ascii=False)


def change_label(change: Change) -> str:
    host = f" host={change.host}" if change.host else ""
    return f"{change.model_name}{host} ({change.id})"


_NOT_LISTED = "not listed by the router: LiteLLM stored this route but serves nothing from it"


def _field(d: FieldChange) -> str:
    before, after = field_values(d.path, d.before, d.after)
    via = " (checked through the digest)" if d.checked == "digest" else ""
    return f"{shown_path(d.path)}: {_shown_value(before)} -> {_shown_value(after)}{via}"


def change_lines(change: Change) -> list[str]:
    """What a change shows, live values hidden by provenance (sync/report/redaction.py)."""
    if isinstance(change, Update):
        lines = [f"{_NOT_LISTED}; sent again"] if not change.listed else []
        return lines + _pause_line(change) + [_field(d) for d in change.diff]
    if isinstance(change, Create) and change.replaces:
        return [
            f"replaces {change.replaces} (created first, then it is deleted):",
            *_pause_line(change),
            *(_field(d) for d in change.diff),
            *_leftovers(change),
        ]
    if isinstance(change, Create):
        params = desired_value(shown(change.route)["litellm_params"])
        return [f"litellm_params.{k}: {_shown_value(v)}" for k, v in params.items()]
    note = f"reason: {change.reason}"
    if change.replaced_by:
        note += f"; replaced by {change.replaced_by}"
    address = change.route.api_base  # live: shown in an address's shape only
    shown_address = shaped("litellm_params.api_base", address) if address else address
    lines = [f"api_base: {_shown_value(shown_address)}", note]
    return lines if change.listed else [*lines, _NOT_LISTED]


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


def conflict_line(conflict: Conflict) -> str:
    held = conflict.held_by
    if conflict.held == "host":
        return (
            f"{conflict.desired.model_name} host={conflict.desired.host} ({conflict.id}): "
            f"served by route {printable(held.id)}, which this fleet does not own "
            f"({conflict.reason}); left alone, no second route is made beside it"
        )
    return (
        f"{conflict.desired.model_name} host={conflict.desired.host} ({conflict.id}): held by a "
        f"route of {held.model_name} this fleet does not own ({conflict.reason}); left alone, "
        "this host has no route"
    )
