"""Two real LiteLLM pods on one database (issue 4): writes are spread over the pods (issue 12) or
sent to the first, read-back checks every listed pod, and the result names a pod that did not
show the change."""

from __future__ import annotations

import concurrent.futures
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sync.core.ownership import Owner
from sync.core.planner import make_plan
from sync.core.render import render, route_id
from sync.fleet.model import load_fleet
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient

from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import (
    Proxy,
    fleet_sync,
    from_environment,
    harness_version,
    start,
    stop,
    write_fleet,
)
from .support.upstream import silent_address
from .test_addressing_live import stored_row
from .test_value_limits_live import sql

pytestmark = pytest.mark.litellm_matrix
OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"
RELOAD_SECONDS = 3


@pytest.fixture(scope="module")
def pods(litellm_version: str) -> Iterator[Proxy]:
    """Two pods sharing one PostgreSQL, reloading their routers every few seconds."""
    external = from_environment(2)
    if external:
        yield external
        return
    started = start(
        f"fleet-sync-pods-{os.getpid()}",
        2,
        {"PROXY_CONFIG_RELOAD_INTERVAL_SECONDS": str(RELOAD_SECONDS)},
        harness_version(litellm_version),
    )
    try:
        yield started
    finally:
        stop(started)


def both(pods: Proxy) -> list[str]:
    return ["--proxy-url", pods.urls[0], "--proxy-url", pods.urls[1]]


def wait_until(check: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(0.5)
    return False


def test_cross_pod_race_converges(pods: Proxy, tmp_path: Path, fleet_name: str) -> None:
    """Delete through pod 1, then at once apply a fleet that creates through pod 2."""
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"x": OLD}}})
    run = fleet_sync(["apply", "-f", str(fleet), *both(pods)], pods.env())
    assert run.code == 0, run.out + run.err
    x, y = route_id(fleet_name, model, "x"), route_id(fleet_name, model, "y")
    with pods.http(pods.urls[0]) as http:
        assert http.post("/model/delete", json={"id": x}).status_code == 200
    write_fleet(fleet, fleet_name, {model: {"hosts": {"x": OLD, "y": NEW}}})
    writes_to_pod2 = [
        "--proxy-url",
        pods.urls[1],
        "--proxy-url",
        pods.urls[0],
        "--write-to",
        "first",
    ]
    run = fleet_sync(["apply", "-f", str(fleet), *writes_to_pod2], pods.env())
    assert run.code == 0, run.out + run.err
    assert "0 failed, 0 unconfirmed" in run.out
    for url in pods.urls:
        assert wait_until(lambda url=url: set(pods.ids(model, url)) == {x, y}), url


def test_read_back_names_the_pod_that_does_not_show_the_change(
    pods: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    with FaultProxy(pods.urls[1]) as lagging:
        # Pod 2 answers the planning read, then its listing is always inconsistent: it never
        # confirms anything.
        lagging.add_rule("GET", "/v2/model/info", Fault.delay(0), times=1)
        lagging.add_rule("GET", "/v2/model/info", Fault.truncate_page(drop=1), times=None)
        run = fleet_sync(
            [
                "apply",
                "-f",
                str(fleet),
                "--proxy-url",
                pods.urls[0],
                "--proxy-url",
                lagging.url,
                "--confirm-timeout",
                "3",
            ],
            pods.env(),
        )
    assert run.code == 4, run.out + run.err
    assert "unconfirmed" in run.out and lagging.url in run.out
    # It was written, and the honest pods show it.
    assert wait_until(
        lambda: route_id(fleet_name, model, "a") in set(pods.ids(model, pods.urls[1]))
    )


def test_read_back_waits_for_the_slowest_pod(pods: Proxy, tmp_path: Path, fleet_name: str) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD, "b": NEW}}}
    )
    run = fleet_sync(["apply", "-f", str(fleet), *both(pods), "--format", "json"], pods.env())
    assert run.code == 0, run.out + run.err
    # The moment apply returns, both pods already show both routes: it waited for pod 2.
    for url in pods.urls:
        assert set(pods.ids(model, url)) == {route_id(fleet_name, model, h) for h in "ab"}


