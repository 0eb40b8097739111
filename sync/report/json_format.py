"""The JSON format: a plan (redacted: sync/report/redaction.py's plan_json is the only plan JSON
any output shows), an apply result and validation problems, as objects and as text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sync.core.plan import Plan
from sync.fleet.problems import Problem
from sync.report.redaction import plan_json

if TYPE_CHECKING:  # validate prints problems through here; it needs no proxy client
    from sync.core.health import Verified
    from sync.core.result import Result


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def plan_document(plan: Plan, refusals: Sequence[str]) -> str:
    """The plan as the commands print it, with what apply would refuse without --force."""
    return to_json({**plan_json(plan), "refused": list(refusals)})


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


def result_document(result: Result, verified: Sequence[Verified] | None) -> str:
    """The result as apply prints it, with what the proxy answered when asked (None: not)."""
    body = result_json(result)
    if verified is not None:
        body["verify"] = [v.as_dict() for v in verified]
    return to_json(body)


def problems_document(problems: Sequence[Problem]) -> str:
    return to_json({"valid": not problems, "problems": [p.as_dict() for p in problems]})
