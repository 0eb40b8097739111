"""What LiteLLM does to a route between writing and reading it, as rules (no list of defaults).

Read from LiteLLM's source (1.98.1, 1.108.7, 1.110.2) and checked on the real proxy
(tests/test_compare_live.py):
- `/v2/model/info` masks every litellm_params value whose key, at any depth and inside lists,
  has a segment such as key/token/auth/access/secret (its SensitiveDataMasker), and drops
  api_key, client_secret, vertex_credentials and aws keys outright;
- it resolves `os.environ/...` references (at the top of litellm_params today; fleet-sync
  assumes any depth, so a resolved value is never taken for the written one);
- it coerces types (pydantic, lax mode): rpm "120" comes back as 120, timeout 600 as 600.0,
  a boolean field "true" as true;
- it adds its own keys (defaults, cost-map enrichment) to every route: only the paths fleet.yaml
  sets, or fleet-sync wrote, are ever compared, so none of those is mistaken for drift.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

Path = tuple[str, ...]  # ("litellm_params", "extra_headers", "X-Team")
SECTIONS = ("litellm_params", "model_info")
REFERENCE_PREFIX = "os.environ/"  # LiteLLM's own test: str.startswith

# LiteLLM's SensitiveDataMasker: a key is masked when one of its segments (split on _ and -,
# lower case) is one of these, unless a segment is "cost" (input_cost_per_token is a price).
# The union over 1.98.1-1.110.2 ("cookie" arrived in 1.108).
MASKED_SEGMENTS = frozenset(
    {"password", "secret", "key", "token", "auth", "authorization", "cookie", "credential"}
    | {"credentials", "access", "private", "certificate", "fingerprint", "tenancy"}
)
UNMASKED_SEGMENTS = frozenset({"cost"})
# Names the proxy exempts from masking by exact match when it lists routes.
UNMASKED_KEYS = frozenset(
    {"litellm_credential_name", "default_api_key_tpm_limit", "default_api_key_rpm_limit"}
)
_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})
_FALSE = frozenset({"false", "0", "no", "off", "f", "n"})
_PLAIN = frozenset({str, int, float, bool, type(None), list, tuple})  # never a Mapping
_SCALARS = frozenset({int, float, bool, type(None)})
_EXACT = frozenset({str, int, bool})  # equal values of one of these types are one value
_NUMBER = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$")


def _is_mapping(value: Any) -> bool:
    """isinstance(value, Mapping), the JSON types answered before the ABC check (which costs
    a quarter of a 10,000-route plan when asked of every value)."""
    kind = type(value)
    return kind is dict or (kind not in _PLAIN and isinstance(value, Mapping))


@lru_cache(maxsize=4096)  # asked for every key of every route: the same few hundred keys
def masked_key(key: str) -> bool:
    """Whether LiteLLM masks the value under this litellm_params key when it lists routes."""
    if key in UNMASKED_KEYS:
        return False
    segments = set(key.lower().replace("-", "_").split("_"))
    return not segments & UNMASKED_SEGMENTS and bool(segments & MASKED_SEGMENTS)


def holds_reference(value: Any) -> bool:
    """An os.environ/ reference anywhere in the value (LiteLLM resolves what it finds)."""
    if isinstance(value, str):
        return value.startswith(REFERENCE_PREFIX)
    if _is_mapping(value):
        return any(holds_reference(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_reference(v) for v in value)
    return False


def _masks_within(value: Any) -> bool:
    """A mapping inside the value (a list of dicts, say) with a key LiteLLM masks."""
    if _is_mapping(value):
        return any(masked_key(str(k)) or _masks_within(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_masks_within(v) for v in value)
    return False


def readable(path: Path, value: Any) -> bool:
    """Whether the live value at this path can be read back and compared with what was written:
    not for references (LiteLLM resolves them) and not for what its masker hides."""
    kind = type(value)
    if kind is str or kind in _SCALARS:  # nearly every leaf: nothing inside to look at
        if kind is str and value.startswith(REFERENCE_PREFIX):
            return False
        return path[0] != "litellm_params" or not _masked_path(path)
    if holds_reference(value):
        return False
    if path[0] != "litellm_params":
        return True
    return not _masked_path(path) and not _masks_within(value)


@lru_cache(maxsize=4096)  # every route repeats the same few paths
def _masked_path(path: Path) -> bool:
    return any(masked_key(k) for k in path[1:])


def leaves(section: str, values: Mapping[str, Any]) -> Iterator[tuple[Path, Any]]:
    """Every leaf of a section: mappings are walked, anything else (lists too) is one leaf.
    PATCH replaces each top-level key's value whole, so a nested key is removed by sending its
    parent without it. (Collected in a list: nested generators cost a tenth of a plan.)"""
    found: list[tuple[Path, Any]] = []

    def walk(at: Path, value: Any) -> None:
        if _is_mapping(value) and value:
            for key in sorted(value, key=str):
                walk((*at, str(key)), value[key])
        else:
            found.append((at, value))

    for key in sorted(values):
        value = values[key]
        if type(value) in _PLAIN:  # most top-level values: a leaf, without a call
            found.append(((section, key), value))
        else:
            walk((section, key), value)
    return iter(found)


def same(desired: Any, live: Any) -> bool:
    """Equal once LiteLLM's type coercion is allowed for: 600 and 600.0, "120" and 120, "true"
    and true are one value to LiteLLM. Anything else must be equal as written."""
    if type(desired) is type(live) and type(desired) in _EXACT and desired == live:
        return True  # the common case; the rules below say the same of equal values
    if _is_mapping(desired) and _is_mapping(live):
        return desired.keys() == live.keys() and all(same(desired[k], live[k]) for k in desired)
    if isinstance(desired, (list, tuple)) and isinstance(live, (list, tuple)):
        return len(desired) == len(live) and all(
            same(d, v) for d, v in zip(desired, live, strict=True)
        )
    a, b = _scalar(desired), _scalar(live)
    if a is None or b is None:
        return type(desired) is type(live) and bool(desired == live)
    return a == b or (a[0] != b[0] and _cross(a, b))


def _scalar(value: Any) -> tuple[str, Any] | None:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", float(value))
    if isinstance(value, str):
        return ("text", value)
    return None


def _cross(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    """Scalars of two kinds LiteLLM's coercion makes one value."""
    kinds = {a[0]: a[1], b[0]: b[1]}
    if "text" in kinds and "number" in kinds:
        text = kinds["text"]
        return bool(_NUMBER.match(text)) and float(text) == kinds["number"]
    if "text" in kinds and "bool" in kinds:
        words = _TRUE if kinds["bool"] else _FALSE
        return str(kinds["text"]).strip().lower() in words
    if "number" in kinds and "bool" in kinds:
        return bool(kinds["number"] == (1.0 if kinds["bool"] else 0.0))
    return False
