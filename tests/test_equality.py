"""The equality test that lets plans skip DeepDiff for unchanged routes never hides a change:
whenever `same` says equal, DeepDiff (as plan.diff calls it) finds nothing."""

from __future__ import annotations

import copy
import random
from typing import Any

from deepdiff import DeepDiff

from sync.equality import same

SCALARS: list[Any] = [
    0, 1, -1, 600, 600.0, 0.0, -0.0, 1.5, 2**53, 2**53 + 1, float(2**53), float("nan"),
    float("inf"), True, False, None, "", "1", "600", "true", "null", "é", [], {},
]  # fmt: skip


def nothing_differs(a: Any, b: Any) -> bool:
    return not DeepDiff(a, b, ignore_numeric_type_changes=True, view="tree")


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        keys = rng.sample(["a", "b", "c", "api_base", "rpm", "timeout"], rng.randint(0, 4))
        return {k: random_value(rng, depth + 1) for k in keys}
    if depth < 3 and roll < 0.4:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice(SCALARS)


def mutate(rng: random.Random, value: Any) -> Any:
    """A copy with at most one small change somewhere (or none)."""
    value = copy.deepcopy(value)
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(sorted(value))
        if rng.random() < 0.2:
            del value[key]
        else:
            value[key] = mutate(rng, value[key])
        return value
    if isinstance(value, list) and value and rng.random() < 0.7:
        index = rng.randrange(len(value))
        value[index] = mutate(rng, value[index])
        return value
    return rng.choice([value, rng.choice(SCALARS), float(value) if type(value) is int else value])


def test_every_pair_of_scalars_agrees_with_deepdiff_when_equal() -> None:
    for a in SCALARS:
        for b in SCALARS:
            if same(a, b):
                assert nothing_differs(a, b), (a, b)
            if same({"k": [a]}, {"k": [b]}):
                assert nothing_differs({"k": [a]}, {"k": [b]}), (a, b)


def test_random_documents_never_hide_a_change() -> None:
    rng = random.Random(12)
    hits = 0
    for _ in range(3000):
        a = random_value(rng)
        b = mutate(rng, a)
        if same(a, b):
            hits += 1
            assert nothing_differs(a, b), (a, b)
    assert hits > 500  # the corpus does exercise the equal branch


def test_what_litellm_changes_without_meaning_it_still_counts_as_equal() -> None:
    desired = {"litellm_params": {"timeout": 600, "rpm": 120}, "model_info": {"a": [1, "x"]}}
    live = {"litellm_params": {"rpm": 120, "timeout": 600.0}, "model_info": {"a": [1, "x"]}}
    assert same(live, desired)


def test_type_changes_deepdiff_reports_are_not_equal() -> None:
    assert not same({"a": True}, {"a": 1})
    assert not same({"a": "1"}, {"a": 1})
    assert not same({"a": None}, {"a": 0})
    assert not same({"a": [1]}, {"a": (1,)})
    assert not same({"a": float("nan")}, {"a": float("nan")})
    assert not same({"a": 1}, {"a": 1, "b": None})
