"""A prune never leaves a dangling reference silently (issue 26), on a real LiteLLM: a key, a
team and a router fallback that name a model group, made through LiteLLM's own admin API with
the master key; a fleet.yaml that removes the group; the plan, read with only a
proxy_admin_viewer key, names each of them and is refused without --force. A group nobody
names, or one that keeps a route, reads nothing more and prunes as before.

The run (sync/run/reading.py plan_target) reads them after the plan: driven here without click,
and through the real command for the exit codes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sync.core.keytrust import TrustedRef
from sync.core.plan import Plan
from sync.core.safety import refusals
from sync.core.verdict import FORCE, decide
from sync.report.text import plan_text
from sync.run.endpoint import Endpoint, ProxyOptions
from sync.run.reading import Clients, Health, Reading, plan_target, read_fleet

from .support.keys import read_only_key
from .support.proxyharness import Proxy, fleet_sync, remove_fleet, write_fleet

A = "http://127.0.0.1:9/v1"  # never called: the plan only reads
B = "http://127.0.0.1:10/v1"


@pytest.fixture
def made(proxy: Proxy, fleet_name: str) -> Iterator[list[tuple[str, Any]]]:
    """What the test makes on the proxy besides routes, undone afterwards (shared proxy)."""
    undo: list[tuple[str, Any]] = []
    yield undo
    with proxy.http() as http:
        for what, value in reversed(undo):
            if what == "key":
                http.post("/key/delete", json={"key_aliases": [value]})
            elif what == "team":
                http.post("/team/delete", json={"team_ids": [value]})
            elif what == "fallback":
                http.delete(f"/fallback/{value}")
    remove_fleet(proxy, fleet_name)


def plan_with_reader(proxy: Proxy, fleet_file: Path) -> Plan:
    """The plan as `plan` makes it (the run's plan_target) with only the read key."""
    fleet = read_fleet(fleet_file, at_proxy=True)
    endpoint = Endpoint(proxy.urls, read_only_key(proxy), "LITELLM_PROXY_READ_API_KEY")
    with Clients(20.0) as clients:
        reading = Reading(
            fleet, fleet_file, False, ProxyOptions(), clients, False, Health(), lambda: TrustedRef()
        )
        return plan_target(reading, None, endpoint).plan


def read_env(proxy: Proxy) -> dict[str, str]:
    """What the pull request's plan job holds: the read key only."""
    env = {k: v for k, v in proxy.env().items() if k != "LITELLM_PROXY_API_KEY"}
    return {**env, "LITELLM_PROXY_READ_API_KEY": read_only_key(proxy)}


@pytest.mark.litellm_matrix  # each release reads keys, teams and router settings its own way
def test_a_key_a_team_and_a_fallback_naming_a_removed_group_refuse_the_plan(
    proxy: Proxy, tmp_path: Path, fleet_name: str, made: list[tuple[str, Any]]
) -> None:
    keep, gone = f"{fleet_name}-keep", f"{fleet_name}-gone"
    path = tmp_path / "fleet.yaml"
    write_fleet(path, fleet_name, {keep: {"hosts": {"a": A}}, gone: {"hosts": {"b": B}}})
    assert fleet_sync(["apply", "-f", str(path)], proxy.env()).code == 0
    key_alias, team_alias = f"{fleet_name}-key", f"{fleet_name}-team"
    with proxy.http() as http:
        key = http.post("/key/generate", json={"key_alias": key_alias, "models": [gone, keep]})
        assert key.status_code == 200, key.text
        made.append(("key", key_alias))
        team = http.post("/team/new", json={"team_alias": team_alias, "models": [gone]})
        assert team.status_code == 200, team.text
        made.append(("team", team.json()["team_id"]))
        fallback = http.post("/fallback", json={"model": keep, "fallback_models": [gone]})
        assert fallback.status_code == 200, fallback.text
        made.append(("fallback", keep))
    token = key.json()["key"]

    # Nothing removed: no group vanishes and nothing more is read.
    assert plan_with_reader(proxy, path).references is None

    write_fleet(path, fleet_name, {keep: {"hosts": {"a": A}}})  # gone is removed
    plan = plan_with_reader(proxy, path)
    assert plan.references is not None, "the read key must read every reference"
    assert plan.references.groups == (gone,)
    assert plan.references.unread == (), plan.references.unread
    found = {(r.kind, r.holder): r for r in plan.references.found}
    assert found[("key models", f"key {key_alias}")].refuses
    assert found[("team models", f"team {team_alias}")].refuses
    fallback_ref = found[("router fallback", f"group {keep}")]
    assert fallback_ref.refuses and "the client sees its error" in fallback_ref.effect
    if proxy.version != "1.98.1":  # 1.108+ says where each router setting comes from
        assert fallback_ref.lives == "database"
    why = [r for r in refusals(plan, 100) if "reference(s)" in r]
    assert len(why) == 1 and f"model group {gone} would be left with no routes" in why[0]
    assert not decide(plan, 100).runs and decide(plan, 100, FORCE).runs
    shown = plan_text(plan, refusals=refusals(plan, 100))
    assert f"key {key_alias}" in shown and f"team {team_alias}" in shown
    assert token not in shown
    # The command: plan with the read key names each and exits 3; apply refuses, --force prunes.
    planned = fleet_sync(["plan", "-f", str(path)], read_env(proxy))
    assert planned.code == 3, planned.err
    assert f"key {key_alias}" in planned.out and f"team {team_alias}" in planned.out
    assert f"group {keep}" in planned.out and token not in planned.out + planned.err
    refused = fleet_sync(["apply", "-f", str(path)], proxy.env())
    assert refused.code == 3 and "reference(s)" in refused.err, refused.err
    assert proxy.ids(gone) != []

    # The plan's hash covers the references: one gone since review makes it another plan.
    with proxy.http() as http:
        assert http.post("/key/delete", json={"key_aliases": [key_alias]}).status_code == 200
    made.remove(("key", key_alias))
    again = plan_with_reader(proxy, path)
    assert again.references is not None
    assert ("key models", f"key {key_alias}") not in {
        (r.kind, r.holder) for r in again.references.found
    }
    assert again.hash != plan.hash
    forced = fleet_sync(["apply", "-f", str(path), "--force"], proxy.env())
    assert forced.code == 0, forced.err
    assert proxy.ids(gone) == []


def test_a_group_nobody_names_or_that_keeps_a_route_prunes_as_before(
    proxy: Proxy, tmp_path: Path, fleet_name: str, made: list[tuple[str, Any]]
) -> None:
    keep, gone = f"{fleet_name}-keep", f"{fleet_name}-gone"
    path = tmp_path / "fleet.yaml"
    write_fleet(path, fleet_name, {keep: {"hosts": {"a": A, "b": B}}, gone: {"hosts": {"c": B}}})
    assert fleet_sync(["apply", "-f", str(path)], proxy.env()).code == 0

    write_fleet(path, fleet_name, {keep: {"hosts": {"a": A}}})  # gone removed, keep keeps a
    plan = plan_with_reader(proxy, path)
    assert plan.references is not None and plan.references.groups == (gone,)
    assert [r for r in plan.references.found if r.group == gone and r.refuses] == []
    assert plan.references.unread == ()
    assert [r for r in refusals(plan, 100) if "reference" in r] == []
    assert fleet_sync(["plan", "-f", str(path)], read_env(proxy)).code == 0
    assert fleet_sync(["apply", "-f", str(path)], proxy.env()).code == 0
    assert proxy.ids(gone) == []
