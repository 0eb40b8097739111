"""Host health on plain data: withholding under health: require (healthgate), how plans and
results show it, the /models answer, one probe request, and the fleet.yaml key."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import yaml

from sync.core.health import HealthState, HostHealth, listed_models
from sync.core.healthgate import gate
from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import Route, render, route_id, with_id
from sync.core.result import Outcome, Result
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import parse_yaml
from sync.live.answers import parse_route
from sync.live.probe import BODY_CAP, NeedsKey, ask, resolve_key
from sync.report.json_format import result_json
from sync.report.markdown import pr_markdown
from sync.report.text import plan_text

OLD, NEW = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"


def fleet_of(models: dict[str, Any], **top: Any) -> Fleet:
    doc = {"version": 1, "fleet": "f1", **top, "models": models}
    return fleet_from_doc(parse_yaml(yaml.safe_dump(doc), "fleet.yaml"), "fleet.yaml")


def live_as(fleet: Fleet, model: str, host: str, **params: Any) -> Route:
    """The route fleet.yaml renders for (model, host), as the proxy would list it, edited."""
    route = next(r for r in render(fleet) if r.model_name == model and r.host == host)
    entry = route.deployment()
    entry["litellm_params"].update(params)
    parsed = parse_route(entry)
    assert parsed is not None
    return parsed


def health(
    fleet: Fleet, model: str, host: str, state: HealthState, models: tuple[str, ...] = ()
) -> HostHealth:
    route = next(r for r in render(fleet) if r.model_name == model and r.host == host)
    detail = "cannot connect: refused" if state == "no_answer" else ""
    return HostHealth(
        route.id, model, host, route.api_base or "", "org/m", state, models, detail=detail
    )


def tagged(model: str, host: str, api_base: str) -> Route:
    """A live route this fleet wrote for a host fleet.yaml no longer lists."""
    rid = route_id("f1", model, host)
    params = {"model": "hosted_vllm/org/m", "api_base": api_base}
    return Route(rid, model, params, {"id": rid, "fleet_sync_fleet": "f1", "fleet_sync_host": host})


def two_host_fleet(**top: Any) -> Fleet:
    return fleet_of(
        {
            "m": {
                "served_model": "org/m",
                "litellm_params": {"rpm": 10},
                "hosts": [{"name": "a", "api_base": NEW}, {"name": "b", "api_base": OLD}],
            },
            "n": {
                "served_model": "org/m",
                "litellm_params": {"rpm": 10},  # edited by hand in some tests: drift
                "hosts": [{"name": "c", "api_base": OLD}],
            },
        },
        **top,
    )


def plan_with(fleet: Fleet, live: list[Route]) -> Plan:
    return make_plan(fleet, render(fleet), live)


def test_require_withholds_a_move_to_a_host_that_serves_something_else() -> None:
    fleet = two_host_fleet()
    # a moved from OLD to NEW; b's rpm changed (the route stays where it is).
    live = [live_as(fleet, "m", "a", api_base=OLD), live_as(fleet, "m", "b", rpm=5)]
    live.append(live_as(fleet, "n", "c"))
    plan = plan_with(fleet, live)
    assert [c.action for c in plan.changes] == ["update", "update"]
    probed = [
        health(fleet, "m", "a", "other_model", ("org/x",)),
        health(fleet, "m", "b", "no_answer"),
        health(fleet, "n", "c", "serves", ("org/m",)),
    ]
    gated = gate(plan, probed, require=True)
    [held] = gated.withheld
    assert (held.change.action, held.change.host) == ("update", "a")
    assert held.reason == f"{NEW} serves something else: org/x (not org/m)"
    # An rpm change on a silent host does not re-point its route: it goes ahead.
    assert [(c.action, c.host) for c in gated.changes] == [("update", "b")]
    assert not gated.empty


def test_without_require_health_is_shown_and_nothing_is_withheld_nor_hashed() -> None:
    fleet = two_host_fleet()
    plan = plan_with(fleet, [live_as(fleet, "m", "a", api_base=OLD)])
    probed = [health(fleet, "m", "a", "no_answer"), health(fleet, "m", "b", "serves")]
    gated = gate(plan, probed, require=False)
    assert gated.changes == plan.changes and gated.withheld == ()
    assert gated.hash == plan.hash  # a probe is not a change: it never makes a plan stale
    body = gated.unredacted_json()
    by_id = {c["id"]: c for c in body["changes"]}
    assert by_id[route_id("f1", "m", "a")]["health"]["state"] == "no_answer"
    assert "health" not in by_id[route_id("f1", "n", "c")]  # not probed: no verdict invented
    assert [h["host"] for h in body["health"]] == ["a", "b"]
    assert plan.unredacted_json()["health"] is None  # not probed at all


def test_require_keeps_the_prunes_of_a_group_whose_change_was_withheld() -> None:
    fleet = fleet_of(
        {
            "m": {"served_model": "org/m", "hosts": [{"name": "new", "api_base": NEW}]},
            "n": {
                "served_model": "org/m",
                "litellm_params": {"rpm": 10},  # edited by hand in some tests: drift
                "hosts": [{"name": "c", "api_base": OLD}],
            },
        },
    )
    gone_m, gone_n = tagged("m", "old", OLD), tagged("n", "gone", NEW)
    live = [gone_m, gone_n, live_as(fleet, "n", "c")]
    plan = plan_with(fleet, live)
    assert sorted((c.action, c.model_name) for c in plan.changes) == [
        ("create", "m"),
        ("delete", "m"),
        ("delete", "n"),
    ]
    probed = [health(fleet, "m", "new", "no_answer"), health(fleet, "n", "c", "serves")]
    gated = gate(plan, probed, require=True)
    assert [(w.change.action, w.change.model_name) for w in gated.withheld] == [
        ("create", "m"),
        ("delete", "m"),
    ]
    assert gated.withheld[1].reason == (
        "not pruned: the create of m host new was withheld, so this route stays in its place"
    )
    assert [(c.action, c.model_name) for c in gated.changes] == [("delete", "n")]


def test_require_keeps_an_untagged_route_whose_replacement_does_not_serve() -> None:
    """An untagged route at an address fleet.yaml no longer lists is pruned once the host's
    new route serves; when the new address does not serve, both wait. The untagged route at
    the host's own address is adopted in place: it stays where it is, so it is not withheld."""
    fleet = fleet_of(
        {"m": {"served_model": "org/m", "hosts": [{"name": "a", "api_base": NEW}]}},
        owns="model_groups",
    )
    params = {"model": "hosted_vllm/org/m", "api_base": OLD}
    portal = Route("portal-1", "m", params, {"id": "portal-1"})
    plan = plan_with(fleet, [portal])
    assert [(c.action, c.id) for c in plan.changes] == [
        ("create", route_id("f1", "m", "a")),
        ("delete", "portal-1"),
    ]
    gated = gate(plan, [health(fleet, "m", "a", "other_model", ())], require=True)
    assert gated.changes == ()
    assert [w.change.id for w in gated.withheld] == [route_id("f1", "m", "a"), "portal-1"]
    assert "serves something else: no model (not org/m)" in gated.withheld[0].reason

    at_host = Route("portal-2", "m", {**params, "api_base": NEW}, {"id": "portal-2"})
    plan = plan_with(fleet, [at_host])
    assert [(c.action, c.id) for c in plan.changes] == [("update", "portal-2")]
    gated = gate(plan, [health(fleet, "m", "a", "no_answer")], require=True)
    assert [c.id for c in gated.changes] == ["portal-2"] and not gated.withheld
    assert gated.health_of("m", "a") is not None  # its probe result, though its id is LiteLLM's


