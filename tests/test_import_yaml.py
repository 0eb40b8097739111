"""The YAML `fleet-sync import` writes reads back, through the reader `validate` and `plan` use
(PyYAML, YAML 1.1), as exactly the values import meant: floats as numbers of the same value,
strings as the same strings (not `on` → true, `1:20` → 80, `1e-06` → a string), keys too."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sync.edit.import_yaml import SCHEMA_URL, fleet_text, float_text
from sync.fleet.yamlmarks import parse_yaml

FLOATS = [
    1e-06,  # ruamel alone writes 1e-06: a string to PyYAML
    2.5e-07,
    1.5e-10,
    1e-300,
    5e-324,  # the smallest subnormal
    1e16,  # the first power of ten repr writes with an exponent
    1e20,
    1.7976931348623157e308,
    123456789012345678.0,
    600.0,  # integral: stays a float
    0.0,
    -0.0,
    -3.5e-05,
    0.1,
    2.5,
]


def read_back(document: dict[str, Any]) -> Any:
    """The document through fleet_text and back through the reader validate uses."""
    return parse_yaml(fleet_text(document, {}), "fleet.yaml").data


def doc(values: Any) -> dict[str, Any]:
    return {"version": 1, "fleet": "f", "models": {"m": {"litellm_params": {"v": values}}}}


@pytest.mark.parametrize("value", FLOATS, ids=repr)
def test_every_float_shape_reads_back_as_the_same_number(value: float) -> None:
    back = read_back(doc(value))["models"]["m"]["litellm_params"]["v"]
    assert isinstance(back, float) and back == value
    assert math.copysign(1.0, back) == math.copysign(1.0, value)  # -0.0 keeps its sign
    assert yaml.safe_load(float_text(value)) == value


@pytest.mark.parametrize(
    ("value", "text"),
    [(1e-06, "1.0e-06"), (1e20, "1.0e+20"), (600.0, "600.0"), (2.5e-07, "2.5e-07")],
)
def test_floats_carry_a_dot_in_the_mantissa(value: float, text: str) -> None:
    assert float_text(value) == text


def test_infinity_and_nan_are_written_as_yaml_reads_them() -> None:
    """Import leaves them on the route (fleet.yaml cannot send them to LiteLLM as JSON); the
    writer still writes them as numbers, never as a string a value could be confused with."""
    assert [yaml.safe_load(float_text(v)) for v in (math.inf, -math.inf)] == [math.inf, -math.inf]
    assert math.isnan(yaml.safe_load(float_text(math.nan)))


@pytest.mark.parametrize(
    "text",
    [
        *("on", "off", "yes", "no", "y", "n", "True", "~", "null", "1:20", "190:20:30", "0o17"),
        *("0x1A", "1_000", ".5", "+1", "1e-06", "1.0e-06", "<<", "=", "2024-02-01", ".inf"),
        *("-.nan", "", "a\x85b", "a\u2028b", "\ufeffx", "tab\there", "line\nbreak", " padded "),
    ],
)
def test_strings_that_read_as_something_else_are_quoted(text: str) -> None:
    back = read_back(doc({text: [text]}))["models"]["m"]["litellm_params"]["v"]
    assert back == {text: [text]}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_any_json_value_reads_back_as_written(value: Any) -> None:
    assert read_back(doc(value))["models"]["m"]["litellm_params"]["v"] == value


@given(st.text(st.characters(min_codepoint=32, max_codepoint=126) | st.just("\n"), min_size=1))
def test_a_model_comment_cannot_write_yaml(line: str) -> None:
    """Comment lines are import's own text; even an odd one stays a comment."""
    text = fleet_text(doc(1), {"m": [line]})
    assert parse_yaml(text, "fleet.yaml").data == doc(1)


def test_the_schema_line_points_at_the_published_schema() -> None:
    """import's first line names the schema where a config repository's editor can fetch it:
    the schema's own $id (the raw file at the release tag), the URL the examples carry, never a
    relative path no config repository has."""
    root = Path(__file__).resolve().parent.parent
    schema = json.loads((root / "schema" / "fleet.schema.json").read_text(encoding="utf-8"))
    first = fleet_text(doc(1), {}).splitlines()[0]
    assert first == f"# yaml-language-server: $schema={schema['$id']}"
    assert schema["$id"] == SCHEMA_URL
    assert SCHEMA_URL.startswith("https://raw.githubusercontent.com/fleet-sync-dev/fleet-sync/v1/")
    for example in (root / "examples" / "config-repo").rglob("fleet.yaml"):
        assert example.read_text(encoding="utf-8").splitlines()[0] == first, example
