"""litellm_params keys that send a route's requests, and the key LiteLLM resolves for it,
somewhere other than its api_base (an address fleet-sync never probes, verifies or shows), or
that make LiteLLM answer them itself without ever calling the api_base.

fleet.yaml may not set them (validate refuses each, with the fix); a live one on a route the
fleet owns is always compared, like fleet-sync's own tags, so it is drift and apply removes it;
import leaves out a model group whose routes carry one (fleet.yaml cannot say it).

Evidence, LiteLLM 1.98.1, 1.108.7 and 1.110.2 alike:
- base_url: litellm.main.completion() does `if base_url is not None: api_base = base_url`
  before it dispatches to the provider, so the route's api_base is never used.
- litellm_credential_name: utils.load_credentials_from_list (1.110: _named_credential_values)
  fills every key the route does not set from the named credential (`if key not in kwargs`);
  a credential holding base_url moves the route's requests as above, and it changes without
  the route changing.
- custom_llm_provider: get_llm_provider takes it over the model's own prefix, and a provider
  that takes no api_base then sends the request to its own endpoint (main._complete_sagemaker
  passes none: sagemaker signs and sends to AWS). A value equal to the model's prefix changes
  nothing (LiteLLM's UI writes one), so only another value counts.
- mock_response, mock_tool_calls, mock_timeout: the router merges a route's litellm_params into
  each call, and litellm.main.completion() answers with mock_completion() when either of the
  first two is set, or raises a timeout when mock_timeout is true, before any provider is
  called: the route looks healthy to a probe of its host and never reaches it (outside attack
  c, F1: a hand-added mock_response answered every request and plan said "No changes").
Not here: keys LiteLLM reads only when api_base is absent (region- or location-derived
endpoints, LITELLM_PROXY_API_BASE behind use_litellm_proxy, HOSTED_VLLM_API_BASE): every route
fleet-sync writes has an api_base, and the credential's own api_base never overrides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# key -> (what LiteLLM does with it, the fix in fleet.yaml)
REDIRECTS: dict[str, tuple[str, str]] = {
    "base_url": (
        "LiteLLM sends the route's requests, and the key it resolves, to base_url instead of "
        "api_base",
        "use the host's api_base",
    ),
    "litellm_credential_name": (
        "LiteLLM fills every key the route does not set from that credential, base_url "
        "included, which sends the route's requests to another address than api_base",
        "give the upstream's key as api_key: os.environ/NAME",
    ),
    "custom_llm_provider": (
        "LiteLLM takes it over the model's provider, and a provider that takes no api_base "
        "sends the route's requests to its own endpoint",
        "set the provider with provider: (the prefix of the model)",
    ),
    "mock_response": (
        "LiteLLM answers every request of the route with it and never calls api_base",
        "remove it: a route of the fleet serves its host",
    ),
    "mock_tool_calls": (
        "LiteLLM answers every request of the route with them and never calls api_base",
        "remove it: a route of the fleet serves its host",
    ),
    "mock_timeout": (
        "LiteLLM fails every request of the route with a timeout and never calls api_base",
        "remove it, and set timeout: for the host's real limit",
    ),
}


def redirecting(litellm_params: Mapping[str, Any], provider: str | None) -> tuple[str, ...]:
    """The keys of a route's litellm_params that send its requests elsewhere than its api_base;
    `provider`: the prefix of the model the route should have (a custom_llm_provider equal to
    it changes nothing)."""
    out = []
    for key in REDIRECTS:
        value = litellm_params.get(key)
        if value is None or (key == "custom_llm_provider" and value == provider):
            continue
        out.append(key)
    return tuple(out)


def provider_of(model: Any) -> str | None:
    """The provider prefix of a litellm_params.model (`hosted_vllm/org/m` -> `hosted_vllm`)."""
    if not isinstance(model, str) or "/" not in model:
        return None
    return model.split("/", 1)[0]
