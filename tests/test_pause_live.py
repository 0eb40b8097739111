"""LiteLLM's pause (`blocked`) as state fleet-sync models, on the real LiteLLM (issue 23, item 3).

Read in LiteLLM's source (1.98.1, 1.108.7, 1.110.2 alike): PATCH /model/{id}/update takes a
top-level `blocked` (its LiteLLM_ProxyModelTable.blocked column; /model/block and /model/unblock
set the same column), /v2/model/info lists it as model_info.blocked on every database route, and
the router sends a paused route nothing (a model whose routes are all paused answers 403 "Model
is blocked"). Checked here on each release, through upstreams on loopback that record the
Authorization header they receive:

- draining a host whose route was adopted from a portal (its api_key fleet-sync never saw)
  pauses the route: same id, still listed, requests go only to the group's other route; the
  next plan is empty; `enabled: true` resumes it and it serves again with the portal's key;
- an admin's pause of a host fleet.yaml enables is shown by plan and drift (exit 2), as a resume;
- a drained host's replacement (a key removed) is created paused;
- draining a group's last real host while its only other route is paused is refused (exit 3);
- a pause waits for its group's creates, updates and resumes: when one fails (LiteLLM answers
  422 int_from_float to `rpm: 1.5`), the pause is not sent, the model still answers from the
  route it would have paused (exit 4), and the next apply, fleet.yaml fixed, converges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sync.core.render import route_id

from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .support.upstream import Upstream
from .test_onboarding_live import cleaned, env
from .test_probe_live import chat

KEY = "portal-only-key-9d2e61"


def plan(fleet: Path, proxy: Proxy, code: int) -> dict[str, Any]:
    run = fleet_sync(
        ["plan", "-f", str(fleet), "--format", "json", "--detailed-exitcode"], env(proxy)
    )
    assert run.code == code, run.out + run.err
    body: dict[str, Any] = json.loads(run.out)
    return body


def apply(
    fleet: Path, proxy: Proxy, *extra: str, code: int = 0, via: FaultProxy | None = None
) -> str:
    """apply's output; `via`: through a fault proxy in front of the proxy's one pod."""
    environ = env(proxy)
    if via is not None:
        environ |= {"LITELLM_PROXY_URL": via.url, "LITELLM_PROXY_URLS": via.url}
    run = fleet_sync(["apply", "-f", str(fleet), *extra], environ)
    assert run.code == code, run.out + run.err
    return run.out + run.err


def paused(proxy: Proxy, rid: str) -> bool:
    route = proxy.route(rid)
    assert route is not None, f"{rid} is not listed"
    return route["model_info"].get("blocked") is True


def portal_route(proxy: Proxy, model: str, upstream: Upstream) -> str:
    """A route a portal made: untagged, LiteLLM's id, an api_key LiteLLM never lists."""
    body = {
        "model_name": model,
        "litellm_params": {
            "model": f"hosted_vllm/org/{model}",
            "api_base": upstream.url,
            "api_key": KEY,
        },
        "model_info": {},
    }
    with proxy.http() as http:
        answer = http.post("/model/new", json=body)
    assert answer.status_code == 200, answer.text
    rid: str = answer.json()["model_id"]
    return rid


def admin_pause(proxy: Proxy, rid: str) -> None:
    """What an admin does in LiteLLM's UI: POST /model/block. LiteLLM 1.98.1 stores the pause
    and then answers 500 (its answer model fails on the row: "'LiteLLM_ProxyModelTable' object
    has no attribute 'get'"); later releases answer 200."""
    with proxy.http() as http:
        answer = http.post("/model/block", json={"model_id": rid})
    assert answer.status_code in (200, 500), answer.text
    assert paused(proxy, rid), answer.text


def hosts(**spec: tuple[Upstream, bool]) -> dict[str, Any]:
    return {
        name: {"name": name, "api_base": u.url, **({} if on else {"enabled": False})}
        for name, (u, on) in spec.items()
    }