def test_require_withholds_a_change_whose_host_was_not_probed() -> None:
    fleet = two_host_fleet()
    plan = plan_with(fleet, [])
    gated = gate(plan, [], require=True)
    assert len(gated.withheld) == len(plan.changes) == 3
    assert gated.withheld[0].reason.endswith("health: require needs proof it serves")


def withheld_plan() -> Plan:
    """health: require holds back a move to a host that does not answer; a host that serves
    something else is reported although nothing about it changes."""
    fleet = two_host_fleet()
    live = [live_as(fleet, "m", "a", api_base=OLD), live_as(fleet, "m", "b")]
    live.append(live_as(fleet, "n", "c", rpm=1))
    probed = [
        health(fleet, "m", "a", "no_answer"),
        health(fleet, "m", "b", "other_model", ("org/`x`",)),
        health(fleet, "n", "c", "serves", ("org/m",)),
    ]
    return gate(plan_with(fleet, live), probed, require=True)


def test_the_pr_view_and_the_json_result_show_health() -> None:
    """The plan's text and markdown of this gated plan, and its result's text, are golden files
    (tests/cases/report/withheld-by-health.*, apply-withheld.*, tests/test_report_golden.py)."""
    gated = withheld_plan()
    pr = pr_markdown(gated, gated.changes, (), "base")
    assert "Withheld: the host does not serve its model (1)" in pr
    assert "Hosts that do not serve, no change planned: 1" in pr

    result = Result(gated, tuple(Outcome(c, "done", "updated") for c in gated.changes))
    assert not result.complete  # a withheld change means apply exits 4
    body = result_json(result)
    assert body["complete"] is False
    assert [w["host"] for w in body["withheld"]] == ["a"]
    assert len(body["health"]) == 3


def test_listed_models_reads_an_openai_model_list() -> None:
    body = {"object": "list", "data": [{"id": "org/m"}, {"id": "bad\nid"}, {"no": "id"}]}
    assert listed_models(json.dumps(body).encode()) == ("org/m", "bad?id")
    assert listed_models(b"<html>") == "the answer is not JSON: expecting value at line 1 column 1"
    assert listed_models(b'{"models": []}') == (
        "the answer has no data list (not an OpenAI-compatible /models)"
    )


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, b'{"data": [{"id": "org/m"}]}', ("org/m",)),
        (401, b"{}", "GET /models answered 401: the host refused the key"),
        (503, b"busy", "GET /models answered 503"),
        (200, b"x" * (BODY_CAP + 1), f"the answer is larger than {BODY_CAP // 1024} KiB"),
        (200, b"[" * 100_000, "the answer is nested deeper than 64 levels"),
    ],
)
def test_ask_one_host(status: int, body: bytes, expected: object) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=body)

    with httpx.Client(transport=httpx.MockTransport(answer)) as http:
        assert ask(http, "http://10.0.0.1:8000/v1/", "k", 5.0) == expected
    assert str(seen[0].url) == "http://10.0.0.1:8000/v1/models"
    assert seen[0].headers["Authorization"] == "Bearer k"


