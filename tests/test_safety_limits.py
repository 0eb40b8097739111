"""The prune rail cannot be switched off by its limit (issue 23, deliver 5): validate refuses a
NaN or an infinity in fleet.yaml (tests/cases/invalid/99-numbers-not-finite.yaml), and a limit
that reaches the rail any other way and is no number from 0 to 100 allows no prune at all
(`x > NaN` is always false, so a NaN limit let every prune through)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from sync.core.safety import refusals
from sync.core.verdict import refusal_key

from .test_plan_cases import plan_for

CASE = Path(__file__).parent / "cases" / "plan" / "05-prune-threshold.yaml"


@pytest.mark.parametrize("limit", [math.nan, math.inf, -math.inf, -1.0, 100.5], ids=repr)
def test_a_limit_that_is_no_percentage_refuses_every_prune(limit: float) -> None:
    plan, _ = plan_for(yaml.safe_load(CASE.read_text(encoding="utf-8")))
    [refused] = refusals(plan, limit)
    assert refused.startswith("the plan prunes 4 of the 10 routes the fleet owns (ids ")
    assert f"safety.max_prune_percent is {limit!r}, not a number from 0 to 100" in refused
    assert refused.endswith("--force required")


@pytest.mark.parametrize(("limit", "refused"), [(100.0, 0), (40.0, 0), (39.9, 1), (0.0, 1)])
def test_a_percentage_limits_as_before(limit: float, refused: int) -> None:
    plan, _ = plan_for(yaml.safe_load(CASE.read_text(encoding="utf-8")))
    assert len(refusals(plan, limit)) == refused


def test_pruning_as_many_other_routes_is_another_refusal() -> None:
    """The reviewed force accepts a refusal by its text (sync/core/verdict.py refusal_key): a
    plan pruning the same number of other routes must not match it (an outside attack: the
    label given for one prune accepted another of the same count)."""
    case = yaml.safe_load(CASE.read_text(encoding="utf-8"))
    plan, _ = plan_for(case)
    # Other routes, the same count: four other untagged-by-host ids of the fleet.
    for spec in case["live"][6:]:
        spec["model_info"]["id"] = spec["model_info"]["id"].replace("o", "x")
    other, _ = plan_for(case)
    [first], [second] = refusals(plan, 30.0), refusals(other, 30.0)
    assert sorted(c.id for c in plan.changes) != sorted(c.id for c in other.changes)
    assert first.split("(")[0] == second.split("(")[0]  # the same count of the same fleet
    assert refusal_key(first) != refusal_key(second)
