"""Keys fleet-sync cannot make converge on LiteLLM: refused at validate, each with the reason.

A value LiteLLM drops, rewrites or computes itself would differ from fleet.yaml on every plan
and apply could never fix it. Each rule is checked on the real proxy
(tests/test_compare_live.py::test_refused_keys_really_do_not_converge).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from .yamlmarks import JsonPath

REFERENCE_PREFIX = "os.environ/"  # LiteLLM's own test is str.startswith

# LiteLLM's pricing fields (its CustomPricingLiteLLMParams, 81 in 1.98.1, 157 in 1.110.2, all
# but output_vector_size match): from 1.108 it drops them from model_info on every write and
# shows its cost map's price instead.
PRICING = re.compile(r"(^|_)cost_per_|_token_cost($|_)|^tiered_pricing$|_uplift_multiplier")
# model_info keys LiteLLM writes itself, whatever the route says.
LITELLM_OWNS = {
    "db_model": "it sets it on every read (true for a database route)",
    "blocked": "it sets it from its pause flag on every read",
    "pricing_overrides": "it computes it from the route's pricing on every read",
    "key": "it takes it for its cost-map lookup key, and a model_info carrying it for a copy of "
    "its own /model/info answer",
    "created_at": "its record of the route, rewritten (Enterprise) or reformatted as a timestamp",
    "updated_at": "its record of the route, rewritten (Enterprise) or reformatted as a timestamp",
    "created_by": "its record of the route, rewritten on Enterprise proxies",
    "updated_by": "its record of the route, rewritten on Enterprise proxies",
    "team_id": "it makes the route a team model, which LiteLLM's team endpoints manage",
}


def unconvergeable(
    section: str, values: Mapping[str, Any], at: JsonPath
) -> Iterator[tuple[JsonPath, str, bool]]:
    """(where, why, whether to point at the key rather than the value) for each key of one
    litellm_params or model_info mapping that LiteLLM would never give back as written."""
    for key, value in values.items():
        here: JsonPath = (*at, key)
        if section == "model_info" and isinstance(key, str) and key in LITELLM_OWNS:
            yield here, f"model_info.{key} is LiteLLM's own: {LITELLM_OWNS[key]}; remove it", True
        elif section == "model_info" and isinstance(key, str) and PRICING.search(key):
            yield (
                here,
                f"LiteLLM drops pricing from model_info when it stores a route and shows its "
                f"cost map's price instead; set litellm_params.{key} (LiteLLM keeps it there "
                "and copies it into model_info)",
                True,
            )
        else:
            yield from _nulls(value, here)
            if section == "litellm_params" and isinstance(value, Mapping | list):
                yield from _nested_references(value, here)


def _nested_references(value: Any, at: JsonPath) -> Iterator[tuple[JsonPath, str, bool]]:
    """References below the top level of litellm_params. LiteLLM resolves os.environ/NAME only
    in a top-level value (Router.set_model_list, 1.98.1-1.110.2) and sends a nested one as its
    text: a header `Authorization: os.environ/TOKEN` would reach the upstream as those words."""
    items = value.items() if isinstance(value, Mapping) else enumerate(value)
    for key, item in items:
        here: JsonPath = (*at, key)
        if isinstance(item, str) and item.startswith(REFERENCE_PREFIX):
            yield (
                here,
                f"LiteLLM resolves {REFERENCE_PREFIX}NAME only in a top-level litellm_params "
                "value and api_key, and sends this nested one as its text; give the upstream's "
                "key as api_key: os.environ/NAME, or write the value itself",
                False,
            )
        elif isinstance(item, Mapping | list):
            yield from _nested_references(item, here)


def _nulls(value: Any, at: JsonPath) -> Iterator[tuple[JsonPath, str, bool]]:
    if value is None:
        yield (
            at,
            "LiteLLM does not keep null (it drops it or lists the text 'None'); leave it "
            "out instead",
            False,
        )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _nulls(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nulls(item, (*at, index))
