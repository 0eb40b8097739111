"""Whether text reads as random: the runs of letters and digits a key or token is made of, as
sync/secrets/credentials.py asks it (long random runs anywhere, a random-looking value under a key
LiteLLM masks, the tail of an sk- key). Pure: no import of fleet-sync."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

# Long random strings: keys and tokens without a prefix (base64, base64url, hex). The runs are
# taken in three alphabets: standard base64 (with + / and = padding), base64url (- _), and
# letters and digits alone (a token inside a path or a longer wordy string). Thresholds, chosen
# on LiteLLM's model cost map (tests/cases/credentials/cost_map_values.txt: none refused) and
# on random keys (tests/test_credentials.py measures both):
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
# - or one case only (RunPod's legacy keys are 32 upper-case letters and digits, base32 and
#   lower-case keys too): a run of letters and digits alone, mixing both, whose class changes
#   4 times at least and on 10% of pairs (random: ~40%).
# - hex: 32 digits at least, with a digit and a letter (an md5, a sha1 or sha256 in full, a
#   UUID without dashes). A UUID with dashes or a 16-hex digest has no such run.
# Identifiers, not secrets, whatever their shape: hex and one-case runs in an address's host
# (DNS names have one case: a Lambda URL id, a Cloudflare R2 account id), hex in its path (a
# Cloudflare AI Gateway account id), and Oracle Cloud OCIDs. Tokens of an issuer, JWTs, query
# secrets and user:password@ in an address are still credentials, and so are mixed-case random
# runs anywhere.
MIN_RUN = 32
MIN_CLASS_CHANGES = 0.35
MIN_ONE_CASE_CHANGES = 0.1
MIN_ONE_CASE_GROUPS = 2
MIN_PIECE = 7
_RANDOM_RUNS = (
    (re.compile(rf"[A-Za-z0-9]{{{MIN_RUN},}}"), None),
    (re.compile(rf"[A-Za-z0-9+/]{{{MIN_RUN},}}={{0,2}}"), re.compile(r"[+/=]+")),
    (re.compile(rf"[A-Za-z0-9_-]{{{MIN_RUN},}}"), re.compile(r"[_-]+")),
)
_HEX = re.compile(r"[0-9a-fA-F]+")
_HEX_RUN = re.compile(rf"[0-9a-fA-F]{{{MIN_RUN},}}")
_ADDRESS = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://(?P<host>[^/?#\s\"'<>`]*)(?P<path>[^?#\s\"'<>`]*)"
)
_OCID = re.compile(r"ocid1\.[a-z0-9_]+\.oc[0-9]+\.[a-z0-9-]*\.[a-z0-9]+")
# A value that looks random (random_looking): what a key LiteLLM masks may not hold in plain.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ALNUM = re.compile(r"[A-Za-z0-9]+")
MIN_RANDOM_VALUE = 16  # characters of the whole value
MIN_RANDOM_CHARACTERS = 12  # in random-looking runs of letters and digits
MIN_RANDOM_PIECE = 8  # the longest such run
MIN_DIGIT_GROUPS = 1  # letters on both sides of a group of digits, at least once
MIN_KEY_RUN = 8  # an sk-/pk-/rk- key's unbroken run of letters and digits
MIN_KEY_CASE_CHANGES = 4  # in such a run of letters alone


def random_looking(text: str) -> bool:
    """Whether a value reads as random rather than as words: a UUID, or 16 characters or more
    without a blank whose runs of letters and digits that look random (letters mixed with
    digits, or both cases changing often) hold 12 characters or more, one of them 8 or more.
    Not an address (the shape rules judge it), an OCID, <|im_end|>, region-us-east-1, nor a
    model id (Qwen3-235B-A22B-Instruct-2507-FP8: its runs are short)."""
    if _UUID.fullmatch(text):
        return True
    if len(text) < MIN_RANDOM_VALUE or "://" in text or _OCID.fullmatch(text):
        return False
    if any(c.isspace() for c in text):
        return False
    runs = [len(run) for run in _ALNUM.findall(text) if _random_piece(run)]
    return sum(runs) >= MIN_RANDOM_CHARACTERS and max(runs, default=0) >= MIN_RANDOM_PIECE


def _random_piece(run: str) -> bool:
    """A run of letters and digits that reads as random: digits among its letters (not only a
    version at one end of a short name: Qwen3, starcoder2, HuggingFaceH4), or, letters alone,
    both cases changing as often as random text does (not CamelCase: DeepSeek, CodeLlama)."""
    classes = _classes(run)
    if 0 in classes and len(set(classes)) > 1:
        digits = [c == 0 for c in classes]
        groups = sum(a != b for a, b in itertools.pairwise(digits))
        return groups >= MIN_DIGIT_GROUPS * 2 or len(run) >= MIN_RANDOM_VALUE
    if set(classes) != {1, 2} or len(run) < MIN_RANDOM_VALUE:
        return False
    changes = sum(a != b for a, b in itertools.pairwise(classes))
    return changes >= MIN_CLASS_CHANGES * (len(classes) - 1)


def key_tail(tail: str) -> bool:
    """Whether what follows sk-/pk-/rk- holds a key's run: 8 letters and digits or more
    unbroken, mixing letters and digits, or both cases changing 4 times or more."""
    for run in _ALNUM.findall(tail):
        if len(run) < MIN_KEY_RUN:
            continue
        classes = _classes(run)
        if 0 in classes and len(set(classes)) > 1:
            return True
        changes = sum(a != b for a, b in itertools.pairwise(classes))
        if set(classes) == {1, 2} and changes >= MIN_KEY_CASE_CHANGES:
            return True
    return False


def _classes(run: str) -> list[int]:
    return [0 if c.isdigit() else 1 if c.isupper() else 2 for c in run if c.isalnum()]


def _random(run: str, separators: re.Pattern[str] | None) -> bool:
    """Whether a run of one alphabet reads as random (the thresholds above)."""
    classes = _classes(run)
    kinds = set(classes)
    if kinds in ({0, 1}, {0, 2}) and separators is None and not _HEX.fullmatch(run):
        # One case, letters and digits (hex is the hex rule's: its own message)
        changes = sum(a != b for a, b in itertools.pairwise(classes))
        return changes >= max(MIN_ONE_CASE_GROUPS * 2, MIN_ONE_CASE_CHANGES * (len(classes) - 1))
    if kinds != {0, 1, 2}:
        return False
    changes = sum(a != b for a, b in itertools.pairwise(classes))
    if changes < MIN_CLASS_CHANGES * (len(classes) - 1):
        return False
    pieces = len([p for p in separators.split(run) if p]) if separators else 1
    return len(run) >= MIN_PIECE * pieces


def _identifiers(text: str) -> list[tuple[int, int, str]]:
    """Where identifiers stand: (start, stop, "host" | "path" | "ocid")."""
    zones: list[tuple[int, int, str]] = []
    if "://" in text:
        for match in _ADDRESS.finditer(text):
            zones += [(*match.span("host"), "host"), (*match.span("path"), "path")]
    if "ocid1." in text:
        zones += [(*match.span(), "ocid") for match in _OCID.finditer(text)]
    return zones


def _identifier(run: str, start: int, stop: int, zones: list[tuple[int, int, str]]) -> bool:
    """Whether a run stands where it is an identifier (the exceptions above)."""
    for first, last, zone in zones:
        if first <= start and stop <= last:
            if zone == "ocid" or _HEX.fullmatch(run):
                return True
            if zone == "host" and (run.lower() == run or run.upper() == run):
                return True
    return False


def random_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where random runs stand; a run with separators only when no run of letters and digits
    inside it is random by itself (so a path keeps its words when a token is masked)."""
    found: list[tuple[int, int]] = []
    zones = _identifiers(text)
    for run, separators in _RANDOM_RUNS:
        for match in run.finditer(text):
            start, stop = match.span()
            inside = any(start <= a and b <= stop for a, b in found)
            if inside or not _random(match.group(), separators):
                continue
            if not _identifier(match.group(), start, stop, zones):
                found.append((start, stop))
                yield start, stop


def hex_spans(text: str) -> Iterator[tuple[int, int]]:
    zones = _identifiers(text)
    for match in _HEX_RUN.finditer(text):
        run = match.group()
        mixed = any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
        if mixed and not _identifier(run, *match.span(), zones):
            yield match.span()
