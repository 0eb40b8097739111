"""Every pattern of the published schema anchors at the true end of the string (issue 8).

jsonschema matches patterns with Python's re.search, where `$` also matches before a trailing
newline: `fleet: "gpu-fleet\\n"` passed. The corpus (tests/cases/invalid/66-67) shows it through
validate; this checks every pattern of the schema, so a new one cannot forget the anchor."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sync.fleet.model import SCHEMA_PATH

ROOT = Path(__file__).resolve().parent.parent
# A value each pattern must accept, by the schema path of the pattern.
VALID = {
    "properties/fleet": "gpu-fleet",
    "$defs/model_name": "qwen3.8-27b",
    "$defs/provider": "hosted_vllm",
    "$defs/api_key": "os.environ/VLLM_API_KEY",
    "$defs/host/properties/name": "runpod-a",
    "properties/source": "acme/llm-config",
    "$defs/target_name": "prod-eu-1",
}


def patterns(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield path, value
            else:
                yield from patterns(value, f"{path}/{key}" if path else key)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from patterns(value, f"{path}/{index}")


SCHEMA = json.loads((ROOT / "schema" / "fleet.schema.json").read_text(encoding="utf-8"))
PATTERNS = dict(patterns(SCHEMA))


def test_every_pattern_has_a_sample() -> None:
    assert set(PATTERNS) == set(VALID)


@pytest.mark.parametrize("where", sorted(VALID))
@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", "\nx"])
def test_pattern_refuses_what_follows_a_valid_value(where: str, tail: str) -> None:
    pattern = PATTERNS[where]
    assert re.search(pattern, VALID[where])  # how jsonschema applies it
    assert re.search(pattern, VALID[where] + tail) is None


def test_the_package_ships_the_published_schema() -> None:
    """sync/fleet/fleet.schema.json (what validate reads) is the published schema itself."""
    assert json.loads(SCHEMA_PATH.read_text(encoding="utf-8")) == SCHEMA


def test_jsonschema_refuses_a_fleet_name_with_a_trailing_newline() -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA["properties"]["fleet"])
    assert validator.is_valid("gpu-fleet")
    assert not validator.is_valid("gpu-fleet\n")
