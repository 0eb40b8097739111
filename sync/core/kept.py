"""Values worked out from an object, kept as long as that object lives.

Routes are values nothing changes (their fields are read-only Mappings) but unhashable (they
hold dicts), so what a plan works out from one route (its leaves, a comparison) is kept by the
route's identity: with a weak reference to it, so the entry goes when the route goes and its id
never names another object while kept."""

from __future__ import annotations

import weakref
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class KeptBy(Generic[K, V]):
    def __init__(self) -> None:
        self._kept: dict[int, tuple[weakref.ref[K], V]] = {}

    def get(self, key: K) -> V | None:
        kept = self._kept.get(id(key))
        return kept[1] if kept is not None and kept[0]() is key else None

    def put(self, key: K, value: V) -> V:
        index = id(key)
        kept = self._kept

        def gone(ref: weakref.ref[K]) -> None:
            if (entry := kept.get(index)) is not None and entry[0] is ref:
                del kept[index]

        kept[index] = (weakref.ref(key, gone), value)
        return value

    def __len__(self) -> int:
        return len(self._kept)
