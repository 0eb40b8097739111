"""What counts as a credential, for refusing it in fleet.yaml and hiding it in every output."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
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
# A whole string that is a scheme and one credential ("Bearer sk-..."); not "Basic models for
# testing", a description that starts with the word.
_AUTH_SCHEME = re.compile(r"(?i)(bearer|basic|token)\s+(?!os\.environ/)\S{6,}")
# Where a token may start: not inside a word or a name (eu-sk-central-region-1 is a region).
_START = r"(?<![A-Za-z0-9_-])"
# Tokens issuers shape so they can be told from anything else: a prefix, then a tail of their
# alphabet no name, id, digest or hash of fleet-sync has (route ids join names with "-" and end
# in hex). Each holds a character base64 lacks (_ - .), but AWS and Google keys, which have a
# fixed length: they are bounded on both sides by a character outside base64, so no base64
# blob (a git object fleet-sync sends to GitHub) holds one by chance.
_NOT_BASE64_BEFORE, _NOT_BASE64_AFTER = r"(?<![A-Za-z0-9+/_-])", r"(?![A-Za-z0-9+/_-])"
_ISSUED = re.compile(
    _START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|glpat-[\w-]{20,}"
    r"|xox[abposr]-[\w-]{10,}|hf_[A-Za-z0-9]{30,}|ya29\.[\w-]{20,}"
    r"|eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*)"
    rf"|{_NOT_BASE64_BEFORE}(?:(?:AKIA|ASIA)[0-9A-Z]{{16}}|AIza[\w-]{{35}}){_NOT_BASE64_AFTER}"
    # A PEM private key: masked up to its END line when it follows (bounded, so a text full of
    # BEGIN lines costs linear time), else to the end of the line.
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"(?:.{0,8192}?-----END [A-Z ]*PRIVATE KEY-----|[^\n]*)",
    re.DOTALL,
)
# OpenAI's, LiteLLM's (its keys and master keys must start sk-) and Stripe-style keys. Their tail
# is whatever a person chose (sk-fleet-sync-local), so the shape is also a name's: a fleet named
# sk-prod has route ids starting sk-prod-..., which is why the final scrub leaves this one out.
_KEYED = re.compile(_START + r"(?:sk|pk|rk)[-_][A-Za-z0-9_-]{16,}")
# The prefixes alone: searched first, since a pattern that opens with a lookbehind is tried at
# every position (30x slower over a plan's text than this one).
_ISSUED_HINT = re.compile(
    r"gh[pousr]_|github_pat_|glpat-|xox[abposr]-|hf_|ya29\.|eyJ|AKIA|ASIA|AIza|-----BEGIN"
)
_KEYED_HINT = re.compile(r"[spr]k[-_]")
_PREFIX = re.compile(r"github_pat_|glpat-|ya29\.|AKIA|ASIA|AIza|xox[a-z]-|[a-z]{2,3}[_-]")
# A secret carried in a query or connection string: ?password=..., &api_key=..., ;sig=...
_QUERY_SECRET = re.compile(
    r"(?i)(?P<name>[?&;](?:password|passwd|pwd|secret|token|api[-_]?key|access[-_]?token|sig"
    r"|signature)=)(?P<value>[^&;#\s\"'<>`]+)"
)
# Long random strings: keys and tokens without a prefix (base64, base64url, hex). The runs are
# taken in three alphabets: standard base64 (with + / and = padding), base64url (- _), and
# letters and digits alone (a token inside a path or a longer wordy string). Thresholds, chosen
# on LiteLLM's whole model cost map (5,500 names and URLs: none refused) and on random keys:
# - 32 characters at least: shorter random ids (route ids' 10 hex, digests' 16 hex, RunPod pod
#   ids) are not keys, and 32 is the shortest common key (16 random bytes as hex).
# - letters of both cases and digits: a lowercase slug or a word never mixes all three, while a
#   random base62 run of 32 lacks one about 1 time in 280.
# - the character class (upper, lower, digit) changes on at least 35% of adjacent pairs of its
#   letters and digits: random text changes on ~62%, words, paths and CamelCase names on
#   ~20-37% (WhisperLargeV3Turbo... 30%, Qwen3-Coder-480B-A35B-Instruct-Turbo 37%).
# - at least 7 characters of run per piece between separators (+ / - _): a model id joins
#   short words (Qwen3-Coder-480B-A35B-Instruct-Turbo: 6, Llama-3_1-Nemotron-Ultra-253B-v1:
#   4), random base64 has a separator every 32 characters on average.
# What passes, measured (tests/test_credentials.py): ~2% of random 32-character base64 keys
# (separators fall close by chance), under 1% of 40-character ones, of base62 and of base64url.
# - hex: 32 digits at least, with a digit and a letter (an md5, a sha1 or sha256 in full, a
#   UUID without dashes). A UUID with dashes or a 16-hex digest has no such run.
MIN_RUN = 32
MIN_CLASS_CHANGES = 0.35
MIN_PIECE = 7
_RANDOM_RUNS = (
    (re.compile(rf"[A-Za-z0-9]{{{MIN_RUN},}}"), None),
    (re.compile(rf"[A-Za-z0-9+/]{{{MIN_RUN},}}={{0,2}}"), re.compile(r"[+/=]+")),
    (re.compile(rf"[A-Za-z0-9_-]{{{MIN_RUN},}}"), re.compile(r"[_-]+")),
)
_HEX_RUN = re.compile(rf"[0-9a-fA-F]{{{MIN_RUN},}}")
# The shortest token above is 15 characters (xoxb- and 10); anything shorter that looks like a
# credential has one of these (a header's : or =, user:pass@, a query's ? & ;, Bearer's blank).
_SHORTEST_TOKEN = 15
_SHORT_CREDENTIAL = re.compile(r"[:=@?;&\s]")


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
    return _AUTH_SCHEME.fullmatch(text.strip()) is not None


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
    return _USERINFO.sub(rf"\g<1>{USERINFO_MASK}@", text)


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
    if any(True for _ in _random_spans(text)):
        return "a long random string"
    if any(True for _ in _hex_spans(text)):
        return "a long run of hex digits"
    return None


def looks_like_credential(text: str) -> bool:
    """Whether a string looks like a credential by its shape alone (see credential_kind).
    Short of that, only where a value came from can tell (see sync/redaction.py)."""
    return credential_kind(text) is not None


def _issued(text: str) -> str | None:
    match = _ISSUED_HINT.search(text) and _ISSUED.search(text)
    match = match or (_KEYED_HINT.search(text) and _KEYED.search(text))
    if match is None:
        return None
    token = match.group()
    if token.startswith("-----"):
        return "a private key"
    if token.startswith("eyJ"):
        return "a JSON Web Token"
    prefix = _PREFIX.match(token)
    return f"a token with the prefix {prefix.group() if prefix else token[:4]}"


def _classes(run: str) -> list[int]:
    return [0 if c.isdigit() else 1 if c.isupper() else 2 for c in run if c.isalnum()]


def _random(run: str, separators: re.Pattern[str] | None) -> bool:
    """Whether a run of one alphabet reads as random (the thresholds above)."""
    classes = _classes(run)
    if set(classes) != {0, 1, 2}:
        return False
    changes = sum(a != b for a, b in itertools.pairwise(classes))
    if changes < MIN_CLASS_CHANGES * (len(classes) - 1):
        return False
    pieces = len([p for p in separators.split(run) if p]) if separators else 1
    return len(run) >= MIN_PIECE * pieces


def _random_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where random runs stand; a run with separators only when no run of letters and digits
    inside it is random by itself (so a path keeps its words when a token is masked)."""
    found: list[tuple[int, int]] = []
    for run, separators in _RANDOM_RUNS:
        for match in run.finditer(text):
            start, stop = match.span()
            inside = any(start <= a and b <= stop for a, b in found)
            if not inside and _random(match.group(), separators):
                found.append((start, stop))
                yield start, stop


