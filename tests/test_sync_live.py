"""plan and apply against a real LiteLLM proxy with PostgreSQL (issue 3)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sync.core.render import route_id
from sync.litellm.releases import LiteLLMRelease

from .support.proxyharness import Proxy, fleet_sync, write_fleet

pytestmark = pytest.mark.litellm_matrix
OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"


def plan_json(proxy: Proxy, fleet_file: Path, *extra: str) -> dict[str, Any]:
    run = fleet_sync(["plan", "-f", str(fleet_file), "--format", "json", *extra], proxy.env())
    assert run.code == 0, run.err
    result: dict[str, Any] = json.loads(run.out)
    return result


def apply_ok(proxy: Proxy, fleet_file: Path, *extra: str) -> None:
    run = fleet_sync(["apply", "-f", str(fleet_file), *extra], proxy.env())
    assert run.code == 0, run.out + run.err
    assert_converged(proxy, fleet_file)


def assert_converged(proxy: Proxy, fleet_file: Path) -> None:
    """The first invariant: a plan right after a successful apply is empty."""
    run = fleet_sync(["plan", "-f", str(fleet_file), "--detailed-exitcode"], proxy.env())
    assert run.code == 0, run.out + run.err
    assert "No changes" in run.out


def create_by_hand(proxy: Proxy, model_name: str, api_base: str, **info: Any) -> str:
    """A route the way a runtime portal adds one: /model/new, LiteLLM picks the id."""
    body = {
        "model_name": model_name,
        "litellm_params": {"model": f"hosted_vllm/{model_name}", "api_base": api_base},
        "model_info": info,
    }
    with proxy.http() as http:
        answer = http.post("/model/new", json=body)
    assert answer.status_code == 200, answer.text
    created: str = answer.json()["model_id"]
    return created


def test_apply_to_empty_creates_every_route_then_plan_is_empty(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    models: dict[str, Any] = {
        f"{fleet_name}-a": {"hosts": {"h1": OLD, "h2": "https://abc123-8000.proxy.runpod.net/v1"}},
        f"{fleet_name}-b": {"hosts": {"h1": NEW}, "litellm_params": {"rpm": 60}},
    }
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, models)
    plan = plan_json(proxy, fleet)
    assert [c["action"] for c in plan["changes"]] == ["create"] * 3
    apply_ok(proxy, fleet)
    live = {r["model_info"]["id"]: r for r in proxy.routes()}
    for model, spec in models.items():
        for host, api_base in spec["hosts"].items():
            route = live[route_id(fleet_name, model, host)]
            assert route["litellm_params"]["api_base"] == api_base
            assert route["model_info"]["fleet_sync_fleet"] == fleet_name
            assert route["model_info"]["fleet_sync_host"] == host
    assert live[route_id(fleet_name, f"{fleet_name}-b", "h1")]["litellm_params"]["rpm"] == 60


def test_address_change_is_one_in_place_update(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"hosts": {"a": OLD, "b": NEW.replace("17140", "17141")}}},
    )
    apply_ok(proxy, fleet)
    untouched_before = proxy.route(route_id(fleet_name, model, "b"))
    write_fleet(
        fleet, fleet_name, {model: {"hosts": {"a": NEW, "b": NEW.replace("17140", "17141")}}}
    )
    plan = plan_json(proxy, fleet)
    assert [(c["action"], c["id"], c["host"]) for c in plan["changes"]] == [
        ("update", route_id(fleet_name, model, "a"), "a")
    ]
    paths = {d["path"]: (d["before"], d["after"]) for d in plan["changes"][0]["diff"]}
    assert paths["litellm_params.api_base"] == (OLD, NEW)
    # drift reads the same state as the same plan: one hash (the new user saw two)
    drift = fleet_sync(["drift", "-f", str(fleet), "--format", "json"], proxy.env())
    assert drift.code == 2, drift.err
    assert json.loads(drift.out)["hash"] == plan["hash"]
    # It says it is drift and what converges it (stderr: stdout is the one JSON document).
    assert "drift: the proxy differs from fleet.yaml; apply (or drift --fix)" in drift.err
    apply_ok(proxy, fleet)
    mine = [r for r in proxy.routes() if r["model_name"] == model]
    assert sorted(r["litellm_params"]["api_base"] for r in mine) == sorted(
        [NEW, NEW.replace("17140", "17141")]
    )
    assert not any(r["litellm_params"].get("api_base") == OLD for r in mine)
    assert proxy.route(route_id(fleet_name, model, "b")) == untouched_before


def test_prune_touches_only_what_the_fleet_owns(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD, "b": NEW}}}
    )
    apply_ok(proxy, fleet)
    by_hand = create_by_hand(proxy, model, "http://216.243.220.245:16000/v1")
    other_fleet = create_by_hand(
        proxy,
        model,
        "http://216.243.220.245:16001/v1",
        id=f"{fleet_name}-other",
        fleet_sync_fleet="someone-else",
        fleet_sync_host="x",
    )
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": OLD}}})
    plan = plan_json(proxy, fleet)
    assert [(c["action"], c["host"]) for c in plan["changes"]] == [("delete", "b")]
    reasons = {i["id"]: i["reason"] for i in plan["ignored"]}
    assert "untagged" in reasons[by_hand]
    assert "another fleet (someone-else)" in reasons[other_fleet]
    assert "config-file route" in reasons.get("cfg-static-1", "config-file route"), reasons
    apply_ok(proxy, fleet)
    ids = {r["model_info"]["id"] for r in proxy.routes()}
    assert route_id(fleet_name, model, "b") not in ids
    assert {by_hand, other_fleet, route_id(fleet_name, model, "a")} <= ids


def test_config_file_route_is_listed_as_ignored_and_survives(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    statics = [r for r in proxy.routes() if r["model_info"].get("db_model") is False]
    if not statics:
        pytest.skip(
            "the proxy under test has no config-file route "
            "(the harness adds one with LITELLM_HARNESS_STATIC_MODEL=1)"
        )
    static = statics[0]
    # Claim its model group: even then a config-file route is never touched.
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {static["model_name"]: {"hosts": {"a": OLD}}},
        owns="model_groups",
    )
    plan = plan_json(proxy, fleet)
    assert [c["action"] for c in plan["changes"]] == ["create"]
    ignored = {i["id"]: i["reason"] for i in plan["ignored"]}
    assert "config-file route" in ignored[static["model_info"]["id"]]
    apply_ok(proxy, fleet)
    assert proxy.route(static["model_info"]["id"]) is not None
    write_fleet(fleet, fleet_name, {})
    run = fleet_sync(["apply", "-f", str(fleet), "--force"], proxy.env())
    assert run.code == 0, run.out + run.err
    assert proxy.route(static["model_info"]["id"]) is not None


def test_owns_model_groups_prunes_portal_orphans(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    orphan = create_by_hand(proxy, model, OLD)  # the host moved; the portal never deleted it
    current = create_by_hand(proxy, model, NEW)  # the portal's route at today's address
    elsewhere = create_by_hand(proxy, f"{fleet_name}-not-ours", OLD)
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": NEW}}}, owns="model_groups"
    )
    plan = plan_json(proxy, fleet)
    actions = {(c["action"], c["id"]) for c in plan["changes"]}
    # The portal's route at the host's address is adopted in place (it keeps LiteLLM's id and
    # whatever LiteLLM does not list); the one at an address fleet.yaml does not list goes.
    assert actions == {("update", current), ("delete", orphan)}
    apply_ok(proxy, fleet)
    ids = {r["model_info"]["id"] for r in proxy.routes()}
    assert orphan not in ids and current in ids and elsewhere in ids
    adopted = proxy.route(current)
    assert adopted is not None and adopted["model_info"]["fleet_sync_host"] == "a"
    assert plan_json(proxy, fleet)["changes"] == []


def test_hand_edit_is_detected_and_repaired(proxy: Proxy, tmp_path: Path, fleet_name: str) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": NEW}}})
    apply_ok(proxy, fleet)
    rid = route_id(fleet_name, model, "a")
    with proxy.http() as http:
        answer = http.patch(f"/model/{rid}/update", json={"litellm_params": {"api_base": OLD}})
    assert answer.status_code == 200, answer.text
    run = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode"], proxy.env())
    assert run.code == 2
    assert f'litellm_params.api_base: "{OLD}" -> "{NEW}"' in run.out
    apply_ok(proxy, fleet)
    route = proxy.route(rid)
    assert route is not None and route["litellm_params"]["api_base"] == NEW


def test_prune_threshold_refuses_without_force(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    hosts = {f"h{i}": f"http://216.243.220.245:{17000 + i}/v1" for i in range(10)}
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": hosts}})
    apply_ok(proxy, fleet)
    write_fleet(fleet, fleet_name, {model: {"hosts": dict(list(hosts.items())[:6])}})
    run = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
    assert run.code == 3, run.out + run.err
    assert "prunes 4 of the 10 routes" in run.err and "--force" in run.err
    assert len(proxy.ids(model)) == 10
    apply_ok(proxy, fleet, "--force")
    assert len(proxy.ids(model)) == 6


def test_emptied_model_group_is_refused(proxy: Proxy, tmp_path: Path, fleet_name: str) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    apply_ok(proxy, fleet)
    write_fleet(
        fleet,
        fleet_name,
        {model: {"hosts": {"a": {"name": "a", "api_base": OLD, "enabled": False}}}},
    )
    run = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
    assert run.code == 3
    assert f"model {model} would be left with no routes" in run.err
    assert proxy.route(route_id(fleet_name, model, "a")) is not None


def test_saved_plan_goes_stale(proxy: Proxy, tmp_path: Path, fleet_name: str) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    apply_ok(proxy, fleet)
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": NEW}}})
    saved = tmp_path / "plan.json"
    assert fleet_sync(["plan", "-f", str(fleet), "--out", str(saved)], proxy.env()).code == 0
    rid = route_id(fleet_name, model, "a")
    moved = "http://10.0.0.77:8000/v1"
    with proxy.http() as http:  # live state moves between review and apply (a hand edit)
        http.patch(f"/model/{rid}/update", json={"litellm_params": {"api_base": moved}})
    run = fleet_sync(["apply", "-f", str(fleet), "--plan", str(saved)], proxy.env())
    assert run.code == 3 and "stale" in run.err
    route = proxy.route(rid)
    assert route is not None and route["litellm_params"]["api_base"] == moved  # nothing written
    assert fleet_sync(["plan", "-f", str(fleet), "--out", str(saved)], proxy.env()).code == 0
    apply_ok(proxy, fleet, "--plan", str(saved))


def test_dry_run_writes_nothing(proxy: Proxy, tmp_path: Path, fleet_name: str) -> None:
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    run = fleet_sync(["apply", "-f", str(fleet), "--dry-run"], proxy.env())
    assert run.code == 0 and "+ create" in run.out
    assert not [r for r in proxy.routes() if r["model_info"].get("fleet_sync_fleet") == fleet_name]


def test_api_key_reference_change_is_an_update(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"api_key": "os.environ/KEY_A", "hosts": {"a": OLD}}},
    )
    apply_ok(proxy, fleet)
    write_fleet(fleet, fleet_name, {model: {"api_key": "os.environ/KEY_B", "hosts": {"a": OLD}}})
    plan = plan_json(proxy, fleet)
    assert [c["action"] for c in plan["changes"]] == ["update"]
    apply_ok(proxy, fleet)


def test_removed_param_is_dropped(proxy: Proxy, tmp_path: Path, fleet_name: str) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"litellm_params": {"rpm": 5}, "hosts": {"a": OLD}}},
    )
    apply_ok(proxy, fleet)
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": OLD}}})
    # How it goes depends on the version: in place where PATCH honours litellm_params_to_remove
    # (1.109+); else the route is replaced by the next generation of its id, created before the
    # old one is deleted. Never a delete and re-create of the same id.
    in_place = LiteLLMRelease(proxy.litellm_version()).removes_params_in_place
    plan = plan_json(proxy, fleet)
    rid = route_id(fleet_name, model, "a")
    serving = rid if in_place else f"{rid}-g2"
    if in_place:
        assert [(c["action"], c["id"]) for c in plan["changes"]] == [("update", rid)]
        assert plan["changes"][0]["removes"] == ["litellm_params.rpm"]
    else:
        assert [(c["action"], c["id"]) for c in plan["changes"]] == [
            ("create", serving),
            ("delete", rid),
        ]
        assert plan["changes"][1]["removes"] == ["litellm_params.rpm"]
    run = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
    assert run.code == 0, run.out + run.err
    assert_converged(proxy, fleet)
    assert ("removed rpm in place" in run.out) is in_place, run.out
    assert proxy.ids(model) == [serving]
    route = proxy.route(serving)
    assert route is not None and "rpm" not in route["litellm_params"]


def test_plan_text_is_coloured_only_in_a_terminal(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    env = proxy.env()
    env.pop("NO_COLOR")
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "sync", "plan", "-f", str(fleet)],
        stdout=terminal,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(terminal)
    chunks = []
    try:
        while True:  # drain the terminal as it fills, or a long plan blocks the writer
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the writer is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(controller)
    assert process.wait(timeout=60) == 0
    shown = b"".join(chunks)
    assert b"\x1b[32m+ create" in shown
    piped = fleet_sync(["plan", "-f", str(fleet)], env)
    assert "+ create" in piped.out and "\x1b[" not in piped.out


def test_apply_json_is_json_even_without_changes(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    first = fleet_sync(["apply", "-f", str(fleet), "--format", "json"], proxy.env())
    assert first.code == 0, first.err
    body = json.loads(first.out)
    assert body["complete"] is True
    assert [(o["action"], o["status"]) for o in body["outcomes"]] == [("create", "done")]
    again = fleet_sync(["apply", "-f", str(fleet), "--format", "json"], proxy.env())
    assert json.loads(again.out)["outcomes"] == []


def test_a_malformed_record_of_paths_is_repaired(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Issue 23 (Deliver 8): a fleet route whose fleet_sync_paths does not read is rewritten by
    the next apply; what the record still tells (a readable entry) lets a key fleet.yaml dropped
    leave; the plan after that apply is empty."""
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"model_info": {"note": "x"}, "hosts": {"a": NEW}}},
    )
    apply_ok(proxy, fleet)
    rid = route_id(fleet_name, model, "a")

    def break_record(record: Any) -> None:
        current = proxy.ids(model)[0]
        with proxy.http() as http:
            answer = http.patch(
                f"/model/{current}/update",
                json={"model_info": {"id": current, "fleet_sync_paths": record}},
            )
        assert answer.status_code == 200, answer.text
        route = proxy.route(current)
        assert route is not None and route["model_info"]["fleet_sync_paths"] == record

    # Not a list at all: the plan rewrites it in place, then is empty.
    break_record("not a list")
    plan = plan_json(proxy, fleet)
    assert [(c["action"], c["id"]) for c in plan["changes"]] == [("update", rid)]
    assert [d["path"] for d in plan["changes"][0]["diff"]] == ["model_info.fleet_sync_paths"]
    assert plan["changes"][0]["diff"][0]["before"] == "(malformed: rewritten)"
    apply_ok(proxy, fleet)
    route = proxy.route(rid)
    assert route is not None and isinstance(route["model_info"]["fleet_sync_paths"], list)

    # One entry broken, the note's still readable; fleet.yaml drops the note: it leaves.
    break_record(['read ["model_info"', 'read ["model_info", "note"]'])
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": NEW}}})
    plan = plan_json(proxy, fleet)
    paths = {d["path"] for c in plan["changes"] for d in c["diff"]}
    assert {"model_info.note", "model_info.fleet_sync_paths"} <= paths, plan["changes"]
    apply_ok(proxy, fleet)
    (serving,) = proxy.ids(model)
    route = proxy.route(serving)
    assert route is not None and "note" not in route["model_info"]
    assert all(" " in entry for entry in route["model_info"]["fleet_sync_paths"])
