"""The schema's fast path says what jsonschema says.

validate checks fleet.yaml against fleet.schema.json with fastjsonschema's compiled code first
(sync/fleet/model.py passes_compiled_schema) and runs jsonschema only when that fails, so every
message of a bad file is jsonschema's as before. That is sound only if the compiled code never
passes a document jsonschema refuses: proven here on every fleet document the repository holds
(the invalid corpus, the plan, render and target cases, the examples) and on generated
documents near the valid ones (wrong types, bad names, extra and missing keys, values at the
edges of each pattern), where both verdicts must be equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any
from unittest import mock

import jsonschema
import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from sync.fleet import schema_rules
from sync.fleet.model import fleet_from_doc, passes_compiled_schema, schema
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import Marks, parse_yaml, read_yaml

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = jsonschema.Draft202012Validator(schema())
SOURCES = sorted(
    [
        ROOT / "fleet.yaml",
        *(ROOT / "tests" / "cases").rglob("*.yaml"),
        *(ROOT / "examples").glob("**/fleet*.yaml"),
    ]
)


def fleet_documents(path: Path) -> Iterator[Any]:
    """The file as validate reads it, and every mapping in it that holds a fleet (the plan and
    render cases keep theirs under fleet:)."""
    try:
        data = read_yaml(path).data
    except FleetError:
        return  # no document: a YAML error is said before the schema is asked
    yield data
    pending = [data]
    while pending:
        value = pending.pop()
        children = value.values() if isinstance(value, dict) else value
        if not isinstance(value, dict | list):
            continue
        for child in children:
            if isinstance(child, dict) and {"version", "models"} <= child.keys():
                yield child
            pending.append(child)


def same_verdict(doc: Any) -> bool:
    before = repr(doc)
    fast = passes_compiled_schema(doc)
    assert repr(doc) == before, "the compiled schema changed the document (defaults?)"
    return fast == REFERENCE.is_valid(doc)


def test_every_fleet_document_of_the_repository() -> None:
    verdicts = {True: 0, False: 0}
    for path in SOURCES:
        for doc in fleet_documents(path):
            assert same_verdict(doc), f"{path.relative_to(ROOT)}: the verdicts differ"
            verdicts[REFERENCE.is_valid(doc)] += 1
    # Both kinds, in numbers: the corpus is ~100 bad files, the cases ~50 good fleets.
    assert verdicts[True] >= 40 and verdicts[False] >= 40, verdicts


def test_the_check_can_fail() -> None:
    """A document jsonschema refuses is not passed (the fast path is not always true)."""
    good = {"version": 1, "fleet": "f", "models": {"m": {"served_model": "x", "hosts": []}}}
    assert passes_compiled_schema(good)
    for bad in ({**good, "fleet": "f\n"}, {**good, "version": True}, {**good, "x": 1}):
        assert not passes_compiled_schema(bad)
        assert not REFERENCE.is_valid(bad)


# Documents near the valid ones. Names and references as the patterns allow them...
MODEL_NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,6}", fullmatch=True)
HOST_NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,6}", fullmatch=True)
TARGET_NAMES = st.from_regex(r"[a-z0-9][a-z0-9-]{0,6}", fullmatch=True)
FLEET_NAMES = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,5}[a-z0-9])?", fullmatch=True)
SOURCES_ = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,8}", fullmatch=True)
REFS = st.from_regex(r"os\.environ/[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True)
PROVIDERS = st.from_regex(r"[a-z0-9_]{1,6}", fullmatch=True)
# ...and values at their edges: every type YAML gives, the patterns' near misses (a trailing
# newline, which Python's $ lets through; a capital, a leading dash, one character too many).
EDGES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    1.0,
    -1,
    -0.0,
    100,
    100.0,
    100.5,
    101,
    2**64,
    math.inf,
    -math.inf,
    math.nan,
    "",
    "a",
    "a\n",
    "\na",
    "A",
    "-a",
    "a-",
    "a_b",
    "a b",
    "é",
    "a" * 63,
    "a" * 64,
    "a" * 128,
    "a" * 129,
    "x" * 201,
    "os.environ/K",
    "os.environ/K\n",
    "os.environ/1K",
    "OS.ENVIRON/K",
    "sk-123",
    "tagged",
    "model_groups",
    "probe",
    "require",
    "hosted_vllm",
    "Hosted_vllm",
    "http://10.0.0.1:8000/v1",
    "my-org/llm-fleet",
    [],
    [""],
    ["a"],
    ["staging", "prod"],
    [1],
    [None],
    [[]],
    {},
    {"a": None},
    {"staging": {}},
    {"staging": None},
    {"staging": {"api_key": "os.environ/K"}},
    {"staging": {"api_key": "k"}},
    {"staging": {"rpm": 1}},
    {"A": {}},
    {"proxy_url": "http://p"},
    {"proxy_url": []},
    {"proxy_url": ["http://p"]},
]
KEYS = sorted(
    {
        *("version", "fleet", "source", "owns", "defaults", "health", "safety", "models"),
        *("targets", "provider", "api_key", "litellm_params", "model_info", "served_model"),
        *("hosts", "name", "api_base", "enabled", "proxy_url", "read_api_key", "after"),
        *("max_prune_percent", "staging", "prod", "m", "Model", "a\n", "", "x"),
    }
)
EDGE_VALUES = st.one_of(
    st.sampled_from(EDGES),
    MODEL_NAMES,
    TARGET_NAMES,
    REFS,
    st.integers(-3, 103),
    st.floats(-1, 101),
    st.text(max_size=4),
    st.lists(st.sampled_from(EDGES[:20]), max_size=2),
)
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4))
PARAMS = st.dictionaries(st.text(max_size=4), LEAVES, max_size=2)
OVERLAY = st.fixed_dictionaries(
    {}, optional={"api_key": REFS, "litellm_params": PARAMS, "model_info": PARAMS}
)
PLACEMENT = st.one_of(
    st.lists(TARGET_NAMES, min_size=1, max_size=2),
    st.dictionaries(TARGET_NAMES, OVERLAY, min_size=1, max_size=2),
)
LEVEL: dict[str, st.SearchStrategy[Any]] = {
    "provider": PROVIDERS,
    "api_key": REFS,
    "litellm_params": PARAMS,
    "model_info": PARAMS,
}
HOST = st.fixed_dictionaries(
    {"name": HOST_NAMES, "api_base": st.text(max_size=8)},
    optional={**LEVEL, "enabled": st.booleans(), "targets": PLACEMENT},
)
MODEL = st.fixed_dictionaries(
    {"served_model": st.text(min_size=1, max_size=6), "hosts": st.lists(HOST, max_size=3)},
    optional={**LEVEL, "targets": PLACEMENT},
)
TARGET = st.fixed_dictionaries(
    {"proxy_url": st.one_of(st.text(max_size=8), st.lists(st.text(max_size=8), min_size=1))},
    optional={"api_key": REFS, "read_api_key": REFS, "after": st.lists(st.text(max_size=4))},
)
PERCENT = st.one_of(st.integers(0, 100), st.floats(0, 100))
DOCUMENTS = st.fixed_dictionaries(
    {"version": st.just(1), "fleet": FLEET_NAMES, "models": st.dictionaries(MODEL_NAMES, MODEL)},
    optional={
        "source": SOURCES_,
        "owns": st.sampled_from(["tagged", "model_groups"]),
        "defaults": st.fixed_dictionaries(
            {}, optional={**LEVEL, "targets": st.dictionaries(TARGET_NAMES, OVERLAY, min_size=1)}
        ),
        "health": st.sampled_from(["probe", "require"]),
        "safety": st.fixed_dictionaries({}, optional={"max_prune_percent": PERCENT}),
        "targets": st.dictionaries(TARGET_NAMES, TARGET, min_size=1, max_size=3),
    },
)


def containers(value: Any) -> Iterator[dict[Any, Any] | list[Any]]:
    if isinstance(value, dict | list):
        yield value
        for child in value.values() if isinstance(value, dict) else value:
            yield from containers(child)


def mutate(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    """Up to three changes anywhere in the document: a value replaced, a key added, removed or
    renamed, each with a value or name from the edges."""
    for _ in range(draw(st.integers(0, 3))):
        box = draw(st.sampled_from(list(containers(doc))))
        action = draw(st.sampled_from(["replace", "add", "remove", "rename"]))
        if isinstance(box, list):
            if not box or action == "add":
                box.append(draw(EDGE_VALUES))
            elif action == "remove":
                box.pop(draw(st.integers(0, len(box) - 1)))
            else:
                box[draw(st.integers(0, len(box) - 1))] = draw(EDGE_VALUES)
            continue
        if not box or action == "add":
            box[draw(st.sampled_from(KEYS))] = draw(EDGE_VALUES)
            continue
        key = draw(st.sampled_from(sorted(box, key=repr)))
        if action == "replace":
            box[key] = draw(EDGE_VALUES)
        elif action == "remove":
            del box[key]
        else:
            box[draw(st.one_of(st.sampled_from(KEYS), MODEL_NAMES, st.text(max_size=3)))] = box.pop(
                key
            )


@st.composite
def near_valid(draw: st.DrawFn) -> dict[str, Any]:
    doc = draw(DOCUMENTS)
    mutate(draw, doc)
    return doc


@given(near_valid())
def test_generated_documents_get_jsonschemas_verdict(doc: dict[str, Any]) -> None:
    event("valid" if REFERENCE.is_valid(doc) else "refused")
    assert same_verdict(doc)


@pytest.mark.parametrize("value", EDGES, ids=repr)
@pytest.mark.parametrize(
    "place",
    [
        ("version",),
        ("fleet",),
        ("source",),
        ("owns",),
        ("health",),
        ("safety", "max_prune_percent"),
        ("defaults", "provider"),
        ("defaults", "targets"),
        ("models", "m", "served_model"),
        ("models", "m", "targets"),
        ("models", "m", "hosts", 0, "name"),
        ("models", "m", "hosts", 0, "api_key"),
        ("models", "m", "hosts", 0, "enabled"),
        ("models", "m", "hosts", 0, "targets"),
        ("targets", "staging", "proxy_url"),
        ("targets", "staging", "after"),
        ("targets", "staging", "read_api_key"),
    ],
    ids=lambda place: "-".join(map(str, place)),
)
def test_every_edge_value_at_every_rule(place: tuple[str | int, ...], value: Any) -> None:
    """Each value of EDGES in each place a rule of the schema judges, the rest valid."""
    host = {"name": "h", "api_base": "http://h"}
    doc: dict[str, Any] = {
        "version": 1,
        "fleet": "f",
        "models": {"m": {"served_model": "x", "hosts": [host]}},
        "targets": {"staging": {"proxy_url": "http://p"}},
        "safety": {},
        "defaults": {},
    }
    box: Any = doc
    for part in place[:-1]:
        box = box[part]
    box[place[-1]] = value
    assert same_verdict(doc)


def nonfinite_places(value: Any, path: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    if isinstance(value, float) and not math.isfinite(value):
        return {path}
    if not isinstance(value, dict | list):
        return set()
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return {p for key, child in items for p in nonfinite_places(child, (*path, key))}


def finite_problems(doc: Any, fast: bool) -> list[str]:
    """The not-finite problems validate says, with the compiled schema's verdict or jsonschema
    deciding (the fast path forced off)."""
    with mock.patch.object(
        schema_rules, "passes_compiled_schema", lambda data: fast and (passes_compiled_schema(data))
    ):
        said = [p.message for p in schema_rules.schema_problems(doc, Marks(), "fleet.yaml")]
    return sorted(m for m in said if "is not a finite number" in m)


@given(near_valid())
def test_every_nonfinite_number_is_refused_on_both_paths(doc: dict[str, Any]) -> None:
    """NaN and ±infinity pass both schema checks alike (JSON has none, so no rule of the
    schema refuses one: NaN is neither below a minimum nor above a maximum); validate refuses
    each once, at its place, whichever path judged the rest."""
    places = nonfinite_places(doc)
    event("not finite" if places else "finite")
    fast, slow = finite_problems(doc, True), finite_problems(doc, False)
    assert fast == slow and len(fast) == len(places)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=repr)
@pytest.mark.parametrize(
    "place",
    [
        ("version",),
        ("safety", "max_prune_percent"),
        ("models", "m", "hosts", 0, "enabled"),
        ("models", "m", "litellm_params", "rpm"),
        ("models", "m", "model_info", "deep", 0),
        ("defaults", "targets", "staging", "model_info", "x"),
        ("targets", "staging", "after", 0),
    ],
    ids=lambda place: "-".join(map(str, place)),
)
def test_a_nonfinite_number_anywhere_is_one_located_problem(
    place: tuple[str | int, ...], value: float
) -> None:
    doc: dict[str, Any] = {
        "version": 1,
        "fleet": "f",
        "models": {"m": {"served_model": "x", "hosts": [{"name": "h", "api_base": "http://h"}]}},
        "targets": {"staging": {"proxy_url": "http://p"}},
        "defaults": {"targets": {"staging": {}}},
    }
    box: Any = doc
    for part, after in pairwise(place):
        if isinstance(box, dict) and part not in box:
            box[part] = [None] if isinstance(after, int) else {}
        box = box[part]
    box[place[-1]] = value
    text = yaml.safe_dump(doc)
    with pytest.raises(FleetError) as refused:
        fleet_from_doc(parse_yaml(text, "fleet.yaml"), "fleet.yaml")
    [problem] = refused.value.problems
    assert "is not a finite number" in problem.message and problem.line > 1
