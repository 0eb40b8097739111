"""Which live values `fleet-sync import` may write into fleet.yaml: decided by where a value can
have come from, not by what its key is called.

LiteLLM resolves an ``os.environ/NAME`` reference stored on ANY top-level key of litellm_params
and lists the resolved value (proxy_server._resolve_db_litellm_param and router.py in 1.98.1,
1.108.7 and 1.110.2; on the real proxy ``organization: os.environ/DATABASE_URL`` lists the
database URL, password included). Nothing on the read side tells a resolved value from a written
one, so a live string there may be a secret whatever its key says. Import therefore writes
literally only what cannot be a resolved secret, or is not one by its meaning:

- numbers, booleans and references (a reference is a name; LiteLLM lists it only where it does
  not resolve, i.e. below the top level);
- ``model`` and ``api_base``, whose meaning is a model and an address (an address loses its
  user:password@, with a warning);
- a short allow-list of routing parameters, and only when the value has the narrow shape their
  meaning gives (``api_version: 2024-02-01``, ``region_name: us-east-1``, ``timeout: "600"``):
  a resolved key or URL does not have it.

Every other top-level string becomes a placeholder ``os.environ/FLEET_SYNC_IMPORT_...`` the user
sets in the proxy. A string nested deeper (a header value) cannot be one: LiteLLM resolves no
reference there and would send the placeholder's text, so its model group is left out, with the
path, for a person to write. model_info is never resolved: its strings are what was written.
Last, every string about to be written is checked for the look of a credential (a known token
prefix, user:password@, a Bearer header, password= in a query); a group with one is left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from .credentials import is_reference, looks_like_credential, written_out
from .litellm_owned import NESTED_SHAPES, ROUTING_SHAPES

Verdict = Literal["keep", "placeholder"]


@dataclass(frozen=True)
class Refused:
    """Why a value cannot be written, naming its path and never its value."""

    reason: str


def param_verdict(key: str, value: Any) -> Verdict | Refused:
    """What import does with one top-level litellm_params value (model, api_base and api_key
    are handled by the caller)."""
    if value is None or isinstance(value, bool | int | float) or is_reference(value):
        return "keep"
    if isinstance(value, str):
        shape = ROUTING_SHAPES.get(key)
        if shape is not None and shape.fullmatch(value):
            return "keep"
        return "placeholder"
    shape = NESTED_SHAPES.get(key)
    for path, leaf in _strings(value, f"litellm_params.{key}"):
        if shape is not None and shape.fullmatch(leaf) and not looks_like_credential(leaf):
            continue
        return Refused(
            f"{path} holds a string fleet-sync cannot tell from a secret LiteLLM resolved, and "
            "LiteLLM reads no os.environ/ reference there, so it cannot be a placeholder: "
            "write this group by hand"
        )
    return "keep"


def info_refusal(info: dict[str, Any]) -> Refused | None:
    """model_info is never resolved by LiteLLM: its values are what was written, unless one is
    a written-out credential."""
    for key, value in info.items():
        if written_out(str(key), value):
            return Refused(f"model_info.{key} holds a credential (fleet.yaml refuses one)")
    for path, leaf in _strings(info, "model_info"):
        if looks_like_credential(leaf):
            return Refused(f"{path} looks like a credential")
    return None


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, string) of every string that is not a reference, keys of mappings included."""
    if isinstance(value, str):
        if not is_reference(value):
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}"
            if isinstance(key, str) and looks_like_credential(key):
                yield path, key
            yield from _strings(item, here)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def credential_path(value: Any, path: str) -> str | None:
    """The path of the first string under `value` that looks like a credential, or None."""
    return next((p for p, s in _strings(value, path) if looks_like_credential(s)), None)


def without_userinfo(address: str) -> str:
    """http://user:pass@host:1/v1 → http://host:1/v1 (the part before @ dropped, not masked)."""
    parts = urlsplit(address)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def shows_address(address: str) -> bool:
    """Whether an api_base may be quoted in a message: an http(s) address without @ or anything
    credential-like in it (a value resolved from a reference may be anything)."""
    return (
        address.startswith(("http://", "https://"))
        and "@" not in address
        and not looks_like_credential(address)
    )
