"""apply under faults injected between fleet-sync and a real LiteLLM (issue 4).

Every fault kind in every stage: the run ends confirmed (exit 0) or exits 4 naming what is
unconfirmed; no write reaches the proxy for a route outside the plan; no duplicate routes; and a
second apply converges."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.core.ownership import Owner
from sync.core.planner import make_plan
from sync.core.render import render, route_id
from sync.fleet.model import load_fleet
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient

from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import Proxy, Run, fleet_sync, write_fleet

pytestmark = pytest.mark.litellm_matrix
OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"
WRITE_PATHS = {
    "create": ("POST", "/model/new"),
    "update": ("PATCH", r"/model/.+/update"),
    "delete": ("POST", "/model/delete"),
}
FAULTS = {
    "forward-then-500": Fault.forward_then_500(),
    "500-not-forwarded": Fault.fail_500(),
    "502": Fault.status(502),
    "503": Fault.status(503),
    "504": Fault.status(504),
    "delay-past-timeout": Fault.delay(3.0),
    "forward-then-delay": Fault.forward_then_delay(3.0),
    "reset": Fault.reset(),
    "forward-then-reset": Fault.forward_then_reset(),
    "invalid-json": Fault.invalid_json(),
}


@pytest.fixture
def faulty(proxy: Proxy) -> Iterator[FaultProxy]:
    with FaultProxy(proxy.url) as fp:
        yield fp


def through(proxy: Proxy, fp: FaultProxy) -> dict[str, str]:
    env = proxy.env()
    env.update(LITELLM_PROXY_URL=fp.url, LITELLM_PROXY_URLS=fp.url)
    return env


def apply(fleet: Path, env: dict[str, str], *extra: str) -> Run:
    return fleet_sync(
        ["apply", "-f", str(fleet), "--timeout", "2", "--confirm-timeout", "10", *extra], env
    )


@pytest.mark.parametrize("stage", ["create", "update", "delete"])
@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
def test_apply_survives_fault(
    proxy: Proxy, faulty: FaultProxy, tmp_path: Path, fleet_name: str, stage: str, fault: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = tmp_path / "fleet.yaml"
    start = {
        "keep": OLD,
        "moves": OLD.replace("16643", "16644"),
        "goes": OLD.replace("16643", "16645"),
    }
    write_fleet(fleet, fleet_name, {model: {"hosts": start}})
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    # The target state needs one change of each kind.
    target = {"keep": start["keep"], "moves": NEW, "new": NEW.replace("17140", "17141")}
    write_fleet(fleet, fleet_name, {model: {"hosts": target}})
    planned = {route_id(fleet_name, model, h) for h in ("moves", "new", "goes")}

    method, path = WRITE_PATHS[stage]
    faulty.add_rule(method, path, FAULTS[fault], times=1)
    run = apply(fleet, through(proxy, faulty))
    faulty.wait_idle(timeout=10)

    assert run.code in (0, 4), run.out + run.err
    if run.code == 4:
        assert "unconfirmed" in run.out or "failed" in run.out
    touched = set()
    for _method, path_, body in faulty.forwarded_writes():
        if path_ == "/model/new":
            touched.add(body["model_info"]["id"])
        elif path_ == "/model/delete":
            touched.add(body["id"])
        else:
            touched.add(path_.split("/")[2])
    assert touched <= planned, f"writes outside the plan: {touched - planned}"
    live = proxy.ids(model)
    assert len(live) == len(set(live)), "duplicate routes"
    assert len(live) <= 4
    if run.code == 0:
        check = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode"], proxy.env())
        assert check.code == 0, check.out
    # Whatever happened, running apply again converges.
    again = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
    assert again.code == 0, again.out + again.err
    assert proxy.ids(model) == sorted(route_id(fleet_name, model, h) for h in target)


def test_ambiguous_create_is_read_back_not_recreated(
    proxy: Proxy, faulty: FaultProxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    faulty.add_rule("POST", "/model/new", Fault.forward_then_500(), times=1)
    run = apply(fleet, through(proxy, faulty))
    assert run.code == 0, run.out + run.err
    assert "read back: listed" in run.out
    assert len(faulty.requests("POST", "/model/new")) == 1  # no blind re-create


def test_create_on_existing_id_becomes_update(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Someone created the id between plan and apply: LiteLLM answers 500 ("Failed to add model
    to db"); apply reads back, finds it, and updates it to the desired state."""
    model = f"{fleet_name}-m"
    path = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    fleet = load_fleet(path)
    rid = route_id(fleet_name, model, "a")
    with LiteLLMClient([proxy.url], proxy.api_key) as client:
        plan = make_plan(fleet, render(fleet), client.list_routes())
        assert [c.action for c in plan.changes] == ["create"]
        body = {
            "model_name": model,
            "litellm_params": {"model": "hosted_vllm/x", "api_base": NEW},
            "model_info": {"id": rid},
        }
        with proxy.http() as http:
            assert http.post("/model/new", json=body).status_code == 200
        result = apply_plan(plan, client, Owner(fleet), confirm_timeout=10)
    assert result.complete, result
    assert result.outcomes[0].detail == "id existed; updated to the desired state"
    route = proxy.route(rid)
    assert route is not None and route["litellm_params"]["api_base"] == OLD
    assert proxy.ids(model) == [rid]


