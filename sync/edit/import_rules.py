"""Which live values `fleet-sync import` writes into fleet.yaml, and which it leaves on the
routes: decided by where a value can have come from, not by what its key is called.

LiteLLM resolves an ``os.environ/NAME`` reference stored on ANY top-level key of litellm_params
and lists the resolved value (proxy_server._resolve_db_litellm_param and router.py in 1.98.1,
1.108.7 and 1.110.2; on the real proxy ``organization: os.environ/DATABASE_URL`` lists the
database URL, password included), and masks values under keys that sound secret. Nothing on
the read side tells a resolved value from a written one, so a live string there may be a secret
whatever its key says. Import therefore writes literally only what cannot be a resolved secret,
or is not one by its meaning:

- numbers, booleans and references (a reference is a name; LiteLLM lists it only where it does
  not resolve it);
- ``model`` and ``api_base``, whose meaning is a model and an address (the caller's);
- a short allow-list of routing parameters, and only when the value has the narrow shape their
  meaning gives (``api_version: 2024-02-01``, ``region_name: us-east-1``, ``timeout: "600"``):
  a resolved key or URL does not have it;
- model_info, which LiteLLM never resolves: its strings are what was written, but a string
  under a key LiteLLM's masker hides (runpod_key, vllm_serve_key, hf_token: a key, token, auth
  or access segment), which may be a credential of a shape nothing can tell from a word.

Every other value is left out of fleet.yaml, a whole top-level key at a time (LiteLLM's PATCH
replaces a top-level value whole, so writing part of one would drop the rest): the route keeps
it as it is, since adopting a route PATCHes only what fleet.yaml sets, and fleet.yaml does not
manage it. Last, a value is written only if `validate` accepts it alone (credential shapes,
nulls, keys LiteLLM owns): import never writes a file validate refuses for a value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sync.fleet.model import semantic_problems
from sync.fleet.yamlmarks import Marks
from sync.litellm.normalise import masked_key
from sync.litellm.owned import NESTED_SHAPES, ROUTING_SHAPES
from sync.secrets.credentials import (
    is_reference,
    looks_like_credential,
    masked_name,
    may_quote,
    written_out,
)

# A key quoted in a message or a comment of the file: plain characters only (a newline in a
# comment would end it and start YAML of the key's choosing).
_SHOWN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_MASK = re.compile(r"\*{3,}")

# Why a value stays on the route instead of in fleet.yaml (never the value itself).
RESOLVED = "a string LiteLLM may have resolved from an os.environ/ secret"
MASKED = "masked by LiteLLM"
NESTED = "holds a string below the top level that import cannot tell from a secret"
CREDENTIAL = "looks like a credential"
SECRET_NAME = "a string under a key LiteLLM masks, which import cannot tell from a secret"
NOT_FINITE = "infinity or NaN, which fleet.yaml cannot hold"
REFUSED = "validate refuses it as listed"


@dataclass(frozen=True)
class Leave:
    """Why one live value is left on the route rather than written (one of the texts above)."""

    why: str


Verdict = Leave | None  # None: write it as listed


def param_verdict(key: str, value: Any) -> Verdict:
    """Whether import writes one top-level litellm_params value (model, api_base and api_key
    are the caller's)."""
    if isinstance(value, str) and not is_reference(value):
        if masked_key(key) or _MASK.search(value):
            return Leave(MASKED)
        shape = ROUTING_SHAPES.get(key)
        if shape is None or not shape.fullmatch(value):
            return Leave(RESOLVED)
    shape = NESTED_SHAPES.get(key)
    if not isinstance(value, str):
        for leaf in _strings(value, keys=False):
            if shape is None or not shape.fullmatch(leaf):
                return Leave(MASKED if _MASK.search(leaf) else NESTED)
    return _common("litellm_params", key, value)


def info_verdict(key: str, value: Any) -> Verdict:
    """Whether import writes one model_info value: LiteLLM resolves and masks nothing there, so
    it is what was written, unless it is a credential or a string under a key LiteLLM's masker
    hides (LiteLLM's own rule for what may be one: a number or a boolean there is written)."""
    if (leave := _common("model_info", key, value)) is not None:
        return leave
    named = masked_name(key) or masked_key(key)
    return Leave(SECRET_NAME) if named and any(True for _ in _strings(value, False)) else None


def _common(section: str, key: str, value: Any) -> Verdict:
    strings = (key, *_strings(value, keys=True))
    if written_out(key, value) or any(looks_like_credential(s) for s in strings):
        return Leave(CREDENTIAL)
    if any(not math.isfinite(n) for n in _floats(value)):
        return Leave(NOT_FINITE)
    if refused_by_validate(section, key, value):
        return Leave(REFUSED)
    return None


def refused_by_validate(section: str, key: str, value: Any) -> bool:
    """Whether `validate` refuses this one key of a litellm_params or model_info mapping."""
    doc = {"models": {"m": {section: {key: value}}}}
    return next(iter(semantic_problems(doc, Marks(), "import")), None) is not None


def _strings(value: Any, keys: bool) -> Iterator[str]:
    """Every string under `value` that is not a reference (with the keys of mappings)."""
    if isinstance(value, str):
        if not is_reference(value):
            yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if keys:
                yield str(key)
            yield from _strings(item, keys)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item, keys)


def _floats(value: Any) -> Iterator[float]:
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _floats(item)


def shown_key(key: str) -> str:
    """A key as a message or a comment may quote it."""
    plain = _SHOWN_KEY.fullmatch(key) is not None and may_quote(key)
    return key if plain else "(a key not shown: unusual characters)"


def shows_address(address: str) -> bool:
    """Whether an api_base may be quoted in a message: an http(s) address without @ or anything
    credential-like in it (a value resolved from a reference may be anything)."""
    return address.startswith(("http://", "https://")) and "@" not in address and may_quote(address)
