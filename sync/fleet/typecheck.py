"""fleet.yaml's litellm_params and model_info values against the types LiteLLM's request models
declare (sync/litellm/declared.py, per release): a value LiteLLM would refuse with a 422 is a
located error naming the type it wants. A key LiteLLM does not declare keeps the other rules.

validate checks against the newest supported release; plan and apply against the release the
proxy reports, once it is read (the values are kept, with their places, on the Fleet).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sync.fleet.plaintext import where
from sync.fleet.problems import Problem
from sync.fleet.runner import levels, with_overlays
from sync.fleet.schema_rules import is_nonfinite
from sync.fleet.sections import RESERVED_INFO, SET_ELSEWHERE
from sync.fleet.yamlmarks import JsonPath, Marks
from sync.litellm.declared import SECTIONS, release_for, types_of


@dataclass(frozen=True)
class TypedValues:
    """fleet.yaml's litellm_params and model_info values (path, section, key, value), and the
    marks that locate them (looked up only for a value refused: the fast path stays fast)."""

    file: str = ""
    marks: Marks | None = None
    items: tuple[tuple[JsonPath, str, str, Any], ...] = ()


def typed_values(data: dict[str, Any], marks: Marks, file: str) -> TypedValues:
    """Every value LiteLLM types: each level's (and overlay's) own litellm_params and
    model_info keys, but those fleet-sync sets itself (refused at their key already)."""
    found: list[tuple[JsonPath, str, str, Any]] = []
    for at, level in levels(data):
        for section_at, section in with_overlays(at, level):
            for name in SECTIONS:
                values = section.get(name)
                if not isinstance(values, dict) or not values:
                    continue
                for key, value in values.items():
                    if _said_elsewhere(name, key, value):
                        continue
                    found.append(((*section_at, name, key), name, key, value))
    return TypedValues(file, marks, tuple(found))


_PLAIN = frozenset({str, int, bool})  # nearly every value: neither null nor NaN inside


def _said_elsewhere(section: str, key: Any, value: Any) -> bool:
    """A null, a NaN or infinity, or a key fleet-sync sets itself: refused by their own rules."""
    if type(key) is not str:
        return True
    if type(value) not in _PLAIN and _holds_null_or_nonfinite(value):
        return True
    if section == "litellm_params":
        return key in SET_ELSEWHERE
    return RESERVED_INFO.match(key) is not None


def _holds_null_or_nonfinite(value: Any) -> bool:
    if value is None or is_nonfinite(value):
        return True
    if isinstance(value, dict):
        return any(_holds_null_or_nonfinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_null_or_nonfinite(v) for v in value)
    return False


def type_problems(values: TypedValues, version: str | None) -> Iterator[Problem]:
    """Each value the release the proxy runs (`version`; None: the newest supported) would
    refuse, located at the value."""
    types = types_of(release_for(version))
    for path, section, key, value in values.items:
        if why := types.problem(section, key, value):
            line, col = values.marks.of_value(path) if values.marks else (1, 1)
            yield Problem(values.file, line, col, f"{where(path)}: {why}")
