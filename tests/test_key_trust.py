"""Keys follow trust (issue 15): which addresses a host's upstream key may go to
(sync/gitops/keytrust.py), worked out from git the way plan, apply, drift and propose do, and what
the probe sends and concludes against upstreams on 127.0.0.1 that record every Authorization header
they get."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from sync.core.health import HealthState, HostHealth
from sync.core.healthgate import gate
from sync.core.keytrust import FLEET_ITSELF, KeyTrust
from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import render
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.gitops import gitref
from sync.gitops.host_moved import NEEDS_KEY, automerge_refusal
from sync.gitops.keytrust import at_head, for_run, trust_of
from sync.live.probe import probe_fleet
from sync.report.markdown import plan_markdown
from sync.report.text import plan_text

from .support.upstream import Upstream

SECRET = "sk-upstream-key-trust-0123456789"
KEY_VAR = "TEST_UPSTREAM_KEY"
ENV = {KEY_VAR: SECRET}
OLD, NEW = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"


def doc(hosts: dict[str, str], **top: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "fleet": "f1",
        "defaults": {"api_key": f"os.environ/{KEY_VAR}"},
        **top,
        "models": {
            "m": {
                "served_model": "org/m",
                "hosts": [{"name": h, "api_base": a} for h, a in hosts.items()],
            }
        },
    }


def fleet_of(data: dict[str, Any]) -> Fleet:
    return fleet_from_doc(parse_yaml(yaml.safe_dump(data), "fleet.yaml"), "fleet.yaml")


def test_only_what_the_trusted_fleet_gives_that_host_is_trusted() -> None:
    base = doc({"a": OLD, "b": NEW})
    base["models"]["m"]["hosts"][1]["enabled"] = False  # drained: its address stays reviewed
    trust = trust_of(fleet_of(base), "fleet.yaml at the base")
    ref = f"os.environ/{KEY_VAR}"
    assert trust.refusal("m", "a", OLD, ref) == ""
    assert trust.refusal("m", "a", "http://10.0.0.1:8000/v1/", ref) == ""  # one address
    assert trust.refusal("m", "b", NEW, ref) == ""
    moved = trust.refusal("m", "a", NEW, ref)  # b's address is not a's
    assert moved == "fleet.yaml at the base does not give host a this address and api_key " + (
        "(not reviewed)"
    )
    assert trust.refusal("m", "a", OLD, "os.environ/GITHUB_TOKEN") == moved  # another key
    assert trust.refusal("m", "c", OLD, ref) != ""
    assert trust.refusal("n", "a", OLD, ref) != ""
    assert FLEET_ITSELF.refusal("m", "z", "http://anything:1/v1", ref) == ""


class Repo:
    """A git repository with fleet.yaml committed: the base a pull request branched from."""

    def __init__(self, tmp: Path, hosts: dict[str, str]) -> None:
        self.git = git.Repo.init(tmp / "repo", initial_branch="main")
        with self.git.config_writer() as config:
            config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
        self.fleet = Path(self.git.working_tree_dir or "") / "fleet.yaml"
        self.base = self.commit(doc(hosts))

    def write(self, data: dict[str, Any]) -> None:
        self.fleet.write_text(yaml.safe_dump(data), encoding="utf-8")

    def commit(self, data: dict[str, Any]) -> str:
        self.write(data)
        self.git.index.add(["fleet.yaml"])
        return str(self.git.index.commit("fleet").hexsha)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path, {"a": OLD, "b": NEW})


def pull_request(tmp: Path, base: str | None) -> dict[str, str]:
    event = {"pull_request": {"number": 1, "base": {"sha": base} if base else {}}}
    path = tmp / f"event-{base}.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(path)}


def merge_group(tmp: Path, base: str) -> dict[str, str]:
    path = tmp / "merge-group.json"
    path.write_text(json.dumps({"merge_group": {"base_sha": base}}), encoding="utf-8")
    return {"GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(path)}


def test_a_pull_requests_run_trusts_its_base_and_every_other_run_the_file(
    repo: Repo, tmp_path: Path
) -> None:
    repo.git.git.checkout("-b", "pr")
    repo.commit(doc({"a": "http://10.6.6.6:1/v1", "b": NEW}))  # the pull request moves a
    ref = f"os.environ/{KEY_VAR}"
    assert for_run(repo.fleet, None, {}) is FLEET_ITSELF  # local, apply on main, drift
    assert for_run(repo.fleet, None, {"GITHUB_EVENT_NAME": "push"}) is FLEET_ITSELF
    for trust in (
        for_run(repo.fleet, None, pull_request(tmp_path, repo.base)),
        for_run(repo.fleet, repo.base, {}),  # --base-ref
        for_run(repo.fleet, "main", {"GITHUB_EVENT_NAME": "pull_request_target"}),
        for_run(repo.fleet, None, merge_group(tmp_path, repo.base)),
    ):
        assert trust.where == f"fleet.yaml at the pull request's base ({repo.base[:12]})"
        assert trust.refusal("m", "b", NEW, ref) == ""
        assert "(not reviewed)" in trust.refusal("m", "a", "http://10.6.6.6:1/v1", ref)


def test_no_address_is_trusted_when_the_trusted_ref_cannot_be_read(
    repo: Repo, tmp_path: Path
) -> None:
    ref = f"os.environ/{KEY_VAR}"
    cases = {
        "the pull request's base is unknown (GITHUB_EVENT_PATH holds no pull_request.base.sha; "
        "pass --base-ref)": pull_request(tmp_path, None),
        "fleet.yaml at the pull request's base cannot be read (cannot find the merge base of "
        f"{'0' * 40} and HEAD": pull_request(tmp_path, "0" * 40),
    }
    for problem, environ in cases.items():
        trust = for_run(repo.fleet, None, environ)
        assert trust.entries == frozenset() and trust.problem.startswith(problem), trust
        assert trust.refusal("m", "b", NEW, ref).endswith(": no address is trusted with a key")
    invalid = repo.commit({"version": 1, "fleet": "f1"})  # no models: invalid
    assert for_run(repo.fleet, invalid, {}).problem == (
        f"fleet.yaml at the pull request's base ({invalid[:12]}) is invalid: "
        "no address is trusted with a key"
    )
    empty = git.Repo.init(tmp_path / "empty")
    fleet = Path(empty.working_tree_dir or "") / "fleet.yaml"
    repo.fleet.rename(fleet)
    assert "the repository has no commit yet" in at_head(fleet).problem
    outside = tmp_path / "outside.yaml"
    fleet.rename(outside)
    assert "is not inside a git repository" in for_run(outside, "main", {}).problem


@pytest.mark.parametrize("base", ["--independent", "-n", "--all", "", "a b", "HEAD\n-x"])
def test_a_base_ref_is_never_read_as_an_option(repo: Repo, tmp_path: Path, base: str) -> None:
    # `git merge-base --independent HEAD` answers HEAD: the pull request's own fleet.yaml would
    # have been the trusted one, its new address given the key.
    repo.git.git.checkout("-b", "pr")
    repo.commit(doc({"a": "http://10.6.6.6:1/v1", "b": NEW}))
    ref = f"os.environ/{KEY_VAR}"
    for trust in (
        for_run(repo.fleet, base or None, pull_request(tmp_path, base or None)),
        for_run(repo.fleet, None, pull_request(tmp_path, base)),
    ):
        assert trust.entries == frozenset(), trust
        assert trust.refusal("m", "a", "http://10.6.6.6:1/v1", ref) != ""


def test_refs_follow_end_of_options_in_every_git_call(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Should a ref that starts with '-' ever get past checked_ref, git still reads it as one.
    monkeypatch.setattr(gitref, "checked_ref", lambda ref: ref)
    with pytest.raises(gitref.GitRefError, match="Not a valid object name --independent"):
        gitref.merge_base(repo.fleet.parent, "--independent")
    with pytest.raises(gitref.GitRefError):
        gitref.file_at(repo.fleet, "--all")
    assert gitref.merge_base(repo.fleet.parent, repo.base) == repo.base


def test_propose_trusts_head_not_the_address_set_host_wrote(repo: Repo) -> None:
    repo.write(doc({"a": "http://10.6.6.6:1/v1", "b": NEW}))  # set-host, not committed
    trust = at_head(repo.fleet)
    assert trust.where == f"fleet.yaml at HEAD ({repo.base[:12]})"
    ref = f"os.environ/{KEY_VAR}"
    assert trust.refusal("m", "a", OLD, ref) == ""
    assert "(not reviewed)" in trust.refusal("m", "a", "http://10.6.6.6:1/v1", ref)


@pytest.fixture
def hosts() -> Iterator[dict[str, Upstream]]:
    """keyed: checks the key; open: serves without one."""
    started = {
        "keyed": Upstream("keyed", ["org/m"], key=SECRET).start(),
        "moved": Upstream("moved", ["org/m"], key=SECRET).start(),
        "open": Upstream("open", ["org/m"]).start(),
    }
    yield started
    for upstream in started.values():
        upstream.stop()


def test_the_probe_sends_a_key_only_where_it_is_trusted(hosts: dict[str, Upstream]) -> None:
    keyed, moved, opened = hosts["keyed"], hosts["moved"], hosts["open"]
    trusted = trust_of(fleet_of(doc({"a": keyed.url, "b": OLD, "c": NEW})), "fleet.yaml at HEAD")
    fleet = fleet_of(doc({"a": keyed.url, "b": moved.url, "c": opened.url}))
    probed = {h.host: h for h in probe_fleet(fleet, trusted, timeout=5, environ=ENV)}
    assert keyed.authorizations == [f"Bearer {SECRET}"]
    assert moved.authorizations == [None] and opened.authorizations == [None]

    assert (probed["a"].state, probed["a"].key_sent, probed["a"].key_note) == ("serves", True, "")
    b = probed["b"]
    assert (b.state, b.key_sent) == ("needs_key", False)
    note = "key not sent: fleet.yaml at HEAD does not give host b this address and api_key "
    assert b.summary() == (
        f"needs a key (GET /models answered 401 without a key); {note}(not reviewed)"
    )
    assert b.as_dict()["key_sent"] is False and b.as_dict()["state"] == "needs_key"
    c = probed["c"]
    assert (c.state, c.key_sent) == ("serves", False)
    assert c.summary().startswith("serves org/m (answered without a key); key not sent: ")

    # Without the variable here, a trusted address is asked without it too, and says why.
    [a] = probe_fleet(fleet_of(doc({"a": keyed.url})), FLEET_ITSELF, timeout=5, environ={})
    assert a.state == "needs_key" and keyed.authorizations[-1] is None
    assert a.key_note == f"{KEY_VAR} is not set in fleet-sync's environment: probed without a key"

    # One ask per address and key sent: a trusted and an untrusted host at one address differ.
    keyed.authorizations.clear()
    two = doc({"a": keyed.url})
    two["models"]["n"] = {"served_model": "org/m", "hosts": [{"name": "a", "api_base": keyed.url}]}
    both = probe_fleet(fleet_of(two), trust_of(fleet_of(doc({"a": keyed.url})), "x"), environ=ENV)
    assert sorted(keyed.authorizations, key=str) == [f"Bearer {SECRET}", None]
    assert [(h.model_name, h.state) for h in both] == [("m", "serves"), ("n", "needs_key")]


def moved_plan(health: HostHealth, require: bool = False) -> Plan:
    """Host a moved from http://10.0.0.9 to NEW, b stays: one in-place update, gated."""
    top = {"health": "require"} if require else {}
    fleet = fleet_of(doc({"a": NEW, "b": OLD}, **top))
    live = render(fleet_of(doc({"a": "http://10.0.0.9:8000/v1", "b": OLD})))
    return gate(make_plan(fleet, render(fleet), list(live)), [health], require)