@pytest.mark.litellm_matrix
def test_a_drain_pauses_an_adopted_route_keeping_its_key_and_enabled_resumes_it(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    a = Upstream("A", [f"org/{model}"], key=KEY).start()
    b = Upstream("B", [f"org/{model}"], key=KEY).start()
    try:
        with cleaned(proxy, model):
            ids = {"a": portal_route(proxy, model, a), "b": portal_route(proxy, model, b)}
            path = tmp_path / "fleet.yaml"

            def fleet(a_on: bool, b_on: bool = True) -> Path:
                spec = {model: {"hosts": hosts(a=(a, a_on), b=(b, b_on))}}
                return write_fleet(path, fleet_name, spec, owns="model_groups")

            apply(fleet(True), proxy)  # adopted in place: the portal's ids and keys kept
            assert sorted(proxy.ids(model)) == sorted(ids.values())

            # Drain a: a pause, not a prune.
            changes = plan(fleet(False), proxy, 2)["changes"]
            assert [(c["action"], c["id"], c.get("pause")) for c in changes] == [
                ("update", ids["a"], "pause")
            ]
            text = fleet_sync(["plan", "-f", str(path)], env(proxy)).out
            assert (
                f"~ pause {model} host=a ({ids['a']})" in text
                # no prune line (the ignored list may name other tests' routes on this proxy)
                and not [line for line in text.splitlines() if line.startswith("- ")]
            )
            assert f"pause {model} host=a ({ids['a']}): paused" in apply(
                path, proxy
            )  # said as the plan said it
            assert sorted(proxy.ids(model)) == sorted(ids.values())  # still there, same id
            assert paused(proxy, ids["a"]) and not paused(proxy, ids["b"])
            assert plan(path, proxy, 0)["changes"] == []
            served_a = a.chats()
            for _ in range(6):
                assert chat(proxy, model) == "B"  # the paused route is sent nothing
            assert a.chats() == served_a

            # enabled: true resumes it; with b paused by an admin, only a can answer.
            assert f"resume {model} host=a ({ids['a']}): resumed" in apply(fleet(True), proxy)
            assert not paused(proxy, ids["a"])
            admin_pause(proxy, ids["b"])
            assert chat(proxy, model) == "A"
            assert a.authorizations[-1] == f"Bearer {KEY}"  # the portal's key survived

            # The admin's pause is drift: shown by plan and drift as a resume.
            changes = plan(path, proxy, 2)["changes"]
            assert [(c["id"], c.get("pause")) for c in changes] == [(ids["b"], "resume")]
            drift = fleet_sync(["drift", "-f", str(path)], env(proxy))
            assert drift.code == 2 and "resume" in drift.out, drift.out + drift.err
            apply(path, proxy)
            assert not paused(proxy, ids["b"])
    finally:
        a.stop()
        b.stop()


@pytest.mark.litellm_matrix
def test_a_drained_hosts_replacement_is_created_paused(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-r"
    d = Upstream("D", [f"org/{model}"]).start()
    e = Upstream("E", [f"org/{model}"]).start()
    try:
        with cleaned(proxy, model):
            path = tmp_path / "fleet.yaml"
            spec = hosts(d=(d, True), e=(e, True))
            spec["d"]["model_info"] = {"note": "x"}
            apply(write_fleet(path, fleet_name, {model: {"hosts": spec}}), proxy)
            (old,) = [r for r in proxy.ids(model) if "-d-" in r]
            # Drain d and drop the key only a replacement removes, in one edit.
            spec = hosts(d=(d, False), e=(e, True))
            changes = plan(write_fleet(path, fleet_name, {model: {"hosts": spec}}), proxy, 2)
            creates = [c for c in changes["changes"] if c["action"] == "create"]
            assert [(c["replaces"], c.get("paused")) for c in creates] == [(old, True)]
            apply(path, proxy)
            new = creates[0]["id"]
            assert paused(proxy, new) and old not in proxy.ids(model)
            assert plan(path, proxy, 0)["changes"] == []
            served_d = d.chats()
            for _ in range(4):
                assert chat(proxy, model) == "E"
            assert d.chats() == served_d
    finally:
        d.stop()
        e.stop()


@pytest.mark.litellm_matrix
def test_draining_the_last_host_beside_a_paused_route_is_refused(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-p"
    c = Upstream("C", [f"org/{model}"]).start()
    o = Upstream("O", [f"org/{model}"]).start()
    try:
        with cleaned(proxy, model):
            other = portal_route(proxy, model, o)  # not the fleet's (no owns: model_groups)
            admin_pause(proxy, other)
            path = tmp_path / "fleet.yaml"
            apply(write_fleet(path, fleet_name, {model: {"hosts": hosts(c=(c, True))}}), proxy)
            assert chat(proxy, model) == "C"
            write_fleet(path, fleet_name, {model: {"hosts": hosts(c=(c, False))}})
            out = apply(path, proxy, code=3)
            assert f"model {model} would be left with no routes" in out
            assert "a paused route serves nothing" in out
            assert chat(proxy, model) == "C"  # nothing was written
    finally:
        c.stop()
        o.stop()


@pytest.mark.litellm_matrix
def test_a_failed_create_keeps_its_groups_pause_unsent(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-x"
    a = Upstream("A", [f"org/{model}"]).start()
    c = Upstream("C", [f"org/{model}"]).start()
    try:
        with cleaned(proxy, model):
            path = tmp_path / "fleet.yaml"

            write_fleet(
                path, fleet_name, {model: {"hosts": hosts(a=(a, True))}}, owns="model_groups"
            )
            apply(path, proxy)
            (rid,) = proxy.ids(model)
            # Drain a and add c, whose create the proxy refuses (422, as LiteLLM answers a value
            # it will not take; validate refuses the ones it knows of first).
            spec = hosts(a=(a, False), c=(c, True))
            write_fleet(path, fleet_name, {model: {"hosts": spec}}, owns="model_groups")
            with FaultProxy(proxy.url) as refusing:
                refusing.add_rule("POST", "/model/new", Fault.status(422), times=None)
                out = apply(path, proxy, code=4, via=refusing)
            assert f"skipped: a create/update of {model} did not go through" in out, out
            assert not paused(proxy, rid) and proxy.ids(model) == [rid]
            assert chat(proxy, model) == "A"  # the model keeps its route
            apply(path, proxy)  # taken this time: c created, then a paused
            assert paused(proxy, rid)
            assert plan(path, proxy, 0)["changes"] == []
            served_a = a.chats()
            for _ in range(4):
                assert chat(proxy, model) == "C"
            assert a.chats() == served_a
    finally:
        a.stop()
        c.stop()


@pytest.mark.litellm_matrix
def test_a_failed_resume_keeps_its_groups_pause_unsent(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-y"
    a = Upstream("A", [f"org/{model}"]).start()
    c = Upstream("C", [f"org/{model}"]).start()
    try:
        with cleaned(proxy, model):
            path = tmp_path / "fleet.yaml"

            def fleet(c_on: bool = True) -> Path:
                spec = hosts(a=(a, True), c=(c, c_on))
                return write_fleet(path, fleet_name, {model: {"hosts": spec}}, owns="model_groups")

            apply(fleet(), proxy)
            ids = {h: route_id(fleet_name, model, h) for h in "ac"}
            assert proxy.ids(model) == sorted(ids.values())
            admin_pause(proxy, ids["a"])
            # Drain c, and the proxy refuses a's resume (a PATCH unpausing it) in the same run.
            with FaultProxy(proxy.url) as refusing:
                refusing.add_rule(
                    "PATCH",
                    r"/model/.+/update",
                    Fault.status(422),
                    times=None,
                    body_regex=r'"blocked":\s*false',
                )
                out = apply(fleet(c_on=False), proxy, code=4, via=refusing)
            assert f"skipped: a create/update of {model} did not go through" in out, out
            assert paused(proxy, ids["a"]) and not paused(proxy, ids["c"])
            assert chat(proxy, model) == "C"
            apply(fleet(c_on=False), proxy)
            assert not paused(proxy, ids["a"]) and paused(proxy, ids["c"])
            assert plan(path, proxy, 0)["changes"] == []
            assert chat(proxy, model) == "A"
    finally:
        a.stop()
        c.stop()
