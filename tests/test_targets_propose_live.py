"""propose (the host-moved loop) on a fleet with targets: every target the moved host goes to is
planned as plan plans it (its projection, its own proxy and read key), one plan comment per
target, and --automerge merges only when every target's plan is the pure move (attack F4).
Two real LiteLLM proxies behind recording proxies (tests/test_targets_live.py's Pair)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest

from sync.core.render import route_id

from .support.fake_github import FakeGitHub
from .support.upstream import Upstream, silent_address
from .test_targets_live import OUTPUTS, Pair, comments, pair, write

__all__ = ["pair"]  # the fixture, shared

SERVED = "org/m"


@pytest.fixture
def new() -> Iterator[str]:
    """The host's new address: an upstream serving the model without a key."""
    upstream = Upstream("new", [SERVED]).start()
    yield upstream.url
    upstream.stop()


def models(model: str, a: str) -> dict[str, Any]:
    """Host a on both targets (prod with its own rpm), canary on staging only."""
    return {
        model: {
            "served_model": SERVED,
            "targets": {"staging": {}, "prod": {"litellm_params": {"rpm": 800}}},
            "hosts": [
                {"name": "a", "api_base": a},
                {"name": "canary", "api_base": silent_address(), "targets": ["staging"]},
            ],
        }
    }


def applied_repo(pair: Pair, github: FakeGitHub, tmp: Path, fleet: str, model: str) -> str:
    """main with the fleet committed, applied to both targets as apply.yml would tag it, and
    known to the fake GitHub; returns the commit."""
    repo = git.Repo.init(tmp / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    pair.fleet_file = Path(repo.working_tree_dir or "") / "fleet.yaml"
    write(pair.fleet_file, fleet, models(model, silent_address()))
    repo.index.add(["fleet.yaml"])
    head = str(repo.index.commit("fleet").hexsha)
    github.git.seed_commit(head, {"fleet.yaml": pair.fleet_file.read_bytes()}, "main")
    pair.extra = {"GITHUB_REPOSITORY": github.repo}
    done = pair.run("apply")
    assert done.code == 0, done.out + done.err
    pair.extra = github.env(GITHUB_REF_NAME="main")
    return head


def set_host(pair: Pair, model: str, host: str, address: str) -> None:
    moved = pair.run("set-host", "--api-base", address, model, host)
    assert moved.code == 0, moved.err


def test_each_target_is_planned_on_its_own_proxy_and_a_pure_move_everywhere_merges(
    pair: Pair, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str
) -> None:
    model = f"{fleet_name}-m"
    applied_repo(pair, fake_github, tmp_path, fleet_name, model)
    set_host(pair, model, "a", new)
    before = [(len(fp.log), len(pair.writes(fp))) for fp in (pair.staging_fp, pair.prod_fp)]
    run = pair.run("propose", "--probe", "--automerge", model, "a")
    assert run.code == 0, run.out + run.err
    after = [(len(fp.log), len(pair.writes(fp))) for fp in (pair.staging_fp, pair.prod_fp)]
    for (reads, writes), (reads_now, writes_now) in zip(before, after, strict=True):
        assert reads_now > reads and writes_now == writes  # each read, neither written
    assert "=== target staging ===" in run.out and "=== target prod ===" in run.out
    prod_section = run.out.split("=== target prod ===")[1]
    assert "canary" not in prod_section and "rpm" not in prod_section  # no revert, no create
    (pull,) = fake_github.git.pulls()
    assert pull["merged_at"], run.out  # both targets' plans only move host a
    plans = comments(fake_github, pull["number"], "plan")
    assert set(plans) == {"staging", "prod"}
    assert route_id(fleet_name, model, "canary") not in plans["prod"]
    assert "rpm" not in plans["prod"]
    OUTPUTS.extend(plans.values())


def test_a_target_that_cannot_be_planned_says_so_and_blocks_automerge(
    pair: Pair, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str
) -> None:
    model = f"{fleet_name}-m"
    applied_repo(pair, fake_github, tmp_path, fleet_name, model)
    set_host(pair, model, "a", new)
    pair.extra["T_PROD_KEY"] = ""  # this job holds no key for prod
    run = pair.run("propose", "--probe", "--automerge", model, "a")
    assert run.code == 0, run.out + run.err
    assert "target prod could not be planned (exit 1)" in run.out
    assert "[prod] error: target prod: api_key: the variable T_PROD_KEY is empty" in run.err
    assert "not merged automatically: target prod: could not be planned" in run.out
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "open" and not pull["merged_at"]
    assert fake_github.git.dispatches == []
    assert set(comments(fake_github, pull["number"], "plan")) == {"staging"}


def test_a_host_on_one_target_is_planned_there_only(
    pair: Pair, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str
) -> None:
    model = f"{fleet_name}-m"
    applied_repo(pair, fake_github, tmp_path, fleet_name, model)
    set_host(pair, model, "canary", new)
    prod_reads = len(pair.prod_fp.log)
    pair.extra["T_PROD_KEY"] = ""  # not needed: canary does not go to prod
    run = pair.run("propose", "--probe", model, "canary")
    assert run.code == 0, run.out + run.err
    assert f"note: {model}/canary does not go to target prod: not planned" in run.err
    assert len(pair.prod_fp.log) == prod_reads
    pulls = fake_github.git.pulls()
    assert set(comments(fake_github, pulls[-1]["number"], "plan")) == {"staging"}


def test_proxy_flags_are_refused_before_github_is_asked(
    pair: Pair, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str
) -> None:
    model = f"{fleet_name}-m"
    applied_repo(pair, fake_github, tmp_path, fleet_name, model)
    set_host(pair, model, "a", new)
    before = len(fake_github.writes())
    run = pair.run("propose", "--proxy-url", pair.prod_fp.url, model, "a")
    assert run.code == 1, run.out + run.err
    assert "--proxy-url: fleet.yaml declares targets:" in run.err
    assert len(fake_github.writes()) == before and fake_github.git.pulls() == []