def test_ask_without_a_key_reads_a_refusal_as_needs_a_key() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(403, content=b"{}")

    with httpx.Client(transport=httpx.MockTransport(answer)) as http:
        assert ask(http, "http://10.0.0.1:8000/v1", None, 5.0) == NeedsKey(403)
    assert "Authorization" not in seen[0].headers
    assert NeedsKey(403).detail == "GET /models answered 403 without a key"


def test_resolve_key_names_a_variable_that_is_not_set() -> None:
    assert resolve_key("os.environ/K", {"K": "v"}) == ("v", "")
    assert resolve_key(None, {}) == (None, "")
    key, note = resolve_key("os.environ/K", {})
    assert key is None
    assert note == "K is not set in fleet-sync's environment: probed without a key"


def test_health_key_in_fleet_yaml() -> None:
    hosts = [{"name": "a", "api_base": NEW}]
    assert fleet_of({"m": {"served_model": "s", "hosts": hosts}}, health="require").health == (
        "require"
    )
    assert fleet_of({"m": {"served_model": "s", "hosts": hosts}}).health is None
    with pytest.raises(FleetError) as caught:
        fleet_of({"m": {"served_model": "s", "hosts": hosts}}, health="strict")
    [problem] = caught.value.problems
    assert problem.message == "health: 'strict' is not one of: probe, require"


def test_a_route_adopted_under_litellms_id_is_judged_by_its_hosts_probe() -> None:
    """Probe results are per host: a route the fleet adopted keeps LiteLLM's id, and a move of
    its host is withheld (or shown healthy) by that host's result, never "not probed"."""
    fleet = fleet_of({"m": {"served_model": "org/m", "hosts": [{"name": "a", "api_base": NEW}]}})
    (desired,) = render(fleet)
    adopted = with_id(desired, "6f1c2a90-adopted").deployment()
    adopted["litellm_params"]["api_base"] = OLD
    live = parse_route(adopted)
    assert live is not None
    plan = plan_with(fleet, [live])
    assert [(c.action, c.id) for c in plan.changes] == [("update", "6f1c2a90-adopted")]
    gated = gate(plan, [health(fleet, "m", "a", "no_answer")], require=True)
    assert [w.reason for w in gated.withheld] == [f"{NEW} not answering (cannot connect: refused)"]
    served = gate(plan, [health(fleet, "m", "a", "serves", ("org/m",))], require=True)
    assert [c.id for c in served.changes] == ["6f1c2a90-adopted"]
    assert "probe: serves org/m" in plan_text(served)


def test_require_withholds_a_resume_of_a_host_that_does_not_serve_but_never_a_pause() -> None:
    """A resume puts a route back in service: like a create it waits for proof the host serves.
    A pause (a drained host) takes it out of service: it needs none, and gets no probe; like a
    prune it waits with its group: withheld while the group's resume is (one group here), sent
    when the resume is proven (the next gate)."""
    fleet = fleet_of(
        {
            "m": {
                "served_model": "org/m",
                "litellm_params": {"rpm": 10},
                "hosts": [
                    {"name": "a", "api_base": NEW},
                    {"name": "b", "api_base": OLD, "enabled": False},
                    {"name": "c", "api_base": "http://10.0.0.3:8000/v1"},
                ],
            }
        }
    )
    enabled = two_host_fleet()  # renders b as enabled: what the proxy held before the drain
    b = next(r for r in render(enabled) if r.host == "b")
    a = live_as(fleet, "m", "a")
    live = [
        Route(a.id, a.model_name, a.litellm_params, {**a.model_info, "blocked": True}),
        Route(b.id, "m", b.litellm_params, {**b.model_info, "blocked": False}),
        live_as(fleet, "m", "c"),
    ]
    plan = make_plan(fleet, render(fleet), live, litellm_version="1.108.7")
    assert sorted((c.host, getattr(c, "pause", None)) for c in plan.changes) == [
        ("a", False),
        ("b", True),
    ]
    # What verify matches answers to: the routes that serve after the apply, the paused one not.
    assert sorted(r.host or "" for r in plan.serving) == ["a", "c"]
    gated = gate(plan, [health(fleet, "m", "a", "no_answer")], require=True)
    held, pause = gated.withheld
    assert held.change.host == "a" and "cannot connect" in held.reason
    assert pause.change.host == "b" and pause.reason == (
        "not paused: the update of m host a was withheld, so this route stays in service"
    )
    assert gated.changes == ()
    served = gate(plan, [health(fleet, "m", "a", "serves", ("org/m",))], require=True)
    assert sorted(c.host or "" for c in served.changes) == ["a", "b"] and not served.withheld
