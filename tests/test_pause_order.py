"""A pause takes a route out of service as a delete does, so apply orders it as one: a model
group's pauses run only once its creates, updates and resumes are listed, and are skipped (never
sent) when one of them failed or is not listed. apply_plan runs on a transport that answers from
memory; the real proxy is in tests/test_pause_live.py."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import yaml

from sync.core.health import HostHealth
from sync.core.healthgate import gate
from sync.core.plan import Plan, Update
from sync.core.planner import make_plan
from sync.core.render import PAUSED, Route, render
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.live.answers import parse_route
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient

from .support.owner import owner_of

POD = "http://127.0.0.1:4001"
A, C = "http://127.0.0.1:41001/v1", "http://127.0.0.1:41002/v1"


def fleet_of(hosts: dict[str, dict[str, Any]]) -> Fleet:
    doc = {
        "version": 1,
        "fleet": "f1",
        "owns": "model_groups",
        "models": {
            "mist": {
                "served_model": "org/mist",
                "hosts": [{"name": name, **host} for name, host in hosts.items()],
            }
        },
    }
    return fleet_from_doc(parse_yaml(yaml.safe_dump(doc), "fleet.yaml"), "fleet.yaml")


def listed(fleet: Fleet, host: str, paused: bool) -> Route:
    """The route fleet.yaml renders for host, as the proxy lists it, paused or not."""
    route = next(r for r in render(fleet) if r.host == host)
    entry = route.deployment()
    entry["model_info"][PAUSED] = paused
    parsed = parse_route(entry)
    assert parsed is not None
    return parsed


class Proxy:
    """Writes answered from memory; a write to an id in `refuse` answers 422 (LiteLLM's
    int_from_float for rpm: 1.5); a create is listed only once `serving` is set."""

    def __init__(self, live: list[Route], refuse: set[str]) -> None:
        self.rows = {r.id: r.deployment() for r in live}
        self.refuse = refuse
        self.serving = True
        self.sent: list[tuple[str, str, Any]] = []  # (path, id, blocked)
        self.lock = threading.Lock()

    def answer(self, request: httpx.Request) -> httpx.Response:
        body: dict[str, Any] = httpx.Response(200, content=request.content or b"{}").json()
        path = request.url.path
        with self.lock:
            if request.method == "GET":
                entries = [
                    {k: v for k, v in row.items() if k != "new"}
                    for row in self.rows.values()
                    if self.serving or not row.get("new")
                ]
                return httpx.Response(200, json={"data": entries, "total_count": len(entries)})
            rid = body["model_info"]["id"]
            self.sent.append((path, rid, body.get(PAUSED)))
            if rid in self.refuse:
                return httpx.Response(422, json={"detail": "int_from_float"})
            row = self.rows.get(rid) or {"new": True}
            row.update({k: v for k, v in body.items() if k != PAUSED})
            if PAUSED in body:
                row["model_info"] = {**row["model_info"], PAUSED: body[PAUSED]}
            self.rows[rid] = row
            return httpx.Response(200, json={})


def run(plan: Plan, proxy: Proxy) -> dict[str, tuple[str, str]]:
    with LiteLLMClient([POD], "k", transport=httpx.MockTransport(proxy.answer)) as client:
        result = apply_plan(
            plan, client, owner_of(plan.fleet), confirm_timeout=0, sleep=lambda _: None
        )
    return {o.change.host or "": (o.status, o.detail) for o in result.outcomes}


def pause_of(plan: Plan) -> Update:
    [pause] = [c for c in plan.changes if isinstance(c, Update) and c.pause]
    return pause


def drain_a_add_c() -> tuple[Fleet, Plan, list[Route]]:
    before = fleet_of({"a": {"api_base": A}})
    after = fleet_of({"a": {"api_base": A, "enabled": False}, "c": {"api_base": C}})
    live = [listed(before, "a", paused=False)]
    plan = make_plan(after, render(after), live, litellm_version="1.108.7")
    assert sorted((c.action, c.host) for c in plan.changes) == [("create", "c"), ("update", "a")]
    return after, plan, live


def test_a_failed_create_keeps_its_groups_pause_unsent() -> None:
    _, plan, live = drain_a_add_c()
    c_id = next(c.id for c in plan.changes if c.host == "c")
    proxy = Proxy(live, refuse={c_id})
    outcomes = run(plan, proxy)
    assert outcomes["c"][0] == "failed"
    status, detail = outcomes["a"]
    assert status == "skipped"
    assert f"a create/update of mist did not go through ({c_id} failed)" in detail
    assert [p for p, _, _ in proxy.sent] == ["/model/new"]  # the pause was never sent
    assert proxy.rows[pause_of(plan).id]["model_info"][PAUSED] is False


def test_a_create_not_listed_keeps_its_groups_pause_unsent() -> None:
    _, plan, live = drain_a_add_c()
    proxy = Proxy(live, refuse=set())
    proxy.serving = False  # stored, never loaded by the router
    outcomes = run(plan, proxy)
    assert outcomes["c"][0] == "unconfirmed"
    status, detail = outcomes["a"]
    assert status == "skipped" and "is not listed by the router" in detail
    assert [p for p, _, _ in proxy.sent] == ["/model/new"]


def test_the_pause_runs_once_the_create_is_listed() -> None:
    _, plan, live = drain_a_add_c()
    proxy = Proxy(live, refuse=set())
    outcomes = run(plan, proxy)
    assert outcomes == {"a": ("done", "paused"), "c": ("done", "created")}
    paths = [p for p, _, _ in proxy.sent]
    assert paths[0] == "/model/new" and paths[-1].endswith("/update")  # the create first
    assert proxy.sent[-1][2] is True


def test_a_failed_resume_keeps_its_groups_pause_unsent() -> None:
    """Route a paused by hand, c serving; fleet.yaml resumes a (with a value LiteLLM refuses)
    and drains c: c keeps serving."""
    before = fleet_of({"a": {"api_base": A}, "c": {"api_base": C}})
    after = fleet_of(
        {"a": {"api_base": A, "litellm_params": {"rpm": 2}}, "c": {"api_base": C, "enabled": False}}
    )
    live = [listed(before, "a", paused=True), listed(before, "c", paused=False)]
    plan = make_plan(after, render(after), live, litellm_version="1.108.7")
    assert sorted((c.host, getattr(c, "pause", None)) for c in plan.changes) == [
        ("a", False),
        ("c", True),
    ]
    a_id = next(c.id for c in plan.changes if c.host == "a")
    proxy = Proxy(live, refuse={a_id})
    outcomes = run(plan, proxy)
    assert outcomes["a"][0] == "failed"
    assert outcomes["c"][0] == "skipped"
    assert [rid for _, rid, _ in proxy.sent] == [a_id]


def test_a_pause_in_another_group_is_not_held() -> None:
    """The hold is per model group: a drain alone runs at once."""
    before = fleet_of({"a": {"api_base": A}, "c": {"api_base": C}})
    after = fleet_of({"a": {"api_base": A, "enabled": False}, "c": {"api_base": C}})
    live = [listed(before, "a", paused=False), listed(before, "c", paused=False)]
    plan = make_plan(after, render(after), live, litellm_version="1.108.7")
    assert run(plan, Proxy(live, refuse=set())) == {"a": ("done", "paused")}


def test_health_require_withholds_the_pause_of_a_group_whose_create_was_withheld() -> None:
    after, plan, _ = drain_a_add_c()
    c = next(r for r in render(after) if r.host == "c")
    down = HostHealth(
        c.id, "mist", "c", C, "org/mist", "no_answer", (), detail="cannot connect: refused"
    )
    gated = gate(plan, [down], require=True)
    assert gated.changes == ()
    assert [(w.change.action, w.change.host) for w in gated.withheld] == [
        ("create", "c"),
        ("update", "a"),
    ]
    assert gated.withheld[1].reason == (
        "not paused: the create of mist host c was withheld, so this route stays in service"
    )
