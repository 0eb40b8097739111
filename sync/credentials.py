"""What counts as a credential, for refusing it in fleet.yaml and hiding it in every output."""

from __future__ import annotations

import itertools
import re
from typing import Any

# fullmatch, never match/search with `$`: `$` also matches before a trailing newline, and
# "os.environ/KEY\n" is not a reference LiteLLM resolves.
ENV_REFERENCE = re.compile(r"os\.environ/([A-Za-z_][A-Za-z0-9_]*)")
# Matched on whole words of a key, so max_tokens or input_cost_per_token are not credentials.
SECRET_WORDS = frozenset(
    {"secret", "token", "password", "passwd", "credential", "credentials", "apikey", "apikeys"}
    | {"authorization", "cookie"}
)
USERINFO_MASK = "***"
# scheme://userinfo@ : the userinfo part ends at the first / ? # (or blank) before an @.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s\"'<>`]*@")
_HEADER_LINE = re.compile(r"(?P<name>[A-Za-z0-9_-]+)\s*[:=]\s*(?P<value>\S.*)", re.DOTALL)
_AUTH_SCHEME = re.compile(r"(?i)(bearer|basic|token)\s+(?!os\.environ/)\S{6,}")
# Credentials recognisable by their shape whatever key holds them: issuers' token prefixes
# (OpenAI/LiteLLM sk-, GitHub, GitLab, Slack, Hugging Face, AWS, Google), JWTs, PEM keys.
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:sk|pk|rk)[-_][A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|glpat-[\w-]{20,}|xox[abposr]-[\w-]{10,}"
    r"|hf_[A-Za-z0-9]{30,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[\w-]{35}|ya29\.[\w-]{20,}"
    r"|eyJ[\w-]{8,}\.[\w-]{8,}\.)|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
# A secret carried in a query or connection string: ?password=..., &api_key=..., ;sig=...
_QUERY_SECRET = re.compile(
    r"(?i)[?&;](?:password|passwd|pwd|secret|token|api[-_]?key|access[-_]?token|sig|signature)"
    r"=[^&;\s]"
)


def looks_secret(key: str) -> bool:
    """api_key, aws_secret_access_key, x-api-key, Authorization, hfToken: yes; max_tokens: no."""
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower())
    pairs = set(itertools.pairwise(words))
    return bool(SECRET_WORDS.intersection(words)) or bool({("api", "key"), ("api", "keys")} & pairs)


def is_reference(value: Any) -> bool:
    """os.environ/NAME: LiteLLM resolves it in the proxy's environment; it is not a secret."""
    return isinstance(value, str) and ENV_REFERENCE.fullmatch(value) is not None


def referenced_names(text: str) -> set[str]:
    """Names of the environment variables a text refers to as os.environ/NAME."""
    return set(ENV_REFERENCE.findall(text))


def written_out(key: str, value: Any) -> bool:
    """A credential-looking key whose value is the credential itself (or holds some): a string
    that is not a reference, or a mapping or list with such a string anywhere inside."""
    return looks_secret(key) and _holds_plain_string(value)


def _holds_plain_string(value: Any) -> bool:
    if isinstance(value, str):
        return not is_reference(value)
    if isinstance(value, dict):
        return any(_holds_plain_string(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_plain_string(v) for v in value)
    return False


def credential_line(text: str) -> bool:
    """A header written as one string with its credential: "Authorization: Bearer sk-...",
    "x-api-key=sk-...", "Bearer sk-..." (the way header lists carry them)."""
    match = _HEADER_LINE.fullmatch(text.strip())
    if match is not None and looks_secret(match["name"]):
        return not is_reference(match["value"].strip())
    return _AUTH_SCHEME.match(text.strip()) is not None


def has_userinfo(text: str) -> bool:
    """Whether an address in the text carries credentials (scheme://user:pass@host)."""
    return _USERINFO.search(text) is not None


def strip_userinfo(text: str) -> str:
    """The text with the user:password@ part of every address masked (***@)."""
    return _USERINFO.sub(rf"\g<1>{USERINFO_MASK}@", text)


def looks_like_credential(text: str) -> bool:
    """Whether a string looks like a credential by its shape alone, whatever key holds it: a
    token with an issuer's prefix, user:pass@ in an address, a secret header line, a secret in
    a query. Short of that, only where a value came from can tell (see sync/import_rules.py)."""
    return (
        has_userinfo(text)
        or credential_line(text)
        or _TOKEN.search(text) is not None
        or _QUERY_SECRET.search(text) is not None
    )
