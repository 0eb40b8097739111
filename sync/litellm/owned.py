"""What LiteLLM puts on a listed route of its own accord, and what it never lists: the tables the
plan (what a replacement carries or drops) and `import` (what a route means) share.

Read from LiteLLM's source (1.98.1, 1.108.7, 1.110.2 alike) and checked on the real proxy:
`/v2/model/info` adds its boolean defaults to litellm_params, its bookkeeping and, for a model
its cost map knows, the cost map's fields to model_info; and it pops the credentials in
NEVER_LISTED before it masks the rest (proxy/common_utils/openai_endpoint_utils.py,
remove_sensitive_info_from_deployment). Pure: no import of fleet-sync.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# litellm_params LiteLLM lists on every route with these values, whatever was written.
PARAM_DEFAULTS: Mapping[str, Any] = {
    "allow_client_keepalive_override": False,
    "merge_reasoning_content_in_choices": False,
    "use_in_pass_through": False,
    "use_litellm_proxy": False,
    "use_xai_oauth": False,
}
# The one table of model_info keys LiteLLM keeps or writes itself, whatever the route says: why
# fleet.yaml cannot set each (validate refuses it with that reason), or None where LiteLLM
# keeps the key about the route (access, pause, pricing it computes, its cost-map lookup) and
# a fleet.yaml value is harmless. Import never writes any; a replacement never counts one as
# dropped; plan never compares one.
_RECORD = "its record of the route, rewritten (Enterprise) or reformatted as a timestamp"
LITELLM_OWNS: Mapping[str, str | None] = {
    "db_model": "it sets it on every read (true for a database route)",
    "blocked": "it sets it from its pause flag on every read",
    "pricing_overrides": "it computes it from the route's pricing on every read",
    "key": "it takes it for its cost-map lookup key, and a model_info carrying it for a copy of "
    "its own /model/info answer",
    "created_at": _RECORD,
    "updated_at": _RECORD,
    "created_by": "its record of the route, rewritten on Enterprise proxies",
    "updated_by": "its record of the route, rewritten on Enterprise proxies",
    "team_id": "it makes the route a team model, which LiteLLM's team endpoints manage",
    "team_public_model_name": "it names a team model's public name, which LiteLLM's team "
    "endpoints manage (sync/litellm/teams.py)",
    "access_via_team_ids": None,
    "direct_access": None,
    "id": None,
    "litellm_provider": None,
    "member_auto_router": None,
    "supported_openai_params": None,
}
# Fields of LiteLLM's model information (context window, prices, capabilities): it fills them in
# from its cost map when it knows the model, and it shares what one route's model_info sets with
# every route serving the same model (router.py _register_deployment_in_model_cost registers it
# under the shared provider/model key; /v2/model/info fills a route's missing fields from it).
# A listed value may therefore be the cost map's or another route's: never this route's for sure.
COST_MAP_FIELD = re.compile(
    r"^(mode|max_(input_|output_)?tokens|.*cost.*|.*_per_.*|supports_.*|tpm|rpm|"
    r"output_vector_size|tiered_pricing|source|deprecation_date|metadata)$"
)
# litellm_params LiteLLM never lists (popped before the masker runs): a route may hold them
# unseen, and nothing read from the proxy can carry them to another route.
NEVER_LISTED = frozenset(
    {"api_key", "client_secret", "vertex_credentials", "vertex_ai_credentials"}
    | {"aws_access_key_id", "aws_secret_access_key"}
)

_NUMBER = r"\d{1,9}(\.\d{1,9})?"
_AWS_REGION = r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d"
# Top-level litellm_params whose string values are routing data by meaning, with their shape:
# a value LiteLLM resolved from an os.environ/ reference (a key, a URL) does not have it.
ROUTING_SHAPES: dict[str, re.Pattern[str]] = {
    "api_version": re.compile(
        r"\d{4}-\d{2}-\d{2}(-preview)?|v\d{1,2}(\.\d{1,3}){0,2}|\d{1,2}\.\d{1,3}(\.\d{1,3})?"
    ),
    "region_name": re.compile(_AWS_REGION),
    "aws_region_name": re.compile(_AWS_REGION),
    "vertex_location": re.compile(r"global|us|eu|[a-z]+-[a-z]+\d{1,2}"),
    **{
        key: re.compile(_NUMBER)
        for key in (
            "timeout",
            "stream_timeout",
            "rpm",
            "tpm",
            "max_retries",
            "weight",
            "order",
            "max_parallel_requests",
        )
    },
}
# Nested strings that are routing data by meaning (tag-based routing), with their shape.
NESTED_SHAPES: dict[str, re.Pattern[str]] = {
    "tags": re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:/-]{0,39}"),
}


def bookkeeping(key: str) -> bool:
    """A model_info key LiteLLM keeps about the route itself or maintains whatever the route."""
    return key in LITELLM_OWNS


def model_information(key: str) -> bool:
    """A model_info field of LiteLLM's model information (COST_MAP_FIELD): what a listing
    shows there may be the cost map's or another route's, so import never writes it and a
    replacement never counts it as dropped."""
    return COST_MAP_FIELD.match(key) is not None


def model_known(model_info: Mapping[str, Any], litellm_params: Mapping[str, Any]) -> bool:
    """Whether LiteLLM's cost map knows the route's model: it then lists its `key` for the
    lookup, different from the route's own model, and fills model_info from the map."""
    return model_info.get("key") not in (None, litellm_params.get("model"))
