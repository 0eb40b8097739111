"""Proof that hosts serve (plan/apply --probe, health: require) and proof through the proxy
after apply (apply --verify), against the real LiteLLM and upstreams on 127.0.0.1 (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sync.core.render import route_id

from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .support.upstream import Upstream, silent_address, upstreams
from .test_sync_live import create_by_hand


def chat(proxy: Proxy, model: str) -> str:
    """One request through the proxy; the upstream that answered puts its name in the reply."""
    with proxy.http() as http:
        answer = http.post(
            "/v1/chat/completions",
            json={"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1},
        )
    assert answer.status_code == 200, answer.text
    content: str = answer.json()["choices"][0]["message"]["content"]
    return content


def plan_json(proxy: Proxy, fleet: Path, *extra: str, code: int = 0) -> dict[str, Any]:
    run = fleet_sync(["plan", "-f", str(fleet), "--format", "json", *extra], proxy.env())
    assert run.code == code, run.out + run.err
    body: dict[str, Any] = json.loads(run.out)
    return body


def test_moved_host_is_probed_applied_and_verified_through_the_proxy(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    with upstreams(("A", [f"org/{model}"]), ("B", [f"org/{model}"])) as (a, b):
        fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"h": a.url}}})
        assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
        assert chat(proxy, model) == "A"
        assert (a.chats(), b.chats()) == (1, 0)

        write_fleet(fleet, fleet_name, {model: {"hosts": {"h": b.url}}})  # the host moved
        rid = route_id(fleet_name, model, "h")
        plan = plan_json(proxy, fleet, "--probe")
        [change] = plan["changes"]
        assert (change["action"], change["health"]["state"]) == ("update", "serves")
        assert change["health"]["api_base"] == b.url
        assert plan["withheld"] == []
        text = fleet_sync(["plan", "-f", str(fleet), "--probe"], proxy.env())
        assert f"~ update {model} host=h ({rid})" in text.out
        assert f"    probe: serves org/{model}" in text.out
        assert "probe: 1 host(s): 1 serve" in text.out
        assert b.model_lists() == 2 and a.model_lists() == 0

        applied = fleet_sync(["apply", "-f", str(fleet), "--probe", "--verify"], proxy.env())
        assert applied.code == 0, applied.out + applied.err
        assert f"  ok      {model}: answered by host h ({rid}) at {b.url}" in applied.out
        assert (a.chats(), b.chats()) == (1, 1)  # the verify request reached B

        for _ in range(3):
            assert chat(proxy, model) == "B"
        assert (a.chats(), b.chats()) == (1, 4)  # nothing reached A after the move


def test_require_withholds_hosts_that_serve_another_model_or_do_not_answer(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    m, m2, m3 = (f"{fleet_name}-{s}" for s in ("m", "m2", "m3"))
    good: list[tuple[str, list[str]]] = [("good", [f"org/{m}", f"org/{m2}", f"org/{m3}"])]
    with upstreams(*good, ("other", ["org/other"])) as (ok, other):
        silent = silent_address()
        path = tmp_path / "fleet.yaml"
        fleet = write_fleet(path, fleet_name, {m: {"hosts": {"h1": ok.url}}}, owns="model_groups")
        assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
        # Left by a runtime portal: untagged, claimed through owns: model_groups.
        portal = create_by_hand(proxy, m2, ok.url)
        models: dict[str, Any] = {
            m: {"hosts": {"h1": other.url, "h2": silent}},  # moved to a wrong host; a dead one
            m2: {"hosts": {"z": other.url}},  # would replace the portal's route
            m3: {"hosts": {"k": ok.url}},  # healthy: goes ahead
        }
        write_fleet(path, fleet_name, models, owns="model_groups")
        ids = {h: route_id(fleet_name, mod, h) for mod, s in models.items() for h in s["hosts"]}

        probed = plan_json(proxy, fleet, "--probe")  # reports, withholds nothing
        assert probed["withheld"] == []
        states = {h["host"]: (h["state"], h["models"]) for h in probed["health"]}
        assert states["h1"] == ("other_model", ["org/other"])
        assert states["h2"][0] == "no_answer"
        assert states["k"] == ("serves", [f"org/{m}", f"org/{m2}", f"org/{m3}"])
        text = fleet_sync(["plan", "-f", str(fleet), "--probe"], proxy.env()).out
        assert f"probe: serves something else: org/other (not org/{m})" in text
        assert "probe: not answering (cannot connect: " in text

        run = fleet_sync(["apply", "-f", str(fleet), "--require-healthy"], proxy.env())
        assert run.code == 4, run.out + run.err
        assert "1 done, 0 failed, 0 unconfirmed, 0 skipped, 4 withheld" in run.out
        assert f"  withheld    update {m} host=h1 ({ids['h1']}): {other.url} serves" in run.out
        assert f"  withheld    delete {m2} ({portal}): not pruned: the create of {m2}" in run.out
        live = {r["model_info"]["id"]: r for r in proxy.routes()}
        assert live[ids["h1"]]["litellm_params"]["api_base"] == ok.url  # not moved
        assert ids["h2"] not in live and ids["z"] not in live
        assert portal in live  # the old route was not pruned in the withheld one's place
        assert ids["k"] in live

        # health: require in fleet.yaml does the same without the flag, and the plan says so.
        write_fleet(path, fleet_name, models, owns="model_groups", health="require")
        held = plan_json(proxy, fleet, "--detailed-exitcode", code=2)
        assert held["changes"] == []
        withheld = {(w["action"], w["id"]): w for w in held["withheld"]}
        assert set(withheld) == {
            ("update", ids["h1"]),
            ("create", ids["h2"]),
            ("create", ids["z"]),
            ("delete", portal),
        }
        assert withheld["create", ids["h2"]]["health"]["state"] == "no_answer"
        markdown = fleet_sync(["plan", "-f", str(fleet), "--format", "markdown"], proxy.env())
        assert "Withheld: the host does not serve its model (4)" in markdown.out
        assert chat(proxy, m) == "good" and chat(proxy, m2) == "good"  # still served


def test_verify_fails_when_the_proxy_cannot_reach_the_new_address(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    with upstreams(("A", [f"org/{model}"])) as (a,):
        fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"h": a.url}}})
        assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
        silent = silent_address()
        write_fleet(fleet, fleet_name, {model: {"hosts": {"h": silent}}})
        run = fleet_sync(["apply", "-f", str(fleet), "--verify", "--format", "json"], proxy.env())
        assert run.code == 4, run.out + run.err
        result = json.loads(run.out)
        assert result["complete"] is True  # the write itself was confirmed
        [verified] = result["verify"]
        assert verified["ok"] is False and verified["model_name"] == model
        # LiteLLM 1.108.7 names no deployment when the upstream refuses the connection.
        assert verified["detail"].startswith(
            f"500 (the proxy did not say which route; this fleet's only route of the model is "
            f"host h at {silent}): "
        ), verified["detail"]
        assert a.chats() == 0


def test_probe_sends_the_hosts_key_from_this_environment(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    secret = "sk-upstream-" + fleet_name
    keyed = Upstream("keyed", [f"org/{model}"], key=secret).start()
    try:
        fleet = write_fleet(
            tmp_path / "fleet.yaml",
            fleet_name,
            {model: {"hosts": {"h": keyed.url}}},
            defaults={"api_key": "os.environ/TEST_UPSTREAM_KEY"},
        )
        env = {**proxy.env(), "TEST_UPSTREAM_KEY": secret}
        run = fleet_sync(["plan", "-f", str(fleet), "--probe"], env)
        assert run.code == 0 and "probe: serves org/" in run.out, run.out + run.err
        assert keyed.authorizations == [f"Bearer {secret}"]
        assert secret not in run.out + run.err

        env.pop("TEST_UPSTREAM_KEY")
        run = fleet_sync(["plan", "-f", str(fleet), "--probe"], env)
        assert "needs a key (GET /models answered 401 without a key); " in run.out
        assert "TEST_UPSTREAM_KEY is not set in fleet-sync's environment" in run.out
        assert keyed.authorizations == [f"Bearer {secret}", None]
    finally:
        keyed.stop()
