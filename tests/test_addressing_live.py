"""Nothing the proxy says steers a request, on a real LiteLLM (issue 23, the High finding).

A route stored under the id `x/../victim-route-1` in a model group the fleet claims
(`owns: model_groups`, what `import` writes) was adopted, and apply sent
`PATCH /model/x/../victim-route-1/update`: the HTTP client collapsed the dot segments and
LiteLLM rewrote `victim-route-1`, another team's untagged route in another group, with the
victim's upstream api_key kept. LiteLLM's /model/new stores such ids as given (1.98.1 to
1.110.2). Now the plan lists the route as ignored, with the reason, and apply sends nothing
that touches the victim: its database row is the same, byte for byte, afterwards. The plain-data
side: tests/test_addressing.py and tests/cases/plan/34-*.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .support.faultproxy import FaultProxy
from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .support.upstream import silent_address
from .test_value_limits_live import sql


def stored_row(run: Callable[[str], str], rid: str) -> str:
    """The route's database row as PostgreSQL prints it (every column, encrypted values and
    updated_at included): any write to it changes this text."""
    quoted = rid.replace("'", "''")
    table = '"LiteLLM_ProxyModelTable"'
    return run(f"SELECT row_to_json(t)::text FROM {table} t WHERE model_id = '{quoted}'")


def new_route(proxy: Proxy, model_name: str, rid: str, api_base: str, **info: Any) -> None:
    body = {
        "model_name": model_name,
        "litellm_params": {
            "model": f"hosted_vllm/org/{model_name}",
            "api_base": api_base,
            "api_key": f"sk-upstream-key-of-{model_name}",
        },
        "model_info": {"id": rid, **info},
    }
    with proxy.http() as http:
        answer = http.post("/model/new", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["model_id"] == rid  # stored under the id as given


@pytest.mark.litellm_matrix  # key removal in place (PATCH) exists from 1.109 on
def test_a_route_id_that_walks_the_admin_url_is_ignored_and_the_victim_untouched(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    victim = f"{fleet_name}-victim-route-1"
    attacker = f"x/../{victim}"
    tagged = f"y%2F..%2F{victim}"  # carries this fleet's tags: owned, were its id safe
    model = f"{fleet_name}-m"
    a, b = silent_address(), silent_address()
    new_route(proxy, f"{fleet_name}-victims-model", victim, silent_address())
    new_route(proxy, model, attacker, a)
    new_route(proxy, model, tagged, b, fleet_sync_fleet=fleet_name, fleet_sync_host="b")
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"hosts": {"a": a, "b": b}}},
        owns="model_groups",
    )
    with sql(proxy) as run:
        before = stored_row(run, victim)
        assert victim in before
        listed_before = proxy.route(victim)

        done = fleet_sync(["plan", "-f", str(fleet), "--format", "json"], proxy.env())
        assert done.code == 3, done.err  # host b's conflict: apply would refuse
        plan = json.loads(done.out)
        ignored = {i["id"]: i["reason"] for i in plan["ignored"]}
        assert (
            "cannot be addressed exactly in LiteLLM's admin URL (it holds '/')" in ignored[attacker]
        )
        # The fleet's own route of host b under an unsafe id still serves b: no twin beside it
        # (it would lack the api_key LiteLLM hides on it): a conflict naming it, never written.
        (conflict,) = plan["conflicts"]
        assert conflict["held"] == "host" and conflict["held_by"]["id"] == tagged
        assert "fleet-sync never writes to it" in conflict["reason"]
        assert "(it holds '%')" in conflict["reason"]
        changed = {c["id"] for c in plan["changes"]}
        assert [(c["action"], c["host"]) for c in plan["changes"]] == [("create", "a")]
        assert not changed & {victim, attacker, tagged}

        with FaultProxy(proxy.url) as fp:
            environ = {**proxy.env(), "LITELLM_PROXY_URL": fp.url, "LITELLM_PROXY_URLS": fp.url}
            done = fleet_sync(["apply", "-f", str(fleet), "--format", "json", "--force"], environ)
            sent = fp.log
        assert done.code == 4, done.out + done.err  # forced past b's conflict: b has no route
        statuses = {(o["action"], o["status"]) for o in json.loads(done.out)["outcomes"]}
        assert statuses == {("create", "done")}
        for request in sent:  # nothing addressed to, or selecting, the victim or its attackers
            said = request.path + "?" + request.query + request.raw_body.decode("utf-8", "replace")
            assert victim not in said, (request.method, request.path, request.body)
        assert stored_row(run, victim) == before
        assert proxy.route(victim) == listed_before
        with proxy.http() as http:
            for rid in (victim, attacker, tagged, *changed):
                http.post("/model/delete", json={"id": rid})
