"""The field-level detail of a changed route is DeepDiff's, over the two projected trees; a
route equal once LiteLLM's coercion is allowed for never reaches DeepDiff (plain data)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import deepdiff
import pytest

from sync.core.compare import ABSENT, diff, field_detail
from sync.core.render import Route
from sync.litellm.normalise import Path

PARAMS = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1/v1", "rpm": 120}
TAGS: Path = ("litellm_params", "tags")
STOP: Path = ("litellm_params", "stop")


@pytest.fixture
def deepdiff_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, ...]]]:
    """The real DeepDiff, each call recorded (compare imports it when it needs it)."""
    calls: list[tuple[Any, ...]] = []
    real = deepdiff.DeepDiff

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(deepdiff, "DeepDiff", recorded)
    yield calls


def route(params: dict[str, Any], model_info: dict[str, Any] | None = None) -> Route:
    return Route("r1", "m", params, {"id": "r1", **(model_info or {})})


def test_list_items_added_and_removed_are_deepdiffs_report() -> None:
    before: dict[Path, Any] = {TAGS: ["a", "b", "c"], STOP: ["x"], ("litellm_params", "rpm"): 5}
    after: dict[Path, Any] = {TAGS: ["a", "c"], STOP: ["x", "y"], ("litellm_params", "rpm"): 6}
    before[("model_info", "x")] = 1
    after[("model_info", "y")] = 2
    assert field_detail(before, after) == {
        TAGS: {"iterable_item_removed"},
        STOP: {"iterable_item_added"},
        ("litellm_params", "rpm"): {"values_changed"},
        ("model_info", "x"): {"dictionary_item_removed"},
        ("model_info", "y"): {"dictionary_item_added"},
    }


def test_a_key_that_looks_private_is_still_compared() -> None:
    """DeepDiff skips "__" keys unless told: a mapping in a list may carry one."""
    before: dict[Path, Any] = {TAGS: [{"__team": "a"}]}
    assert field_detail(before, {TAGS: [{"__team": "b"}]}) == {TAGS: {"values_changed"}}


def test_a_route_with_almost_no_path_in_common_is_diffed_leaf_by_leaf() -> None:
    """Not one changed value at the root, which no leaf could show."""
    before: dict[Path, Any] = {("litellm_params", "a"): 1, ("litellm_params", "b"): 2}
    assert field_detail(before, {("litellm_params", "c"): 3}) == {
        ("litellm_params", "a"): {"dictionary_item_removed"},
        ("litellm_params", "b"): {"dictionary_item_removed"},
        ("litellm_params", "c"): {"dictionary_item_added"},
    }


def test_an_equal_route_is_not_diffed(deepdiff_calls: list[tuple[Any, ...]]) -> None:
    """Equal after LiteLLM's coercion (rpm "120" read back as 120, 600 as 600.0)."""
    live = route({**PARAMS, "rpm": 120, "timeout": 600.0, "tags": ["a"]})
    desired = route({**PARAMS, "rpm": "120", "timeout": 600, "tags": ["a"]})
    assert diff(live, desired) == ()
    assert deepdiff_calls == []


def test_a_changed_route_is_diffed_once_and_shown_leaf_by_leaf(
    deepdiff_calls: list[tuple[Any, ...]],
) -> None:
    live = route({**PARAMS, "tags": ["a", "b"], "timeout": 600.0}, {"team": "x"})
    desired = route({**PARAMS, "tags": ["a", "c", "d"], "timeout": 600}, {"owner": "y"})
    changes = diff(live, desired)
    assert [(c.path, c.before, c.after) for c in changes] == [
        ("litellm_params.tags", ["a", "b"], ["a", "c", "d"]),
        ("model_info.owner", ABSENT, "y"),
    ]
    (before, after), *more = deepdiff_calls  # the live tree, then the desired one
    assert not more
    assert before[TAGS] == ["a", "b"] and after[TAGS] == ["a", "c", "d"]
    # Coerced-equal leaves are projected as the desired value: no difference there.
    assert before[("litellm_params", "timeout")] == after[("litellm_params", "timeout")]


@pytest.mark.parametrize("first", [0, 1])
def test_removals_shown_alike_keep_the_records_order(first: int) -> None:
    """Two removed paths shown as one ("model_info.a.b") come in the record's order, the
    same in every run (not a set's, which varies with the interpreter's hash seed)."""
    paths = [["model_info", "a", "b"], ["model_info", "a.b"]]
    if first:
        paths.reverse()
    record = [f"sha256:0 {json.dumps(p)}" for p in paths]
    live = route(dict(PARAMS), {"fleet_sync_paths": record})
    changes = diff(live, route(dict(PARAMS)))
    assert [list(c.parts) for c in changes] == paths
    assert {c.path for c in changes} == {"model_info.a.b"}


def test_a_missing_leaf_once_written_hidden_is_shown_absent() -> None:
    """Written as a reference before, now a plain value, gone live: nothing is hidden then."""
    record = [f"sha256:0 {json.dumps(['litellm_params', 'timeout'])}"]
    live = route(dict(PARAMS), {"fleet_sync_paths": record})
    desired = route({**PARAMS, "timeout": 30})
    assert [(c.path, c.before) for c in diff(live, desired)] == [("litellm_params.timeout", ABSENT)]
