"""The rules that stand for what LiteLLM does to a value between write and read (each checked on
the real proxy by tests/test_compare_live.py); here as tables, one function each."""

from __future__ import annotations

from typing import Any

import pytest

from sync.litellm.normalise import masked_key, readable, same


@pytest.mark.parametrize(
    ("desired", "live"),
    [
        (600, 600.0),  # timeout: float field
        ("120", 120),  # rpm: int field, written as text
        (1000.0, 1000),  # tpm: int field, written as a float
        ("0.000001", 1e-06),
        ("true", True),
        (1, True),
        ({"a": [1, "2"]}, {"a": [1.0, 2]}),
    ],
)
def test_litellm_coercion_is_no_drift(desired: Any, live: Any) -> None:
    assert same(desired, live)


@pytest.mark.parametrize(
    ("desired", "live"),
    [
        (120, 121),
        ("a", "A"),
        ("yes", False),
        (2, True),
        ([1, 2], [1, 2, 3]),
        ({"a": 1}, {"a": 1, "b": 2}),
        ("http://h/v1", "http://h/v1/"),  # LiteLLM stores addresses as written
        (None, "None"),
    ],
)
def test_a_different_value_is_drift(desired: Any, live: Any) -> None:
    assert not same(desired, live)


@pytest.mark.parametrize(
    ("key", "masked"),
    [
        ("api_key", True),
        ("X-Api-Key", True),
        ("Authorization", True),
        ("access_tier", True),
        ("aws_secret_access_key", True),
        ("vertex_credentials", True),
        ("input_cost_per_token", False),  # a price: the "cost" segment wins
        ("max_tokens", False),  # "tokens" is not "token"
        ("litellm_credential_name", False),  # exempted by name
        ("apikey", False),  # one segment, not "key"
        ("rpm", False),
    ],
)
def test_litellm_masks_by_key_segment(key: str, masked: bool) -> None:
    assert masked_key(key) is masked


def test_references_and_masked_paths_are_not_readable() -> None:
    assert readable(("litellm_params", "rpm"), 5)
    assert readable(("model_info", "api_key_note"), "x")  # model_info is never masked
    assert not readable(("litellm_params", "organization"), "os.environ/ORG")
    assert not readable(("model_info", "note"), "os.environ/NOTE")
    assert not readable(("litellm_params", "extra_headers", "X-Api-Key"), "abc")
    assert not readable(("litellm_params", "custom"), [{"token": "x"}])
    assert readable(("litellm_params", "custom"), [{"name": "x"}])
