"""Keys fleet-sync cannot make converge on LiteLLM: refused at validate, each with the reason.

A value LiteLLM drops, rewrites or computes itself would differ from fleet.yaml on every plan
and apply could never fix it. Each rule is checked on the real proxy
(tests/test_compare_live.py::test_refused_keys_really_do_not_converge).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sync.litellm.owned import LITELLM_OWNS

JsonPath = tuple[str | int, ...]  # a place in fleet.yaml (as sync.fleet.yamlmarks has it)
REFERENCE_PREFIX = "os.environ/"  # LiteLLM's own test is str.startswith

# LiteLLM's pricing fields (its CustomPricingLiteLLMParams, 81 in 1.98.1, 157 in 1.110.2, all
# but output_vector_size match): from 1.108 it drops them from model_info on every write and
# shows its cost map's price instead.
PRICING = re.compile(r"(^|_)cost_per_|_token_cost($|_)|^tiered_pricing$|_uplift_multiplier")

# The integers LiteLLM's database layer keeps: Prisma's query engine holds a JSON number as an
# i64 or u64 and turns any other integer into a float (PostgreSQL stores
# 18446744073709551616 as 18446744073709552000 and lists it as 1.8446744073709552e+19). Where
# LiteLLM_Params types the key as an integer (rpm, tpm, itpm, otpm, max_retries, ...), the
# reload's LiteLLM_Params.model_validate then refuses the float (pydantic: int_parsing_size),
# and ProxyConfig._add_deployment runs that for every row in one loop without a try: one such
# row ends the reload where the database lists it (no ORDER BY: table order, in practice
# insertion order), so no route written after it loads and each such write answers 500; LiteLLM's
# /model/delete cannot find the row to delete it (1.98.1, 1.108.7, 1.110.2; seen on the real
# proxy, tests/test_value_limits_live.py). Elsewhere the float never reads back as written.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
OUT_OF_RANGE = (
    f"is outside {INT_MIN}..{INT_MAX}, the integers LiteLLM's database keeps (it turns any "
    "other into a float): LiteLLM stores it but its router cannot load the route, and one such "
    "row stops the proxy loading routes written after it (where LiteLLM wants an integer: rpm, "
    "tpm, max_retries, ...; elsewhere it never reads back as written)"
)
# Per-key default limits LiteLLM applies to each virtual key of the route: below 0, LiteLLM
# 1.110.2 stores the route (500 "saved to the database, but ... not live in this pod's router")
# and its router never lists it (found by tests/test_declared_types_live.py on the real proxy;
# its declared type is a bare int). No release means anything by a negative rate limit.
NON_NEGATIVE = frozenset({"default_api_key_tpm_limit", "default_api_key_rpm_limit"})
NEGATIVE_LIMIT = (
    "is below 0: a rate limit is a count; LiteLLM 1.110.2 stores such a route but its router "
    "never loads it; write 0 or more, or leave it out"
)
HOLDS_NUL = (
    "holds U+0000, which PostgreSQL cannot store in LiteLLM's JSON columns (the write fails); "
    "remove it"
)
# Levels of mappings and lists below one litellm_params or model_info key. fleet-sync reads the
# proxy's answers at most 64 levels deep (a route's litellm_params sits at the 4th, a plan's at
# the 5th), and LiteLLM's database layer fails to write a value nested ~126 levels.
MAX_DEPTH = 32
TOO_DEEP = (
    f"nested more than {MAX_DEPTH} levels deep: fleet-sync reads LiteLLM's answers at most 64 "
    "levels deep, so the route would make every read of the proxy fail; flatten it"
)

# A route's litellm_params and model_info as rendered (defaults, model and host merged), as
# JSON. fleet-sync reads the proxy's routes 200 to a page and refuses a page over 16 MiB
# (sync/live/client.py); LiteLLM lists ~8.5 KiB per route of its own and mirrors litellm_params
# keys into model_info, so 200 routes of this size still fit, with room.
MAX_ROUTE_BYTES = 32 * 1024


def route_too_large(layers: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the route of one host (its defaults, model and host mappings, in that order) is too
    large for fleet-sync to read back, or None."""
    size = 0
    for section in ("litellm_params", "model_info"):
        merged: dict[str, Any] = {}
        for layer in layers:
            values = layer.get(section)
            if isinstance(values, Mapping):
                merged.update(values)
        try:
            size += len(json.dumps(merged, ensure_ascii=False).encode("utf-8", "replace"))
        except ValueError:  # an integer of thousands of digits: refused on its own
            return None
    if size <= MAX_ROUTE_BYTES:
        return None
    return (
        f"its route's litellm_params and model_info come to {size:,} bytes of JSON; at most "
        f"{MAX_ROUTE_BYTES:,} (fleet-sync reads the proxy's routes 200 to a page, at most 16 MiB "
        "a page, and a larger route would make every read of the proxy fail)"
    )