def health_of(state: HealthState, key_note: str = "key not sent: not reviewed") -> HostHealth:
    route = render(fleet_of(doc({"a": NEW})))[0]
    detail = "GET /models answered 401 without a key" if state == "needs_key" else ""
    models = ("org/m",) if state == "serves" else ()
    return HostHealth(
        route.id,
        "m",
        "a",
        NEW,
        "org/m",
        state,
        models,
        detail,
        key_note,
    )


def test_automerge_trusts_only_the_keyless_verdict() -> None:
    plan = moved_plan(health_of("needs_key"))
    assert automerge_refusal(plan, (), "m", "a") == NEEDS_KEY
    assert NEEDS_KEY == (
        "the new address wants a key, which fleet-sync does not send to an address from a "
        "dispatch payload: a person reviews it"
    )
    plan = moved_plan(health_of("serves"))
    assert automerge_refusal(plan, (), "m", "a") is None  # serves without a key: merged
    # Under health: require the move is withheld too; the reason stays the key's.
    held = moved_plan(health_of("needs_key"), require=True)
    assert held.withheld and automerge_refusal(held, (), "m", "a") == NEEDS_KEY


def test_require_withholds_a_change_whose_address_needs_a_key_and_reports_say_so() -> None:
    held = moved_plan(health_of("needs_key"), require=True)
    [withheld] = held.withheld
    assert withheld.reason == (
        f"{NEW} needs a key (GET /models answered 401 without a key); key not sent: not reviewed"
    )
    text = plan_text(held)
    assert "probe: 1 host(s): 1 need a key (1 asked without their key)" in text
    assert "withheld: http://10.0.0.2:8000/v1 needs a key (GET /models" in plan_markdown(held)
    shown = plan_markdown(moved_plan(health_of("needs_key")))  # the PR comment's change block
    assert "probe: 🔑 needs a key (GET /models answered 401 without a key); key not" in shown
    body = held.unredacted_json()
    [entry] = body["withheld"]
    assert entry["health"]["state"] == "needs_key" and entry["health"]["key_sent"] is False


def test_a_key_keeps_going_to_a_host_already_at_a_trusted_address(
    hosts: dict[str, Upstream],
) -> None:
    """What the old rule did everywhere still holds where the address was reviewed."""
    keyed = hosts["keyed"]
    fleet = fleet_of(doc({"a": keyed.url}))
    [a] = probe_fleet(fleet, trust_of(fleet, "fleet.yaml at HEAD"), environ=ENV)
    assert a.serves and a.key_sent and keyed.authorizations == [f"Bearer {SECRET}"]
    [again] = probe_fleet(fleet, KeyTrust(frozenset(), problem="x"), environ=ENV)
    assert again.state == "needs_key" and again.key_note == "key not sent: x"
