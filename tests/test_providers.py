"""Which listed routes vouch for a provider (sync/core/providers.py loaded_with), on plain data:
only a route whose listing says LiteLLM loaded it with the provider it names."""

from __future__ import annotations

from typing import Any

import pytest

from sync.core.providers import known, loaded_with
from sync.core.render import Route


def listed(params: dict[str, Any], info: dict[str, Any]) -> Route:
    return Route("r1", "g", params, {"id": "r1", **info})


@pytest.mark.parametrize(
    ("params", "info", "vouches"),
    [
        ({"model": "hosted_vllm/org/m"}, {"litellm_provider": "hosted_vllm"}, "hosted_vllm"),
        (
            {"model": "x/y", "custom_llm_provider": "openai"},
            {"litellm_provider": "openai"},
            "openai",
        ),
        # Loaded under another provider than it names: says nothing about that one.
        ({"model": "hosted_vlm/x", "use_litellm_proxy": True}, {}, None),
        (
            {"model": "hosted_vlm/x", "use_litellm_proxy": True},
            {"litellm_provider": "hosted_vlm"},
            None,
        ),
        ({"model": "hosted_vlm/x"}, {"litellm_provider": "groq"}, None),
        ({"model": "hosted_vlm/x", "api_base": "https://api.groq.com/openai/v1"}, {}, None),
        ({"model": "noslash"}, {"litellm_provider": "openai"}, None),
    ],
)
def test_a_listed_route_vouches_only_for_the_provider_litellm_says_it_loaded(
    params: dict[str, Any], info: dict[str, Any], vouches: str | None
) -> None:
    assert loaded_with(listed(params, info)) == vouches
    assert ("hosted_vlm" in known((), [listed(params, info)], {})) is (vouches == "hosted_vlm")
