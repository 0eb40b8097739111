"""A create whose id LiteLLM already stores (issue 23, f2): apply writes to that row only when it
is the fleet's by the plan's own rule (sync/core/ownership.py Owner.holds, i.e. claim in the
desired model group); a row of another group holding the id (anyone who can call /model/new
can plant one: ids are in plans and PR comments) fails the create with the reason, nothing is
written to it and the route the create replaces is not deleted. apply_plan runs on a transport
that answers from memory as LiteLLM does (500 for an id it already holds); the real proxy is
tests/test_held_ids_live.py."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
import yaml

from sync.core.ownership import Owner
from sync.core.planner import make_plan
from sync.core.render import Route, render, with_generation
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.live.answers import parse_route
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient
from sync.live.stored import read_holders

POD = "http://127.0.0.1:4001"
A = "http://127.0.0.1:41001/v1"


def fleet_of(owner_note: bool, source: str | None = "org/repo") -> Fleet:
    host: dict[str, Any] = {"name": "a", "api_base": A}
    if owner_note:
        host["model_info"] = {"owner_note": "x"}
    doc = {"version": 1, "fleet": "f8", "models": {"m8": {"served_model": "o/m", "hosts": [host]}}}
    if source:
        doc["source"] = source
    return fleet_from_doc(parse_yaml(yaml.safe_dump(doc, sort_keys=False), "fleet.yaml"), "f")


def listed(route: Route) -> Route:
    parsed = parse_route(route.deployment())
    assert parsed is not None
    return parsed


class Proxy:
    """LiteLLM's admin API from memory: rows it stores, of which `unloaded` ones its router never
    lists (an unknown provider); POST of a stored id answers 500, as LiteLLM does."""

    def __init__(self, rows: list[dict[str, Any]], unloaded: set[str]) -> None:
        self.rows = {r["model_info"]["id"]: r for r in rows}
        self.unloaded = unloaded
        self.writes: list[tuple[str, str]] = []  # every write sent, answered or refused
        self.reads: list[dict[str, str]] = []  # the query of every GET /v2/model/info
        self.lock = threading.Lock()

    def answer(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        with self.lock:
            if request.method == "GET":
                return self._read(request)
            body: dict[str, Any] = httpx.Response(200, content=request.content).json()
            if path == "/model/new":
                rid = body["model_info"]["id"]
                if rid in self.rows:
                    self.writes.append((path, rid))
                    return httpx.Response(500, json={"error": {"message": "Failed to add model"}})
                self.rows[rid] = body
            elif path == "/model/delete":
                rid = body["id"]
                self.rows.pop(rid, None)
            else:  # /model/{id}/update
                rid = path.split("/")[2]
                self.rows[rid] = {**self.rows[rid], **body}
            self.writes.append((path, rid))
            return httpx.Response(200, json={})

    def _read(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        self.reads.append(dict(params))
        if "modelId" in params:
            row = self.rows.get(params["modelId"])
            entries = [row] if row else []
        else:
            entries = [r for i, r in self.rows.items() if i not in self.unloaded]
            if "model" in params:
                entries = [r for r in entries if r["model_name"] == params["model"]]
        return httpx.Response(200, json={"data": entries, "total_count": len(entries)})


def replacement() -> tuple[Fleet, Route, Any]:
    """The plan after owner_note left fleet.yaml: create -g2, then delete the route it replaces."""
    first = render(fleet_of(True))[0]
    fleet = fleet_of(False)
    plan = make_plan(fleet, render(fleet), [listed(first)])
    assert [(c.action, c.id) for c in plan.changes] == [
        ("create", f"{first.id}-g2"),
        ("delete", first.id),
    ]
    return fleet, first, plan


def planted(rid: str, model_name: str = "zzz", **info: Any) -> dict[str, Any]:
    return {
        "model_name": model_name,
        "litellm_params": {"model": "badprov/x", "api_key": "planted-attacker-key"},
        "model_info": {"id": rid, "planted": "yes", **info},
    }


def run(proxy: Proxy, plan: Any, owner: Owner) -> Any:
    with LiteLLMClient([POD], "k", transport=httpx.MockTransport(proxy.answer)) as client:
        return apply_plan(plan, client, owner, confirm_timeout=0, sleep=lambda _: None)


@pytest.mark.parametrize(
    ("model_name", "info", "reason"),
    [
        ("zzz", {}, "model group zzz"),  # the attack: a foreign group, never listed
        ("zzz", {"fleet_sync_fleet": "f8", "fleet_sync_source": "org/repo"}, "model group zzz"),
        ("m8", {"fleet_sync_fleet": "other"}, "tagged by another fleet (other)"),
        ("m8", {"fleet_sync_fleet": "f8", "fleet_sync_source": "else/where"}, "another source"),
    ],
)
def test_a_create_onto_a_row_the_fleet_does_not_own_fails_and_writes_nothing(
    model_name: str, info: dict[str, Any], reason: str
) -> None:
    fleet, first, plan = replacement()
    g2 = f"{first.id}-g2"
    row = planted(g2, model_name, **info)
    proxy = Proxy([first.deployment(), row], unloaded={g2})
    before = {k: dict(v) for k, v in proxy.rows.items()}
    result = run(proxy, plan, Owner(fleet))
    create, delete = result.outcomes
    assert create.status == "failed"
    assert f"id {g2} is held by a stored row this fleet does not own" in create.detail
    assert reason in create.detail and "not listed by the router" in create.detail
    assert "remove it by hand" in create.detail
    assert delete.status == "skipped"  # the route it replaces keeps serving
    assert proxy.writes == [("/model/new", g2)]  # refused by LiteLLM: nothing else was sent
    assert proxy.rows == before
    assert not result.complete


def test_a_row_fleet_sync_stored_in_an_earlier_ambiguous_write_still_converges() -> None:
    """Why the branch exists: the id holds the fleet's own row (an earlier run's create whose
    answer was lost, stored with an older desired state): it is updated to the desired one."""
    fleet, first, plan = replacement()
    g2 = f"{first.id}-g2"
    older = with_generation(render(fleet_of(True))[0], 2)  # tagged f8, org/repo, group m8
    proxy = Proxy([first.deployment(), older.deployment()], unloaded=set())
    result = run(proxy, plan, Owner(fleet))
    assert [o.status for o in result.outcomes] == ["done", "done"], result.outcomes
    assert result.outcomes[0].detail == "id existed; updated to the desired state"
    assert proxy.writes == [
        ("/model/new", g2),
        (f"/model/{g2}/update", g2),
        ("/model/delete", first.id),
    ]


def test_an_untagged_row_of_the_desired_group_is_the_fleets_as_the_plan_says() -> None:
    """The plan's rule, not a stricter one: a row carrying this fleet's id in its model group
    is the fleet's with its tags lost (docs: comparison, Ownership), at apply as in the plan."""
    fleet, first, plan = replacement()
    g2 = f"{first.id}-g2"
    row = {"model_name": "m8", "litellm_params": {"model": "hosted_vllm/x", "api_base": A}}
    proxy = Proxy([first.deployment(), {**row, "model_info": {"id": g2}}], unloaded=set())
    result = run(proxy, plan, Owner(fleet))
    assert result.outcomes[0].detail == "id existed; updated to the desired state"
    assert (f"/model/{g2}/update", g2) in proxy.writes


