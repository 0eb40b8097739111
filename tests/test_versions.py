"""LiteLLM versions on plain data: parsing, the tested range, what each release can do, and how
plans show the version (issue 10)."""

from __future__ import annotations

import json

import pytest

from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import render
from sync.fleet.model import fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.litellm.releases import TESTED, TESTED_RANGE, LiteLLMRelease, parse
from sync.report.markdown import plan_markdown, pr_markdown
from sync.report.text import plan_text


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1.110.2", (1, 110, 2)),
        ("v1.98.1", (1, 98, 1)),
        ("1.108.7.post1", (1, 108, 7)),
        ("1.111.0-stable", (1, 111, 0)),
        (" 1.2.3 ", (1, 2, 3)),
        ("main", None),
        ("1.108", None),
        ("", None),
    ],
)
def test_parse(text: str, number: tuple[int, int, int] | None) -> None:
    assert parse(text) == number


@pytest.mark.parametrize(
    ("version", "in_place"),
    [("1.98.1", False), ("1.108.7", False), ("1.108.99", False), ("1.109.0", True),
     ("1.110.2", True), ("2.0.0", True), (None, False), ("nightly", False)],
)  # fmt: skip
def test_removal_in_place_from_1_109(version: str | None, in_place: bool) -> None:
    assert LiteLLMRelease(version).removes_params_in_place is in_place


@pytest.mark.parametrize(
    ("version", "tested"),
    [("1.98.0", False), ("1.98.1", True), ("1.100.3", True), ("1.110.2", True),
     ("1.110.3", False), ("1.96.0", False), (None, False)],
)  # fmt: skip
def test_tested_range_is_the_matrix(version: str | None, tested: bool) -> None:
    release = LiteLLMRelease(version)
    assert release.tested is tested
    assert (release.warning() is None) is tested


def test_warnings_name_the_tested_range() -> None:
    assert TESTED[0] in TESTED_RANGE and TESTED[-1] in TESTED_RANGE
    newer = LiteLLMRelease("1.120.0").warning()
    assert newer is not None and "LiteLLM 1.120.0" in newer and TESTED_RANGE in newer
    unknown = LiteLLMRelease(None).warning()
    assert unknown is not None and "could not read" in unknown and TESTED_RANGE in unknown


def plan(version: str | None) -> Plan:
    text = "version: 1\nfleet: f\nmodels:\n  m:\n    served_model: org/m\n"
    text += "    hosts: [{name: a, api_base: 'http://h:1/v1'}]\n"
    fleet = fleet_from_doc(parse_yaml(text, "fleet.yaml"), "fleet.yaml")
    return make_plan(fleet, render(fleet), [], litellm_version=version)


def test_plans_show_the_version_and_do_not_hash_it() -> None:
    known, unknown = plan("1.110.2"), plan(None)
    assert known.hash == unknown.hash  # an upgraded proxy does not make a reviewed plan stale
    assert plan_text(known).splitlines()[0].endswith("  LiteLLM 1.110.2")
    assert plan_text(unknown).splitlines()[0].endswith("  LiteLLM version unknown")
    assert "· LiteLLM `1.110.2`</sub>" in plan_markdown(known)  # the proxy says it: code
    assert json.loads(json.dumps(known.unredacted_json()))["litellm_version"] == "1.110.2"
    assert unknown.unredacted_json()["litellm_version"] is None


def test_markdown_warns_on_an_untested_version_only() -> None:
    assert "[!WARNING]" not in plan_markdown(plan("1.108.7"))
    assert "[!WARNING]" not in plan_markdown(plan(None))  # said on stderr; nothing to name
    newer = plan("1.200.0")
    for text in (plan_markdown(newer), pr_markdown(newer, newer.changes, (), "base")):
        assert "> [!WARNING]" in text and "LiteLLM 1.200.0" in text and TESTED_RANGE in text
