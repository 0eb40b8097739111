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

from .test_plan_cases import plan_for

CASE = Path(__file__).parent / "cases" / "plan" / "05-prune-threshold.yaml"


@pytest.mark.parametrize("limit", [math.nan, math.inf, -math.inf, -1.0, 100.5], ids=repr)
def test_a_limit_that_is_no_percentage_refuses_every_prune(limit: float) -> None:
    plan, _ = plan_for(yaml.safe_load(CASE.read_text(encoding="utf-8")))
    [refused] = refusals(plan, limit)
    assert refused.startswith("the plan prunes 4 of the 10 routes the fleet owns and ")
    assert f"safety.max_prune_percent is {limit!r}, not a number from 0 to 100" in refused
    assert refused.endswith("--force required")


@pytest.mark.parametrize(("limit", "refused"), [(100.0, 0), (40.0, 0), (39.9, 1), (0.0, 1)])
def test_a_percentage_limits_as_before(limit: float, refused: int) -> None:
    plan, _ = plan_for(yaml.safe_load(CASE.read_text(encoding="utf-8")))
    assert len(refusals(plan, limit)) == refused