def test_two_applies_at_once_leave_no_duplicates(
    pods: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    hosts = {f"h{i}": f"http://216.243.220.245:{19000 + i}/v1" for i in range(6)}
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": hosts}})
    # Each run writes through its own first pod: the collisions happen across pods.
    one = ["--proxy-url", pods.urls[0], "--proxy-url", pods.urls[1], "--write-to", "first"]
    two = ["--proxy-url", pods.urls[1], "--proxy-url", pods.urls[0], "--write-to", "first"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(
                lambda urls: fleet_sync(["apply", "-f", str(fleet), *urls], pods.env()), [one, two]
            )
        )
    for run in runs:  # the loser's creates collide on the deterministic ids and read back
        assert run.code == 0, run.out + run.err
    expected = {route_id(fleet_name, model, h) for h in hosts}
    for url in pods.urls:
        assert wait_until(lambda url=url: set(pods.ids(model, url)) == expected), url
    entries = [r for r in pods.routes() if r["model_name"] == model]
    assert len(entries) == len(hosts), "duplicate routes"
    check = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode", *both(pods)], pods.env())
    assert check.code == 0, check.out


def test_writes_are_spread_over_the_pods_by_route_id(
    pods: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Each route's writes go to one pod (the same for its create and its update), an ambiguous
    write is read back on the pod that took it, and read-back still waits for every pod."""
    model = f"{fleet_name}-m"
    with FaultProxy(pods.urls[0]) as one, FaultProxy(pods.urls[1]) as two:
        urls = ["--proxy-url", one.url, "--proxy-url", two.url]
        choose = LiteLLMClient([one.url, two.url], "unused")
        hosts: dict[str, list[str]] = {one.url: [], two.url: []}
        for i in range(40):  # three hosts for each pod (ids carry the session's fleet name)
            pod = choose.pod_for(route_id(fleet_name, model, f"h{i}"))
            if len(hosts[pod]) < 3:
                hosts[pod].append(f"h{i}")
        names = sorted(hosts[one.url] + hosts[two.url])
        assert len(names) == 6
        ids = {h: route_id(fleet_name, model, h) for h in names}
        fleet = write_fleet(
            tmp_path / "fleet.yaml",
            fleet_name,
            {
                model: {
                    "hosts": {
                        h: f"http://216.243.220.245:{19100 + i}/v1" for i, h in enumerate(names)
                    }
                }
            },
        )
        # The pod that takes the first create answers 500 after writing it.
        two.add_rule("POST", "/model/new", Fault.forward_then_500(), times=1)
        run = fleet_sync(["apply", "-f", str(fleet), *urls, "--format", "json"], pods.env())
        assert run.code == 0, run.out + run.err
        result = json.loads(run.out)  # progress never mixes into --format json
        assert "fleet-sync: create done: 6 written, 0 failed of 6" in run.err
        assert "fleet-sync: read-back: 6 of 6 changes shown by every pod" in run.err
        assert any("500 answered" in o["detail"] for o in result["outcomes"]), result

        def written(proxy: FaultProxy) -> set[str]:
            return {
                str(body["model_info"]["id"] if path != "/model/delete" else body["id"])
                for _, path, body in proxy.forwarded_writes()
            }

        assert written(one) == {ids[h] for h in hosts[one.url]}
        assert written(two) == {ids[h] for h in hosts[two.url]}
        # The ambiguous create was read back on the pod that took it (its group's listing).
        assert any(r.params.get("model") == model for r in two.requests("GET", "/v2/model/info"))
        one.clear_log()
        two.clear_log()

        moved = {h: f"http://103.196.86.105:{19100 + i}/v1" for i, h in enumerate(names)}
        write_fleet(fleet, fleet_name, {model: {"hosts": moved}})
        run = fleet_sync(["apply", "-f", str(fleet), *urls], pods.env())
        assert run.code == 0, run.out + run.err
        assert {path for _, path, _ in one.forwarded_writes()} == {
            f"/model/{ids[h]}/update" for h in hosts[one.url]
        }
        assert written(two) == {ids[h] for h in hosts[two.url]}
        one.clear_log()
        two.clear_log()

        write_fleet(
            fleet,
            fleet_name,
            {
                model: {
                    "hosts": {h: OLD.replace("16643", str(19200 + i)) for i, h in enumerate(names)}
                }
            },
        )
        run = fleet_sync(["apply", "-f", str(fleet), *urls, "--write-to", "first"], pods.env())
        assert run.code == 0, run.out + run.err
        assert written(one) == set(ids.values()) and not two.forwarded_writes()
    check = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode", *both(pods)], pods.env())
    assert check.code == 0, check.out


def plant(pods: Proxy, rid: str, group: str) -> None:
    """What anyone who can call /model/new can do with an id read from a plan: a row of another
    model group under it, with a provider LiteLLM does not know (stored, never listed)."""
    body = {
        "model_name": group,
        "litellm_params": {
            "model": "badprov/x",
            "api_base": silent_address(),
            "api_key": "planted-attacker-key",
        },
        "model_info": {"id": rid, "planted": "yes"},
    }
    with pods.http(pods.urls[0]) as http:
        http.post("/model/new", json=body)  # 1.108.7: 500 "saved to the database, but ..."


def test_a_row_planted_under_an_id_fleet_sync_creates_is_never_written(
    pods: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Issue 23 (f2). A replacement's id planted between its plan and its write: the create fails
    naming the holder, the row is byte for byte the same and the replaced route keeps serving.
    A plan made after the plant sees the row: the replacement takes the next generation; a new
    host whose own id is planted is a conflict (apply refuses it, exit 3), its row untouched."""
    model, group = f"{fleet_name}-m", f"{fleet_name}-zzz"
    host: dict[str, Any] = {"name": "a", "api_base": silent_address()}
    host["model_info"] = {"owner_note": "x"}
    path = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": host}}})
    run = fleet_sync(["apply", "-f", str(path), *both(pods)], pods.env())
    assert run.code == 0, run.out + run.err
    first = route_id(fleet_name, model, "a")
    g2, g3 = f"{first}-g2", f"{first}-g3"
    del host["model_info"]  # LiteLLM cannot remove a model_info key in place: a replacement
    write_fleet(path, fleet_name, {model: {"hosts": {"a": host}}})
    fleet = load_fleet(path)
    with sql(pods) as query, LiteLLMClient(list(pods.urls), pods.api_key) as client:
        version = client.read_version(client.write_url)
        plan = make_plan(fleet, render(fleet), client.list_routes(), litellm_version=version)
        assert [(c.action, c.id) for c in plan.changes] == [("create", g2), ("delete", first)]
        plant(pods, g2, group)
        row = stored_row(query, g2)
        assert '"planted"' in row and group in row
        result = apply_plan(plan, client, Owner(fleet), confirm_timeout=10)
        create, delete = result.outcomes
        assert create.status == "failed", create
        assert create.detail == (
            f"id {g2} is held by a stored row this fleet does not own (model group {group}, "
            "not listed by the router); nothing was written to it: remove it by hand"
        )
        assert delete.status == "skipped" and not result.complete  # the command exits 4
        assert stored_row(query, g2) == row
        for url in pods.urls:
            assert first in pods.ids(model, url)

        # The next plan reads the holder (one ?modelId= read per create) and moves past it.
        check = fleet_sync(["plan", "-f", str(path), "--format", "json", *both(pods)], pods.env())
        shown = json.loads(check.out)
        assert [(c["action"], c["id"]) for c in shown["changes"]] == [
            ("create", g3),
            ("delete", first),
        ], check.out
        # listed as ignored (the shared pods also list other tests' routes there)
        assert g2 in [i["id"] for i in shown["ignored"]], check.out
        run = fleet_sync(["apply", "-f", str(path), *both(pods)], pods.env())
        assert run.code == 0, run.out + run.err
        assert g3 in run.out and stored_row(query, g2) == row
        assert wait_until(lambda: pods.ids(model, pods.urls[1]) == [g3])
        check = fleet_sync(["plan", "-f", str(path), "--format", "json", *both(pods)], pods.env())
        assert check.code == 0 and json.loads(check.out)["changes"] == [], check.out

        # A new host's own id planted: a conflict, refused, the row untouched.
        b = route_id(fleet_name, model, "b")
        plant(pods, b, group)
        row = stored_row(query, b)
        write_fleet(path, fleet_name, {model: {"hosts": {"a": host, "b": silent_address()}}})
        check = fleet_sync(["plan", "-f", str(path), "--format", "json", *both(pods)], pods.env())
        assert check.code == 3, check.out + check.err  # apply would refuse: plan fails too
        (conflict,) = json.loads(check.out)["conflicts"]
        assert json.loads(check.out)["refused"], check.out  # what apply refuses, said by plan
        assert conflict["id"] == b and conflict["held_by"]["model_name"] == group
        run = fleet_sync(["apply", "-f", str(path), *both(pods)], pods.env())
        assert run.code == 3 and "refused" in run.err, run.out + run.err
        assert stored_row(query, b) == row
