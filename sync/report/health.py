"""Probe results and proxy verification as text and markdown lines, for text.py and
markdown.py (whose display rule holds here too: text lines start with fleet-sync's words and are
escaped by the caller, live strings in markdown sit in code spans)."""

from __future__ import annotations

from collections.abc import Sequence

from sync.core.health import HostHealth, Verified
from sync.core.plan import Change, Delete, Plan
from sync.secrets.display import code, text

ICON = {"serves": "✅", "other_model": "⚠️", "no_answer": "❌", "needs_key": "🔑"}


def probe_summary(plan: Plan) -> str:
    """'probe: 3 hosts: 2 serve, 1 not answering', or '' when the hosts were not probed."""
    if plan.health is None:
        return ""
    states = [h.state for h in plan.health]
    parts = [
        f"{n} {label}"
        for state, label in (
            ("serves", "serve"),
            ("other_model", "serve something else"),
            ("no_answer", "not answering"),
            ("needs_key", "need a key"),
        )
        if (n := sum(1 for s in states if s == state))
    ]
    keyless = sum(1 for h in plan.health if h.key_note and not h.key_sent)
    unsent = f" ({keyless} asked without their key)" if keyless else ""
    return f"probe: {len(states)} host(s): {', '.join(parts) or 'none enabled'}{unsent}"


def change_health(plan: Plan, change: Change) -> HostHealth | None:
    return None if isinstance(change, Delete) else plan.health_of(change.model_name, change.host)


def health_line(health: HostHealth, icon: bool = False) -> str:
    mark = f"{ICON[health.state]} " if icon else ""
    return f"probe: {mark}{health.summary()}"


def unchanged_unhealthy(plan: Plan) -> list[HostHealth]:
    """Hosts that do not serve although the plan changes nothing about them: no change is
    withheld for them, but a dead route is what a reviewer most needs to hear about."""
    changes = [*plan.changes, *(w.change for w in plan.withheld)]
    touched = {(c.model_name, c.host or "") for c in changes}  # hosts, whatever their route ids
    return [h for h in plan.health or () if not h.serves and (h.model_name, h.host) not in touched]


def unhealthy_text(plan: Plan) -> list[str]:
    hosts = unchanged_unhealthy(plan)
    if not hosts:
        return []
    out = [f"not serving, no change planned ({len(hosts)}):"]
    return out + [
        f"    model {h.model_name} host={h.host} at {h.api_base}: {h.summary()}" for h in hosts
    ]


def unhealthy_markdown(plan: Plan) -> list[str]:
    hosts = unchanged_unhealthy(plan)
    if not hosts:
        return []
    head = f"<details><summary>Hosts that do not serve, no change planned: {len(hosts)}</summary>"
    items = [
        f"- {code(h.model_name)} host {code(h.host)} at {code(h.api_base)}: {ICON[h.state]} "
        f"{code(h.summary())}"
        for h in hosts
    ]
    return [head, "", *items, "", "</details>", ""]


def verify_text(verified: Sequence[Verified], proxy_url: str) -> str:
    if not verified:
        return "verify: no model group changed; nothing to ask through the proxy\n"
    out = [f"verify through {proxy_url} (POST /v1/chat/completions, max_tokens 1):"]
    out += [f"  {'ok' if v.ok else 'failed':<7} {v.model_name}: {v.detail}" for v in verified]
    return "".join(f"{text(line)}\n" for line in out)


def verify_markdown(verified: Sequence[Verified]) -> list[str]:
    if not verified:
        return []
    out = ["", "Verified through the proxy (one `max_tokens: 1` request per changed model):", ""]
    out += [f"- {'✅' if v.ok else '❌'} {code(v.model_name)}: {code(v.detail)}" for v in verified]
    return out
