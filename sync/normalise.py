"""What LiteLLM adds on read, and how both sides are brought to one comparable form.

`/v2/model/info` returns litellm_params with LiteLLM's own boolean defaults filled in, and
model_info enriched with ~200 cost-map fields (mostly null) and bookkeeping. None of that is
drift. Desired routes go through the same functions so a user who writes a default explicitly
does not see a phantom change either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .credentials import redact

# Defaults LiteLLM 1.108 writes into litellm_params of every deployment.
PARAM_DEFAULTS: Mapping[str, Any] = {
    "allow_client_keepalive_override": False,
    "merge_reasoning_content_in_choices": False,
    "use_in_pass_through": False,
    "use_litellm_proxy": False,
    "use_xai_oauth": False,
}
# model_info keys LiteLLM maintains itself (not user data); compared never, shown never.
INFO_BOOKKEEPING = frozenset(
    {
        "access_via_team_ids",
        "blocked",
        "db_model",
        "direct_access",
        "key",
        "litellm_provider",
        "member_auto_router",
        "pricing_overrides",
        "supported_openai_params",
    }
)


def clean_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """litellm_params without nulls, LiteLLM's defaults and credential values."""
    out: dict[str, Any] = {}
    for key in sorted(params):
        value = params[key]
        if value is None or (key in PARAM_DEFAULTS and value == PARAM_DEFAULTS[key]):
            continue
        out[key] = redact(key, value)
    return out


def clean_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """model_info without nulls and LiteLLM's bookkeeping."""
    return {
        key: redact(key, info[key])
        for key in sorted(info)
        if info[key] is not None and key not in INFO_BOOKKEEPING
    }