def test_failed_create_blocks_prune_of_its_group(
    proxy: Proxy, faulty: FaultProxy, tmp_path: Path, fleet_name: str
) -> None:
    model, other = f"{fleet_name}-m", f"{fleet_name}-o"
    fleet = tmp_path / "fleet.yaml"
    write_fleet(
        fleet, fleet_name, {model: {"hosts": {"old": OLD}}, other: {"hosts": {"x": OLD, "y": NEW}}}
    )
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    write_fleet(fleet, fleet_name, {model: {"hosts": {"new": NEW}}, other: {"hosts": {"x": OLD}}})
    faulty.add_rule("POST", "/model/new", Fault.status(422), times=None)  # every create refused
    run = apply(fleet, through(proxy, faulty))
    assert run.code == 4, run.out + run.err
    assert "skipped: a create/update of " + model in run.out
    ids = proxy.ids(model)
    assert route_id(fleet_name, model, "old") in ids  # the group still serves
    assert proxy.ids(other) == [route_id(fleet_name, other, "x")]  # independent prune ran


@pytest.mark.parametrize("times", [1, None], ids=["once", "always"])
def test_inconsistent_listing_never_prunes(
    proxy: Proxy, faulty: FaultProxy, tmp_path: Path, fleet_name: str, times: int | None
) -> None:
    model = f"{fleet_name}-m"
    fleet = tmp_path / "fleet.yaml"
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": OLD, "b": NEW}}})
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    faulty.add_rule("GET", r"/v2/model/info", Fault.truncate_page(drop=1), times=times)
    run = fleet_sync(
        ["plan", "-f", str(fleet), "--detailed-exitcode", "--format", "json"],
        through(proxy, faulty),
    )
    if times == 1:  # read again, consistent the second time: an honest empty plan
        assert run.code == 0, run.err
        assert json.loads(run.out)["changes"] == []
    else:
        assert run.code == 1 and "inconsistent" in run.err
        run = apply(fleet, through(proxy, faulty))
        assert run.code == 1 and "refusing to plan from an incomplete read" in run.err
        assert faulty.forwarded_writes() == []
    assert len(proxy.ids(model)) == 2


def test_proxy_gone_halfway_then_apply_again_converges(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    hosts = {f"h{i}": f"http://216.243.220.245:{18000 + i}/v1" for i in range(8)}
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": hosts}})
    fp = FaultProxy(proxy.url)
    fp.on_forwarded_write(3, fp.close)  # the path to the proxy dies with the 3rd create
    try:
        run = fleet_sync(
            [
                "apply",
                "-f",
                str(fleet),
                "--concurrency",
                "1",
                "--timeout",
                "2",
                "--confirm-timeout",
                "2",
            ],
            through(proxy, fp),
        )
    finally:
        fp.close()
    assert run.code in (1, 4), run.out + run.err
    assert "done" in run.out or "failed" in run.out or "error" in run.err
    assert len(fp.forwarded_writes()) == 3  # nothing got through once the path died
    created = proxy.ids(model)
    assert len(created) == 3, created
    again = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
    assert again.code == 0, again.out + again.err
    assert proxy.ids(model) == sorted(route_id(fleet_name, model, h) for h in hosts)


def test_create_that_never_settles_is_unconfirmed_and_blocks_prune(
    proxy: Proxy, faulty: FaultProxy, tmp_path: Path, fleet_name: str
) -> None:
    """Every create answers 500 and never lands: after bounded attempts the change is left to
    read-back, which cannot confirm it (exit 4), and the group's old route is not pruned."""
    model = f"{fleet_name}-m"
    fleet = tmp_path / "fleet.yaml"
    write_fleet(fleet, fleet_name, {model: {"hosts": {"old": OLD}}})
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    write_fleet(fleet, fleet_name, {model: {"hosts": {"new": NEW}}})
    faulty.add_rule("POST", "/model/new", Fault.fail_500(), times=None)
    run = fleet_sync(
        ["apply", "-f", str(fleet), "--force", "--confirm-timeout", "2"], through(proxy, faulty)
    )
    assert run.code == 4, run.out + run.err
    assert "unconfirmed" in run.out and "ambiguous after 3 attempts" in run.out
    assert len(faulty.requests("POST", "/model/new")) == 3  # bounded, not blind
    assert proxy.ids(model) == [route_id(fleet_name, model, "old")]
