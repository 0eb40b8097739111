"""LiteLLM's declared types (sync/litellm/declared.py and its data files) on plain data: the
pure check never accepts what the release's pydantic refused, validate checks the newest
supported release and plan the release the proxy reports, a key LiteLLM does not declare keeps
the other rules. On the real proxy: tests/test_declared_types_live.py; the data files equal
what scripts/litellm-types reads from each installed release: test_data_files_are_litellms."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from sync.fleet.model import Fleet, fleet_from_doc, release_problems
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import parse_yaml
from sync.litellm.declared import TYPES_DIR, accepts, release_for, types_of
from sync.litellm.normalise import same
from sync.litellm.releases import TESTED

from .support.proxyharness import harness_home

ROOT = Path(__file__).resolve().parent.parent


def load(litellm_params: Mapping[str, object], release: str | None = "newest") -> Fleet:
    host = {"name": "a", "api_base": "http://10.0.0.1:8000/v1", "litellm_params": litellm_params}
    doc = {"version": 1, "fleet": "f", "models": {"m": {"served_model": "o/m", "hosts": [host]}}}
    return fleet_from_doc(
        parse_yaml(yaml.safe_dump(doc, sort_keys=False), "f.yaml"), "f.yaml", litellm=release
    )


@pytest.mark.parametrize("release", TESTED)
def test_pure_check_accepts_only_what_pydantic_took_and_reads_back(release: str) -> None:
    """The file's coercion table is pydantic's verdict (lax) on each probe, per base type."""
    table = json.loads((TYPES_DIR / f"{release}.json").read_text())["coercion"]
    assert set(table) == {"int", "float", "str", "bool"}
    for base, rows in table.items():
        for value, became in rows:
            if accepts({"t": base}, value):
                assert became != "refused", (base, value)
                assert same(value, became), (base, value, became)


def test_pydantic_lax_facts_the_check_rests_on() -> None:
    rows = {
        json.dumps(v): b
        for v, b in json.loads((TYPES_DIR / "1.110.2.json").read_text())["coercion"]["int"]
    }
    assert rows['"60"'] == 60  # "60" passes for an integer ...
    assert rows["60.5"] == "refused"
    strs = {
        json.dumps(v): b
        for v, b in json.loads((TYPES_DIR / "1.110.2.json").read_text())["coercion"]["str"]
    }
    assert strs["12345"] == "refused"  # ... an integer never for a string


def test_one_data_file_per_tested_release() -> None:
    assert sorted(p.stem for p in TYPES_DIR.glob("*.json")) == sorted(TESTED)
    for release in TESTED:
        assert types_of(release).release == release


@pytest.mark.parametrize(
    ("version", "release"),
    [(None, "1.110.2"), ("1.98.1", "1.98.1"), ("1.108.7", "1.108.7"), ("1.109.3", "1.108.7"),
     ("1.120.0", "1.110.2"), ("1.90.0", "1.98.1"), ("garbage", "1.110.2"),
     ("v1.110.2-stable", "1.110.2")],
)  # fmt: skip
def test_the_release_whose_types_apply(version: str | None, release: str) -> None:
    assert release_for(version) == release


def test_validate_refuses_located_naming_the_type() -> None:
    with pytest.raises(FleetError) as caught:
        load({"rpm": "sixty", "organization": 12345, "tpm": "1000", "max_tokens": "x"})
    assert [str(p) for p in caught.value.problems] == [
        "f.yaml:10:14: models.m.hosts[0].litellm_params.rpm: 'sixty' is not an integer; "
        "LiteLLM 1.110.2 declares rpm: int | None",
        "f.yaml:11:23: models.m.hosts[0].litellm_params.organization: 12345 is not a string; "
        "LiteLLM 1.110.2 declares organization: str | None",
    ]


@pytest.mark.parametrize("value", [60, "60", " 60 ", 60.0, True, "+60"])
def test_what_pydantic_coerces_and_reads_back_passes(value: object) -> None:
    load({"rpm": value})


def test_plan_checks_the_release_the_proxy_reports() -> None:
    """A key 1.110.2 declares and 1.98.1 does not: 1.98.1 stores any value (today's rules)."""
    params = {"allow_legacy_cloud_file_ids": "maybe"}
    assert types_of("1.98.1").declared("litellm_params", "allow_legacy_cloud_file_ids") is None
    with pytest.raises(FleetError, match=r"LiteLLM 1\.110\.2 declares allow_legacy_cloud_file_ids"):
        load(params)  # validate, no proxy: the newest supported
    fleet = load(params, release=None)  # plan and apply: checked once the proxy is read
    assert release_problems(fleet, "1.98.1") == ()
    (problem,) = release_problems(fleet, "1.110.2")
    assert (problem.line, problem.col) == (10, 38)
    assert "'maybe' is not true or false; LiteLLM 1.110.2 declares" in problem.message


def test_a_key_litellm_refuses_in_any_body_is_refused() -> None:
    """1.108 and later answer 401 to a server-owned identity-federation key, whatever its value."""
    fleet = load({"token_exchange_scope": "x"}, release=None)
    assert release_problems(fleet, "1.98.1") == ()
    (problem,) = release_problems(fleet, "1.108.7")
    assert "LiteLLM 1.108.7 refuses token_exchange_scope in a request body" in problem.message


def test_a_masked_keys_value_is_not_echoed() -> None:
    masked = next(
        k for k, d in types_of("1.110.2").sections["litellm_params"].items()
        if "secret" in k and d.says == "str | None" and k not in types_of("1.110.2").refused
    )  # fmt: skip
    with pytest.raises(FleetError) as caught:
        load({masked: 987654321})
    assert "987654321" not in str(caught.value) and "the value is not a string" in str(caught.value)


@pytest.mark.litellm_matrix
def test_data_files_are_litellms(litellm_version: str) -> None:
    """scripts/litellm-types --check with the release's own Python: the file is what LiteLLM's
    pydantic models declare (and the pure check held against pydantic on every probe)."""
    python = harness_home(litellm_version) / "venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), str(ROOT / "scripts" / "litellm-types"), "--check"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "up to date" in done.stdout