def planned(proxy: Proxy, fleet: Fleet, live: list[Route]) -> Any:
    """The plan as read_live makes it: the rows holding a create's id read first."""
    with LiteLLMClient([POD], "k", transport=httpx.MockTransport(proxy.answer)) as client:
        holders, _ = read_holders(client, fleet, live, [], False, "1.108.7")
    return make_plan(fleet, render(fleet), live, holders, litellm_version="1.108.7")


def test_a_plan_sees_a_row_of_another_group_holding_a_new_hosts_id_as_a_conflict() -> None:
    fleet = fleet_of(False)
    rid = render(fleet)[0].id
    proxy = Proxy([planted(rid)], unloaded={rid})
    plan = planned(proxy, fleet, [])
    assert plan.of("create") == ()
    (conflict,) = plan.conflicts
    assert conflict.id == rid and conflict.held_by.model_name == "zzz"
    assert proxy.reads == [{"modelId": rid}]  # one read, for the one create


def test_a_plan_moves_a_replacement_past_a_generation_another_row_holds() -> None:
    """As for a listed holder (docs: Conflicts): the host keeps its route, the holder is listed
    as ignored, and the replacement takes the next free generation."""
    _, first, _ = replacement()
    fleet = fleet_of(False)
    g2 = f"{first.id}-g2"
    proxy = Proxy([first.deployment(), planted(g2)], unloaded={g2})
    plan = planned(proxy, fleet, [listed(first)])
    assert [(c.action, c.id) for c in plan.changes] == [
        ("create", f"{first.id}-g3"),
        ("delete", first.id),
    ]
    assert [i.route.id for i in plan.ignored] == [g2]
    assert proxy.reads == [{"modelId": g2}, {"modelId": f"{first.id}-g3"}]


def test_a_plan_without_creates_sends_no_extra_request() -> None:
    fleet = fleet_of(False)
    (route,) = render(fleet)
    proxy = Proxy([route.deployment()], unloaded=set())
    plan = planned(proxy, fleet, [listed(route)])
    assert plan.empty and proxy.reads == []
