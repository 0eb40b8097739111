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

import pytest

from sync.core.render import route_id
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
