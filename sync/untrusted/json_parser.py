"""The one parser for JSON fleet-sync did not write: every answer of the proxy, a probed host or
GitHub, and a saved plan file handed back to apply. Bounded in size and depth, and every failure
is a ValueError saying what is wrong: a hostile or broken peer gets a verdict or a one-line
error, never a traceback (json.loads of ~200 KB of nested brackets raises RecursionError), a
hang or a plan built on garbage.

A lone surrogate escape (``"\\ud800"``) is refused too: json.loads accepts it, and the string it
makes cannot be written anywhere (UTF-8 has no form for it), so a route name holding one broke
every output of a plan. A valid pair is one character once parsed, so a surrogate left in a
parsed string is always a lone one; the raw bytes are scanned for such an escape first (C speed),
and only an answer that has one is walked.

msgspec's decoder reads a body first (a listing page in ~60 % of json.loads's time). Where it
returns, it returns what json.loads would (the same dicts, lists, exact ints, correctly rounded
floats; the last of duplicate keys) and it has refused every lone surrogate, escaped or
encoded. Anything it refuses (NaN, a number out of its range, UTF-16, a byte order mark,
garbage, a lone surrogate) is read again by json.loads exactly as before, so the value or the
error is json.loads's, word for word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from itertools import compress
from typing import Any

# LiteLLM's answers are ~5 levels deep; fleet-sync walks values recursively (diff, redaction).
MAX_JSON_DEPTH = 64
# The largest answer fleet-sync reads whole: a listing page of the proxy (its client caps the
# stream at the same size). Callers that expect less pass less.
MAX_JSON_BYTES = 16 * 2**20
_CONTAINERS = frozenset({dict, list})
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# A surrogate encoded in UTF-8 starts so: json.loads decodes bytes with surrogatepass.
_SURROGATE_LEAD = b"\xed"
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_json(
    body: bytes,
    *,
    max_bytes: int = MAX_JSON_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    what: str = "the answer",
) -> Any:
    """`body`'s JSON (None for an empty body); ValueError for a body larger than `max_bytes`,
    garbage, or nesting deeper than `max_depth`. `what` names the body in the message."""
    if len(body) > max_bytes:
        raise ValueError(f"{what} is larger than {_size(max_bytes)}")
    if not body.strip():
        return None
    deep = f"{what} is nested deeper than {max_depth} levels"
    strict, refused = _strict()
    try:
        data = strict(body)
    except (refused, RecursionError):
        return _stdlib(body, max_depth, what)
    if _depth_exceeds(data, max_depth):
        raise ValueError(deep)
    return data


@cache
def _strict() -> tuple[Callable[[bytes], Any], type[Exception]]:
    """msgspec's JSON decoder and its error (imported at the first answer: not at start-up)."""
    import msgspec

    return msgspec.json.Decoder().decode, msgspec.MsgspecError


def _stdlib(body: bytes, max_depth: int, what: str) -> Any:
    """json.loads's reading of a body msgspec refused, bounded and checked alike."""
    deep = f"{what} is nested deeper than {max_depth} levels"
    try:
        data = json.loads(body)
    except RecursionError:
        raise ValueError(deep) from None
    except json.JSONDecodeError as exc:
        where = f"{exc.msg[:1].lower()}{exc.msg[1:]} at line {exc.lineno} column {exc.colno}"
        raise ValueError(f"{what} is not JSON: {where}") from None
    except ValueError:  # not UTF-8 (or -16/-32), a number of more than 4,300 digits
        raise ValueError(f"{what} is not JSON") from None
    if _depth_exceeds(data, max_depth):
        raise ValueError(deep)
    if _may_hold_surrogate(body) and _holds_surrogate(data):
        raise ValueError(f"{what} holds a lone surrogate escape (\\ud800-\\udfff): not text")
    return data


def _may_hold_surrogate(body: bytes) -> bool:
    """Whether the raw body has a surrogate escape (json.loads also reads UTF-16 and UTF-32,
    where the escape's bytes differ: such a body is always walked)."""
    if json.detect_encoding(body) not in ("utf-8", "utf-8-sig"):
        return True
    # Two scans: one pattern with both alternatives is ten times slower than the two.
    return _SURROGATE_LEAD in body or _SURROGATE_ESCAPE.search(body) is not None


def _holds_surrogate(value: Any) -> bool:
    """Whether a string or a key anywhere in `value` holds a surrogate (depth already bounded)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            if _SURROGATE.search(item):
                return True
        elif type(item) is dict:
            stack += item.keys()
            stack += item.values()
        elif type(item) is list:
            stack += item
    return False


def _size(limit: int) -> str:
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether a container sits deeper than `limit` (the outermost is at depth 1). Level by
    level, carrying containers only, sorted out at C speed: a 10,000-route listing holds two
    million scalars. (json.loads makes exact dicts and lists, so type() is enough.)"""
    is_container = _CONTAINERS.__contains__
    level = [value] if is_container(type(value)) else []
    depth = 1
    while level:
        if depth > limit:
            return True
        deeper: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            deeper += compress(children, map(is_container, map(type, children)))
        level = deeper
        depth += 1
    return False
