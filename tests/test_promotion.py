"""Runs over fleet.yaml's targets on plain data: the run's exit code from its targets', the
promotion gate, and the resolver of each target's proxy and key (issue 17)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from sync.core.promotion import SEVERITY, Hold, converged, hold, worst
from sync.fleet.model import Defaults, Fleet
from sync.fleet.targets import Target
from sync.run.console import Exit
from sync.run.endpoint import ProxyOptions, TargetUnresolved, resolve, unused_environment
from sync.run.outcome import each
from sync.run.reading import select
from sync.run.saved import check_saved_target, read_saved_targets

if TYPE_CHECKING:
    from sync.core.plan import Plan

STAGING = Target("staging", "os.environ/STG_URL", "os.environ/STG_KEY", None, ())
PROD = Target(
    "prod", "os.environ/PRD_URLS", "os.environ/PRD_KEY", "os.environ/PRD_READ", ("staging",)
)
EU = Target("eu", ("http://127.0.0.1:1", "http://127.0.0.1:2"), "os.environ/EU_KEY", None, ())
ENV = {
    "STG_URL": "http://127.0.0.1:4000",
    "STG_KEY": "sk-staging-key-0123456789",
    "PRD_URLS": "http://127.0.0.1:5000, http://127.0.0.1:5001",
    "PRD_KEY": "sk-prod-write-0123456789",
    "PRD_READ": "sk-prod-read-0123456789",
    "EU_KEY": "sk-eu-key-0123456789",
}


def fleet(*targets: Target) -> Fleet:
    empty = Fleet("f", "tagged", Defaults("hosted_vllm", None, {}, {}), 30.0, ())
    return replace(empty, targets=targets)


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ([], 0),
        ([0, 0], 0),
        ([0, 2], 2),
        ([2, 3], 3),
        ([3, 1], 1),
        ([1, 4], 1),  # an error (state unknown) before a held or incomplete target
        ([4, 3], 4),
        ([4, 0, 2, 3, 1], 1),
        ([2, 1], 1),  # an unreachable target is never hidden behind "changes"
    ],
)
def test_the_run_exits_with_its_most_severe_target(codes: list[int], expected: int) -> None:
    assert worst(codes) == expected
    assert SEVERITY == (1, 4, 3, 2, 0)


def test_an_exit_code_outside_the_order_is_a_bug_not_a_guess() -> None:
    with pytest.raises(ValueError, match="130"):
        worst([0, 130])


def test_only_exit_0_is_converged() -> None:
    assert converged(0)
    assert not any(converged(code) for code in (1, 2, 3, 4))


def test_a_target_is_held_while_a_selected_predecessor_did_not_converge() -> None:
    selected = {"staging", "prod"}
    for code in (1, 3, 4):
        gate = hold("prod", ("staging",), selected, {"staging": code})
        assert gate == Hold("prod", ("staging",))
        assert gate.message == "held: staging did not converge"
    assert hold("prod", ("staging",), selected, {"staging": 0}) is None


def test_a_held_target_holds_its_own_dependants() -> None:
    selected = {"staging", "prod", "prod-eu"}
    codes = {"staging": 4}
    first = hold("prod", ("staging",), selected, codes)
    assert first is not None
    codes["prod"] = 4  # held: not converged
    second = hold("prod-eu", ("prod", "staging"), selected, codes)
    assert second is not None and second.message == "held: prod, staging did not converge"


def test_a_predecessor_outside_the_run_is_no_gate() -> None:
    # --target prod alone: the workflow's job dependency (needs: staging) is the gate.
    assert hold("prod", ("staging",), {"prod"}, {}) is None


def test_a_selected_predecessor_without_a_result_holds() -> None:
    assert hold("prod", ("staging",), {"staging", "prod"}, {}) is not None


def test_resolve_reads_references_and_picks_the_key_by_what_the_command_does() -> None:
    assert resolve(STAGING, ENV, write=False).urls == ("http://127.0.0.1:4000",)
    assert resolve(STAGING, ENV, write=False).key == ENV["STG_KEY"]  # no read key: api_key
    assert resolve(STAGING, ENV, write=False).key_name == "STG_KEY (target staging's api_key)"
    prod_read = resolve(PROD, ENV, write=False)
    assert prod_read.urls == ("http://127.0.0.1:5000", "http://127.0.0.1:5001")
    assert prod_read.key == ENV["PRD_READ"]
    assert prod_read.key_name == "PRD_READ (target prod's read_api_key)"
    assert resolve(PROD, ENV, write=True).key == ENV["PRD_KEY"]
    assert resolve(EU, ENV, write=True).urls == EU.proxy_url  # literal URLs as written


@pytest.mark.parametrize("missing", ["PRD_URLS", "PRD_KEY"])
@pytest.mark.parametrize("empty", [False, True])
def test_a_missing_or_empty_variable_names_the_variable_never_a_value(
    missing: str, empty: bool
) -> None:
    env = {k: v for k, v in ENV.items() if k != missing}
    if empty:
        env[missing] = "  "
    with pytest.raises(TargetUnresolved) as caught:
        resolve(PROD, env, write=True)
    message = str(caught.value)
    assert missing in message and "target prod" in message
    assert ("is empty" if empty else "is not set") in message
    assert not any(value in message for value in ENV.values())


def test_a_key_http_cannot_send_is_refused_naming_the_reference() -> None:
    with pytest.raises(TargetUnresolved, match=r"STG_KEY.*cannot be sent") as caught:
        resolve(STAGING, {**ENV, "STG_KEY": "sk-line\nbreak-0123456789"}, write=False)
    assert "sk-line" not in str(caught.value)


def test_a_target_without_a_write_key_cannot_apply() -> None:
    reader = Target("ro", "http://127.0.0.1:1", None, "os.environ/PRD_READ", ())
    assert resolve(reader, ENV, write=False).key == ENV["PRD_READ"]
    with pytest.raises(TargetUnresolved, match="has no api_key"):
        resolve(reader, ENV, write=True)


def test_overrides_replace_the_url_and_the_key() -> None:
    got = resolve(PROD, {}, write=True, override=ProxyOptions(("http://127.0.0.1:9",), "sk-x" * 4))
    assert got.urls == ("http://127.0.0.1:9",) and got.key == "sk-x" * 4


def test_select_keeps_promotion_order_and_lists_the_declared_on_an_unknown_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    both = fleet(STAGING, PROD)
    assert select(both, ()) == (STAGING, PROD)
    assert select(both, ("prod", "staging", "prod")) == (STAGING, PROD)
    assert select(both, ("prod",)) == (PROD,)
    with pytest.raises(Exit) as caught:
        select(both, ("prdo",))
    assert caught.value.code == 1
    assert "unknown target(s) prdo; fleet.yaml declares: staging, prod" in capsys.readouterr().err


def test_target_on_a_fleet_without_targets_is_an_error() -> None:
    assert select(fleet(), ()) == ()
    with pytest.raises(Exit):
        select(fleet(), ("prod",))


def test_unused_proxy_variables_are_named_unless_a_target_references_them() -> None:
    env = {"LITELLM_PROXY_URL": "http://127.0.0.1:1", "LITELLM_PROXY_API_KEY": "k"}
    assert unused_environment([STAGING], env) == ["LITELLM_PROXY_URL", "LITELLM_PROXY_API_KEY"]
    own = Target("own", "os.environ/LITELLM_PROXY_URL", "os.environ/STG_KEY", None, ())
    assert unused_environment([own], env) == ["LITELLM_PROXY_API_KEY"]


def test_each_returns_outcomes_in_target_order_whatever_finishes_first() -> None:
    import threading

    last_done = threading.Event()

    def work(name: str | None) -> str:
        if name == "staging":  # the first target waits for the last one to finish
            assert last_done.wait(10)
        if name == "eu":
            last_done.set()
        return str(name).upper()

    outcomes = each(["staging", "prod", "eu"], work)
    assert [o.target for o in outcomes] == ["staging", "prod", "eu"]
    assert [o.value for o in outcomes] == ["STAGING", "PROD", "EU"]


def test_one_target_failing_stops_only_that_target(capsys: pytest.CaptureFixture[str]) -> None:
    def work(name: str | None) -> str:
        if name == "prod":
            raise TargetUnresolved("target prod: proxy_url: the variable PRD_URLS is not set")
        return "ok"

    outcomes = each(["staging", "prod", "eu"], work)
    assert [(o.code, o.value) for o in outcomes] == [(0, "ok"), (1, None), (0, "ok")]
    assert "[prod] error: target prod: proxy_url" in capsys.readouterr().err


def test_a_saved_plan_over_targets_is_read_per_target(tmp_path: Path) -> None:
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps({"version": 1, "fleet": "f", "targets": [
        {"target": "staging", "hash": "sha256:a"},
        {"target": "prod", "error": "unreachable", "exit": 1},
    ]}))  # fmt: skip
    read = read_saved_targets(saved)
    assert read.fleet == "f" and read.hashes == {"staging": "sha256:a", "prod": None}
    check_saved_target(
        read, "staging", cast("Plan", SimpleNamespace(fleet="f", hash="sha256:a", binding=None))
    )
    for name, moved, says in (
        ("prod", "sha256:a", "holds no plan for target prod"),  # not planned when saved
        ("eu", "sha256:a", "holds no plan for target eu"),
        ("staging", "sha256:b", "stale for target staging"),
    ):
        with pytest.raises(Exit) as caught:
            check_saved_target(
                read, name, cast("Plan", SimpleNamespace(fleet="f", hash=moved, binding=None))
            )
        assert caught.value.code == 3 and says in (caught.value.message or "")


@pytest.mark.parametrize(
    ("document", "code", "says"),
    [
        ({"version": 1, "fleet": "f", "hash": "sha256:a"}, 3, "a plan without targets"),
        ({"fleet": "f"}, 1, "not a saved fleet-sync plan"),
        ([1, 2], 1, "not a saved fleet-sync plan"),
    ],
)
def test_a_saved_plan_without_targets_is_refused_for_a_fleet_with_them(
    tmp_path: Path, document: object, code: int, says: str
) -> None:
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(document))
    with pytest.raises(Exit) as caught:
        read_saved_targets(saved)
    assert caught.value.code == code and says in (caught.value.message or "")
