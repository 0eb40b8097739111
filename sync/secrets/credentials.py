"""What counts as a credential, for refusing it in fleet.yaml and hiding it in every output.

Two questions, one definition: what a string looks like by its shape alone, wherever it stands
(credential_kind), and what a value under a key means given the key's name (named_credential):
a key named for a secret (password, api_key, Authorization) holds one whatever its value; a key
LiteLLM's masker hides (a key, token, auth or access segment: X-RunPod-Key, eos_token) holds one
when its value looks random, and an ordinary word otherwise.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from sync.litellm.normalise import MASKED_SEGMENTS, UNMASKED_KEYS, UNMASKED_SEGMENTS
from sync.secrets.random_runs import hex_spans, key_tail, random_looking, random_spans

# fullmatch, never match/search with `$`: `$` also matches before a trailing newline, and
# "os.environ/KEY\n" is not a reference LiteLLM resolves.
ENV_REFERENCE = re.compile(r"os\.environ/([A-Za-z_][A-Za-z0-9_]*)")
# Names that say the value is a secret, matched on whole words of a key (camelCase split), so
# max_tokens, input_cost_per_token or eos_token are not: any plain value under one is refused.
SECRET_WORDS = frozenset(
    {"secret", "secrets", "password", "passwords", "passwd", "pwd", "passphrase", "cookie"}
    | {"passphrases", "passcode", "passcodes", "pw", "pin"}
    | {"credential", "credentials", "apikey", "apikeys", "authorization", "authtoken"}
    | {"accesstoken", "privatekey", "cookies"}
)
SECRET_PAIRS = frozenset(
    {("api", "key"), ("api", "keys"), ("api", "token"), ("auth", "key"), ("auth", "token")}
    | {("access", "token"), ("refresh", "token"), ("session", "token"), ("bearer", "token")}
    | {("private", "key"), ("pass", "phrase"), ("pass", "code"), ("pass", "word")}
    | {("otp", "seed"), ("totp", "seed"), ("mfa", "seed"), ("pin", "code")}
)
# A key that is only this word (`pass: ...`): as part of a longer name it says too little
# (pass_through_endpoints, bypass).
SECRET_NAMES = frozenset({("pass",), ("dsn",)})
# What every secret fleet-sync shows is replaced with (userinfo, tokens, known values).
MASK = "***"
# scheme://userinfo@ : the userinfo part ends at the first / ? # (or blank) before an @.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s\"'<>`]*@")
_HEADER_LINE = re.compile(r"(?P<name>[A-Za-z0-9_-]+)\s*[:=]\s*(?P<value>\S.*)", re.DOTALL)
# Authorization schemes (RFC 9110 Bearer/Basic/Digest, GitHub's token, Elastic's ApiKey,
# Okta's SSWS): a whole string that is one and a credential ("Bearer sk-..."), or one followed
# by a random-looking token inside a text ("use Bearer 3vX9..."); not "Basic models for
# testing", a description that starts with the word.
_SCHEMES = r"bearer|basic|digest|token|api-?key|ssws"
_AUTH_SCHEME = re.compile(rf"(?i)(?:{_SCHEMES})\s+(?!os\.environ/)\S{{6,}}")
_SCHEME_IN_TEXT = re.compile(rf"(?i)(?<![A-Za-z0-9])(?:{_SCHEMES})\s+(?P<token>\S{{16,}})")
# Where a token may start: not inside a word or a name (eu-sk-central-region-1 is a region).
_START = r"(?<![A-Za-z0-9_-])"
# Tokens issuers shape so they can be told from anything else: a prefix, then a tail of their
# alphabet no name, id, digest or hash of fleet-sync has (route ids join names with "-" and end
# in hex). Each holds a character base64 lacks (_ - .), but AWS and Google keys, which have a
# fixed length: they are bounded on both sides by a character outside base64, so no base64
# blob (a git object fleet-sync sends to GitHub) holds one by chance. Prefixes as published by
# the issuers or the secret scanners that check them (gitleaks, betterleaks): GitHub, GitLab,
# Slack, Hugging Face, Google, AWS, RunPod (rpa_), Groq (gsk_), Replicate (r8_), Perplexity
# (pplx-), Fireworks (fw_), NVIDIA (nvapi-), Cerebras (csk-), xAI (xai-), npm, PyPI, SendGrid,
# DigitalOcean and Databricks.
_NOT_BASE64_BEFORE, _NOT_BASE64_AFTER = r"(?<![A-Za-z0-9+/_-])", r"(?![A-Za-z0-9+/_-])"
_ISSUED = re.compile(
    _START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|glpat-[\w-]{20,}"
    r"|xox[abposr]-[\w-]{10,}|xapp-[\w-]{20,}|hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}"
    r"|ya29\.[\w-]{20,}|rpa_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}"
    r"|pplx-[A-Za-z0-9]{40,}|fw_[A-Za-z0-9]{20,}|nvapi-[\w-]{40,}|csk-[A-Za-z0-9]{40,}"
    r"|xai-[A-Za-z0-9]{60,}|GOCSPX-[\w-]{24,}|whsec_[A-Za-z0-9]{24,}|npm_[A-Za-z0-9]{36}|pypi-AgEIcHlwaS5vcmc[\w-]{40,}"
    r"|SG\.[\w-]{20,}\.[\w-]{20,}|do[opr]_v1_[a-f0-9]{64}|dapi[a-f0-9]{32}"
    r"|eyJ[\w-]{8,}\.[\w-]{8,}(?:\.[\w-]*)?)"
    rf"|{_NOT_BASE64_BEFORE}(?:(?:AKIA|ASIA)[0-9A-Z]{{16}}|AIza[\w-]{{35}}){_NOT_BASE64_AFTER}"
    # A PEM or PGP private key: masked up to its END line when it follows (bounded, so a text
    # full of BEGIN lines costs linear time), else to the end of the line.
    r"|-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.{0,8192}?-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|[^\n]*)",
    re.DOTALL,
)
# OpenAI's, LiteLLM's (its keys and master keys must start sk-) and Stripe-style keys: the
# prefix, then 16 characters or more holding an unbroken run of 8 letters and digits or more
# that mixes letters and digits, or both cases changing 4 times or more, as random keys have
# (secrets.token_urlsafe(16), LiteLLM's: 99 in 100 do), so a name that starts the same way
# (sk-prod, sk-DeepSeek-team, rk-3588-npu-node-01, pk-embeddings-large-v2) is not one. A
# route id of a fleet named sk-prod can still hold one: the final scrub leaves this shape out.
_KEYED = re.compile(_START + r"(?:sk|pk|rk)[-_](?P<tail>[A-Za-z0-9_-]{16,})")
# Under a key LiteLLM masks, any sk-/pk-/rk- value is a key (LiteLLM's own example: sk-1234).
_KEYED_VALUE = re.compile(r"(?:sk|pk|rk)[-_][A-Za-z0-9_-]{4,}")
# The prefixes alone: searched first, since a pattern that opens with a lookbehind is tried at
# every position (30x slower over a plan's text than this one).
_ISSUED_HINT = re.compile(
    r"gh[pousr]_|github_pat_|glpat-|xox[abposr]-|xapp-|hf_|api_org_|ya29\.|eyJ|AKIA|ASIA|AIza"
    r"|-----BEGIN|rpa_|gsk_|r8_|pplx-|fw_|nvapi-|csk-|xai-|GOCSPX-|whsec_|npm_|pypi-|SG\.|do[opr]_v1_|dapi"
)
_KEYED_HINT = re.compile(r"[spr]k[-_]")
_PREFIX = re.compile(
    r"github_pat_|glpat-|ya29\.|AKIA|ASIA|AIza|api_org_|pypi-|SG\.|do[opr]_v1_|dapi|nvapi-"
    r"|GOCSPX-|whsec_|xox[a-z]-|[a-z0-9]{2,4}[_-]"
)
# A secret carried in a query or connection string: ?password=..., &api_key=..., ;sig=...,
# a libpq DSN's " password=..." (its pairs are separated by blanks),
# ?key=... (Google), ?code=... (Azure Functions), &auth=...: a name that is, or ends in, one.
_QUERY_SECRET = re.compile(
    r"(?i)(?P<name>[?&;\s](?:[a-z0-9]+[-_])*(?:password|passwd|pwd|secret|token|key|apikey|auth"
    r"|sig|signature|code|credential)=)(?P<value>[^&;#\s\"'<>`]+)"
)
# Long random strings and hex runs without a prefix: sync/secrets/random_runs.py (the thresholds).
# The shortest token above is 15 characters (xoxb- and 10); anything shorter that looks like a
# credential has one of these (a header's : or =, user:pass@, a query's ? & ;, Bearer's blank).
_SHORTEST_TOKEN = 15
_SHORT_CREDENTIAL = re.compile(r"[:=@?;&\s]")
_BLANK = re.compile(r"\s")
_QUOTED_PARTS = re.compile(r"[\s/?#&=@]+")


@lru_cache(maxsize=4096)  # asked of every key of every route: the same few hundred keys
def _words(key: str) -> tuple[str, ...]:
    return tuple(re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower()))


@lru_cache(maxsize=4096)
def looks_secret(key: str) -> bool:
    """A key named for a secret: api_key, aws_secret_access_key, x-api-key, Authorization,
    X-Auth-Token, client_secret; any plain value under it is one. Not max_tokens, eos_token,
    X-RunPod-Key (see masked_name) nor litellm_credential_name (a name in LiteLLM's store)."""
    if key in UNMASKED_KEYS:
        return False
    words = _words(key)
    return (
        bool(SECRET_WORDS.intersection(words))
        or bool(SECRET_PAIRS.intersection(itertools.pairwise(words)))
        or words in SECRET_NAMES
    )


@lru_cache(maxsize=4096)
def masked_name(key: str) -> bool:
    """A key LiteLLM's masker hides (a segment such as key, token, auth, access; camelCase
    split too), not named for a secret outright: X-RunPod-Key, vllm_serve_key, hfToken,
    eos_token. A random-looking value under it is a credential; a word is not."""
    if key in UNMASKED_KEYS or looks_secret(key):
        return False
    words = set(_words(key))
    return not words & UNMASKED_SEGMENTS and bool(words & MASKED_SEGMENTS)


def is_reference(value: Any) -> bool:
    """os.environ/NAME: LiteLLM resolves it in the proxy's environment; it is not a secret."""
    return isinstance(value, str) and ENV_REFERENCE.fullmatch(value) is not None


def referenced_names(text: str) -> set[str]:
    """Names of the environment variables a text refers to as os.environ/NAME."""
    return set(ENV_REFERENCE.findall(text))


NAMED_SECRET = "its key's name says so"
NAMED_RANDOM = "a random-looking value under a key named like a credential"


def named_credential(key: str, value: Any) -> str | None:
    """Why the value under this key is a credential by the key's name (NAMED_SECRET or
    NAMED_RANDOM), or None: a key named for a secret holding a plain string (not a reference)
    anywhere inside; a key LiteLLM masks holding a random-looking string or an sk- key."""
    if looks_secret(key):
        return NAMED_SECRET if _any_string(value, lambda s: not is_reference(s)) else None
    if masked_name(key) and _any_string(value, _random_or_keyed):
        return NAMED_RANDOM
    return None


def written_out(key: str, value: Any) -> bool:
    """Whether the value under this key is a credential by the key's name (named_credential)."""
    return named_credential(key, value) is not None


def _random_or_keyed(text: str) -> bool:
    return random_looking(text) or _KEYED_VALUE.fullmatch(text) is not None


def _any_string(value: Any, test: Callable[[str], bool]) -> bool:
    if isinstance(value, str):
        return test(value)
    if isinstance(value, dict):
        return any(_any_string(v, test) for v in value.values())
    if isinstance(value, list):
        return any(_any_string(v, test) for v in value)
    return False


def credential_line(text: str) -> bool:
    """A header written as one string with its credential: "Authorization: Bearer sk-...",
    "x-api-key=sk-...", "x-auth: <random>", "Bearer sk-...", "ApiKey ..." (the way header
    lists carry them), or an authorization scheme and a random-looking token in a text."""
    stripped = text.strip()
    match = _HEADER_LINE.fullmatch(stripped)
    if match is not None and named_credential(match["name"], match["value"].strip()):
        return True
    if _AUTH_SCHEME.fullmatch(stripped) is not None:
        return True
    if _BLANK.search(stripped) is None:
        return False
    return any(random_looking(m["token"]) for m in _SCHEME_IN_TEXT.finditer(text))


def unsendable(credential: str) -> str:
    """Why a key or token cannot go in an HTTP header as it is ("" when it can): httpx sends
    header values as ASCII, and a control character (a pasted line break) is no header. Says
    nothing of the value itself."""
    if not credential.isascii():
        return "it holds a character that is not ASCII"
    if not credential.isprintable():
        return "it holds a control character (a line break?)"
    if credential != credential.strip():
        return "it starts or ends with a space"
    return ""


def has_userinfo(text: str) -> bool:
    """Whether an address in the text carries credentials (scheme://user:pass@host)."""
    return _USERINFO.search(text) is not None


def strip_userinfo(text: str) -> str:
    """The text with the user:password@ part of every address masked (***@)."""
    return _USERINFO.sub(rf"\g<1>{MASK}@", text)


def credential_kind(text: str) -> str | None:
    """What a string looks like, if it looks like a credential by its shape alone, whatever key
    holds it; said without quoting it (a prefix at most). None when it does not."""
    if len(text) < _SHORTEST_TOKEN and _SHORT_CREDENTIAL.search(text) is None:
        return None  # most names and values: too short for a token, no : = @ ? ; & or blank
    if has_userinfo(text):
        return "user:password@ in an address"
    if credential_line(text):
        return "a secret header"
    if (token := _issued(text)) is not None:
        return token
    if (query := _QUERY_SECRET.search(text)) is not None:
        return f"a secret in a query ({query['name'][1:]})"
    if any(True for _ in random_spans(text)):
        return "a long random string"
    if any(True for _ in hex_spans(text)):
        return "a long run of hex digits"
    return None


def looks_like_credential(text: str) -> bool:
    """Whether a string looks like a credential by its shape alone (see credential_kind).
    Short of that, only where a value came from can tell (see sync/report/redaction.py)."""
    return credential_kind(text) is not None


def may_quote(text: str) -> bool:
    """Whether a message may quote this string: not credential-shaped, and no part of it (an
    address's host or path segment, a word) random-looking: a key pasted where an address or a
    name goes is quoted by no message, whatever its length."""
    if looks_like_credential(text):
        return False
    return not any(random_looking(part) for part in _QUOTED_PARTS.split(text))


def _issued(text: str) -> str | None:
    match = _ISSUED_HINT.search(text) and _ISSUED.search(text)
    if match is None and _KEYED_HINT.search(text):
        keyed = (m for m in _KEYED.finditer(text) if key_tail(m["tail"]))
        match = next(keyed, None)
    if match is None:
        return None
    token = match.group()
    if token.startswith("-----"):
        return "a private key"
    if token.startswith("eyJ"):
        return "a JSON Web Token"
    prefix = _PREFIX.match(token)
    return f"a token with the prefix {prefix.group() if prefix else token[:4]}"


def mask_tokens(text: str, mask: str = MASK) -> str:
    """The text with issuers' tokens, JWTs and private keys masked, and the value of every
    secret in a query: shapes nothing fleet-sync writes itself ever has (no plan hash, digest,
    route id or commit id), so the final scrub masks them in everything it passes."""
    if _ISSUED_HINT.search(text):
        text = _ISSUED.sub(mask, text)
    return _QUERY_SECRET.sub(lambda m: m["name"] + mask, text) if "=" in text else text


def mask_credentials(text: str, mask: str = MASK) -> str:
    """The text with every part that looks like a credential masked: mask_tokens, and keys
    (sk-...), long random strings, hex runs and user:password@ too. For texts that quote a
    value (a validation message), never for outputs that carry hashes and ids."""
    text = mask_tokens(strip_userinfo(text), mask)
    if _KEYED_HINT.search(text):
        text = _KEYED.sub(lambda m: mask if key_tail(m["tail"]) else m.group(), text)
    merged: list[list[int]] = []
    for start, stop in sorted([*random_spans(text), *hex_spans(text)]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    out, end = [], 0
    for start, stop in merged:
        out += [text[end:start], mask]
        end = stop
    return "".join(out) + text[end:]
