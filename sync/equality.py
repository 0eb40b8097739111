"""Strict equality of plain JSON-like data: a cheap test before asking DeepDiff what differs.

True only where DeepDiff(a, b, ignore_numeric_type_changes=True) would report nothing: same
keys, same lengths, and scalars of the same type and value, except that int and float may meet
(600 == 600.0, as DeepDiff compares numbers of either type by value). True and 1 are not equal
here (DeepDiff reports that type change), nor is NaN equal to itself."""

from __future__ import annotations

from typing import Any

_NUMBERS = (int, float)


def same(a: Any, b: Any) -> bool:
    kind = type(a)
    if kind is not type(b):
        return kind in _NUMBERS and type(b) in _NUMBERS and a == b
    if kind is dict:
        return a.keys() == b.keys() and all(same(value, b[key]) for key, value in a.items())
    if kind is list or kind is tuple:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