def _hex_spans(text: str) -> Iterator[tuple[int, int]]:
    for match in _HEX_RUN.finditer(text):
        run = match.group()
        if any(c.isdigit() for c in run) and any(c.isalpha() for c in run):
            yield match.span()


def mask_tokens(text: str, mask: str = USERINFO_MASK) -> str:
    """The text with issuers' tokens, JWTs and private keys masked, and the value of every
    secret in a query: shapes nothing fleet-sync writes itself ever has (no plan hash, digest,
    route id or commit id), so the final scrub masks them in everything it passes."""
    if _ISSUED_HINT.search(text):
        text = _ISSUED.sub(mask, text)
    return _QUERY_SECRET.sub(lambda m: m["name"] + mask, text) if "=" in text else text


def mask_credentials(text: str, mask: str = USERINFO_MASK) -> str:
    """The text with every part that looks like a credential masked: mask_tokens, and keys
    (sk-...), long random strings, hex runs and user:password@ too. For texts that quote a
    value (a validation message), never for outputs that carry hashes and ids."""
    text = mask_tokens(strip_userinfo(text), mask)
    text = _KEYED.sub(mask, text) if _KEYED_HINT.search(text) else text
    merged: list[list[int]] = []
    for start, stop in sorted([*_random_spans(text), *_hex_spans(text)]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    out, end = [], 0
    for start, stop in merged:
        out += [text[end:start], mask]
        end = stop
    return "".join(out) + text[end:]
