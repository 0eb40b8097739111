"""The one parser for JSON fleet-sync did not write: every answer of the proxy, a probed host or
GitHub, and a saved plan file handed back to apply. Bounded in size and depth, and every failure
is a ValueError saying what is wrong: a hostile or broken peer gets a verdict or a one-line
error, never a traceback (json.loads of ~200 KB of nested brackets raises RecursionError), a
hang or a plan built on garbage.
"""

from __future__ import annotations

import json
from itertools import compress
from typing import Any

# LiteLLM's answers are ~5 levels deep; fleet-sync walks values recursively (diff, redaction).
MAX_JSON_DEPTH = 64
# The largest answer fleet-sync reads whole: a listing page of the proxy (its client caps the
# stream at the same size). Callers that expect less pass less.
MAX_JSON_BYTES = 16 * 2**20
_CONTAINERS = frozenset({dict, list})


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
    return data


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
