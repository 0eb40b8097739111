"""What counts as a credential, for refusing it in fleet.yaml and hiding it in every output."""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from typing import Any

ENV_REFERENCE = re.compile(r"^os\.environ/[A-Za-z_][A-Za-z0-9_]*$")
# Matched on whole words of a key, so max_tokens or input_cost_per_token are not credentials.
SECRET_WORDS = frozenset(
    {"secret", "token", "password", "passwd", "credential", "credentials", "apikey"}
    | {"authorization", "cookie"}
)
REDACTED = "<redacted>"


@lru_cache(maxsize=4096)  # asked for every key of every route; the same few hundred keys
def looks_secret(key: str) -> bool:
    """api_key, aws_secret_access_key, x-api-key, Authorization, hfToken: yes; max_tokens: no."""
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower())
    return bool(SECRET_WORDS.intersection(words)) or ("api", "key") in itertools.pairwise(words)


def is_reference(value: Any) -> bool:
    """os.environ/NAME: LiteLLM resolves it in the proxy's environment; it is not a secret."""
    return isinstance(value, str) and ENV_REFERENCE.match(value) is not None


def written_out(key: str, value: Any) -> bool:
    """A credential-looking key whose value is the credential itself (or a mapping of them)."""
    return looks_secret(key) and (
        isinstance(value, dict) or (isinstance(value, str) and not is_reference(value))
    )


def redact(key: str, value: Any) -> Any:
    """The value with every written-out credential under it replaced, at any depth."""
    if written_out(key, value) and not isinstance(value, dict):
        return REDACTED
    if isinstance(value, dict):
        hide = looks_secret(key)
        return {
            k: REDACTED if hide and not is_reference(v) else redact(str(k), v)
            for k, v in value.items()
        }
    return value
