"""Text fleet.yaml may hold: every key and string must be characters UTF-8 can write.

YAML's escapes reach the whole UTF-16 range: `"\ud83d\ude00"` (an emoji written as a JSON-style
surrogate pair) is read as two lone surrogates, which are not characters. Nothing downstream
could write them: the digest of a route, the request to LiteLLM (which refuses the JSON), the
plan, the terminal. validate refuses each such key or string, located, with the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sync.fleet.plaintext import is_address, where
from sync.fleet.problems import Problem
from sync.fleet.yamlmarks import JsonPath

ProblemAt = Callable[[JsonPath, str, bool], Problem]


def text_problems(data: Any, problem: ProblemAt) -> Iterator[Problem]:
    """One problem per key or string of the document holding a lone surrogate."""
    if _all_ascii(data):
        return  # nearly every document: no key or string _walk would look into
    yield from _walk(data, (), problem)


def _all_ascii(data: Any) -> bool:
    """Whether every key and string of the document is ASCII (surrogate answers None for each),
    without the paths _walk builds for its messages; a value of a type other than YAML's plain
    ones is left to _walk."""
    pending = [data]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind is str:
            if not value.isascii():
                return False
        elif kind is dict:
            pending += value.keys()
            pending += value.values()
        elif kind is list:
            pending += value
        elif isinstance(value, (str, dict, list)):
            return False
    return True


def _walk(value: Any, at: JsonPath, problem: ProblemAt) -> Iterator[Problem]:
    if isinstance(value, str):
        if is_address(at):
            return  # the address rules name any character that is not printable
        if why := surrogate(value):
            yield problem(at, f"{where(at)}: {why}", False)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and (why := surrogate(key)):
                yield problem((*at, key), f"{where(at)}: a key {why}", True)
            yield from _walk(item, (*at, key), problem)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, (*at, index), problem)


def surrogate(text: str) -> str | None:
    """Why a string cannot be written as UTF-8 (a lone surrogate, e.g. from the YAML escape
    "\\ud83d"), with the fix; None when it can."""
    if text.isascii():
        return None  # nearly every key and value: no character to look at one by one
    for index, char in enumerate(text):
        code = ord(char)
        if not 0xD800 <= code <= 0xDFFF:
            continue
        pair = text[index : index + 2]
        if 0xD800 <= code <= 0xDBFF and len(pair) == 2 and 0xDC00 <= ord(pair[1]) <= 0xDFFF:
            joined = 0x10000 + ((code - 0xD800) << 10) + (ord(pair[1]) - 0xDC00)
            escape = f"\\U{joined:08X} (U+{joined:04X}, one escape)"
        else:
            escape = "its code point as \\U and 8 hex digits (\\U0001F600 for U+1F600)"
        return (
            f"holds a lone surrogate (U+{code:04X}, as YAML reads an escape like \\u{code:04x}), "
            "which is not a character and cannot be written as UTF-8; write the character "
            f"itself, or {escape} in a double-quoted string"
        )
    return None