def unconvergeable(
    section: str, values: Mapping[str, Any], at: JsonPath
) -> Iterator[tuple[JsonPath, str, bool]]:
    """(where, why, whether to point at the key rather than the value) for each key of one
    litellm_params or model_info mapping that LiteLLM would never give back as written."""
    for key, value in values.items():
        here: JsonPath = (*at, key)
        if isinstance(key, str) and "\0" in key:
            yield here, f"the key {HOLDS_NUL}", True
        owned = LITELLM_OWNS.get(key) if section == "model_info" and isinstance(key, str) else None
        if owned is not None:
            yield here, f"model_info.{key} is LiteLLM's own: {owned}; remove it", True
        elif section == "model_info" and isinstance(key, str) and PRICING.search(key):
            yield (
                here,
                f"LiteLLM drops pricing from model_info when it stores a route and shows its "
                f"cost map's price instead; set litellm_params.{key} (LiteLLM keeps it there "
                "and copies it into model_info)",
                True,
            )
        else:
            if section == "litellm_params" and key in NON_NEGATIVE and _negative(value):
                yield here, f"{value} {NEGATIVE_LIMIT}", False
            yield from _values(value, here)
            if _depth(value) > MAX_DEPTH:
                yield here, TOO_DEEP, False
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


def _values(value: Any, at: JsonPath) -> Iterator[tuple[JsonPath, str, bool]]:
    """Each leaf (and key) below one litellm_params or model_info key that LiteLLM cannot keep
    or load as written: null, an integer outside its database's range, infinity or NaN, and
    text holding U+0000."""
    if value is None:
        yield (
            at,
            "LiteLLM does not keep null (it drops it or lists the text 'None'); leave it "
            "out instead",
            False,
        )
    elif isinstance(value, int) and not isinstance(value, bool):
        if not INT_MIN <= value <= INT_MAX:
            yield at, f"{_number(value)} {OUT_OF_RANGE}", False
    # A float that is not finite: refused at every position of fleet.yaml, once
    # (sync/fleet/schema_rules.py nonfinite_problems).
    elif isinstance(value, str) and "\0" in value:
        yield at, HOLDS_NUL, False
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and "\0" in key:
                yield (*at, key), f"the key {HOLDS_NUL}", True
            yield from _values(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _values(item, (*at, index))


def _negative(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value < 0


def _number(value: int) -> str:
    """An integer as a message shows it: its digits, or how many there are."""
    if value.bit_length() <= 80:
        return str(value)
    return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"


def _depth(value: Any) -> int:
    """Levels of mappings and lists in a value (a scalar: 0), counted without recursion."""
    deepest, level = 0, [value]
    while containers := [node for node in level if isinstance(node, Mapping | list)]:
        deepest += 1
        level = [
            item
            for node in containers
            for item in (node.values() if isinstance(node, Mapping) else node)
        ]
    return deepest
