"""The comparison model on the real LiteLLM: after a successful apply the next plan is empty, a
hand edit of a key fleet.yaml sets is drift, and removing a key is seen and applied without a
gap, over the corpus of deployment parameters in tests/cases/compare/corpus.yaml. Plus the
LiteLLM behaviour the design rests on: PATCH removes no key when sent null, and the keys
`validate` refuses really do not come back as written."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sync.core.compare import UNREADABLE
from sync.core.plan import Create, Delete, Plan, Update
from sync.core.planner import make_plan
from sync.core.render import render, route_id
from sync.core.result import Result
from sync.fleet.model import NEWEST, Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.litellm.releases import LiteLLMRelease
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient
from sync.report.text import plan_text

from .support.owner import owner_of
from .support.proxyharness import Proxy
from .support.proxysecrets import DSN_REF, DSN_SECRET, ORG_REF, ORG_SECRET, PROXY_SECRETS, resolved

CORPUS: dict[str, dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "cases" / "compare" / "corpus.yaml").read_text(encoding="utf-8")
)
SETTINGS = ("api_key", "litellm_params", "model_info")
# The LiteLLM under test: the harness's pin unless it was started with another version.
LITELLM_VERSION = tuple(
    int(part) for part in os.environ.get("LITELLM_HARNESS_LITELLM_VERSION", "1.108.7").split(".")
)


def document(fleet_name: str, cases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One model per case, one host each, with the case's settings on the host."""
    models = {}
    for i, (name, case) in enumerate(sorted(cases.items()), start=1):
        host = {"name": "h", "api_base": f"http://10.0.9.{i}:8000/v1"}
        host.update({k: copy.deepcopy(case[k]) for k in SETTINGS if k in case})
        models[f"{fleet_name}-{name}"] = {"served_model": f"org/{name}", "hosts": [host]}
    return {"version": 1, "fleet": fleet_name, "models": models}


def without(doc: dict[str, Any], model: str, dotted: str) -> None:
    """Drop one path (api_key, litellm_params.x.y, model_info.z) from a model's host."""
    node = doc["models"][model]["hosts"][0]
    *parents, last = dotted.split(".")
    for key in parents:
        node = node[key]
    del node[last]


def fleet_of(doc: dict[str, Any], typed: bool = True) -> Fleet:
    """Through validation: every corpus value is one fleet.yaml may hold. typed=False leaves
    out LiteLLM's declared types (as a plan reads fleet.yaml before it knows the proxy's
    release), for a test that needs a write LiteLLM refuses."""
    text = yaml.safe_dump(doc, sort_keys=False)
    return fleet_from_doc(parse_yaml(text, "fleet.yaml"), "f", litellm=NEWEST if typed else None)


def plan_of(proxy: Proxy, doc: dict[str, Any], typed: bool = True) -> Plan:
    fleet = fleet_of(doc, typed)
    with LiteLLMClient(proxy.urls, proxy.api_key) as client:
        version = client.read_version(client.write_url)
        return make_plan(fleet, render(fleet), client.list_routes(), litellm_version=version)


def removal(case: dict[str, Any], plan: Plan) -> str:
    """How the case's removals go: nested keys in place (PATCH replaces a top-level value
    whole), top-level litellm_params keys in place where PATCH honours litellm_params_to_remove
    (1.109+), anything else by a replacement under the next id generation."""
    if case["how"] == "in place":
        return "in place"
    params = all(r == "api_key" or r.startswith("litellm_params.") for r in case["remove"])
    in_place = LiteLLMRelease(plan.litellm_version).removes_params_in_place
    return "in place" if params and in_place else "replaced"


def applied(proxy: Proxy, plan: Plan) -> Result:
    with LiteLLMClient(proxy.urls, proxy.api_key) as client:
        result = apply_plan(plan, client, owner_of(plan.fleet), confirm_timeout=60)
    assert result.complete, [(o.change.id, o.status, o.detail) for o in result.outcomes]
    return result


def outputs(plan: Plan) -> str:
    return json.dumps(plan.unredacted_json()) + plan_text(plan)


def assert_no_resolved_value(proxy: Proxy, plan: Plan, held: tuple[str, ...] = ()) -> None:
    """The corpus references secrets the proxy holds (support/proxysecrets.py) on keys LiteLLM
    resolves; held: their values as the proxy resolved them (held_values)."""
    text = outputs(plan)
    planted = (proxy.api_key, "postgresql://", *PROXY_SECRETS.values(), *held)
    assert [value for value in planted if value in text] == []


def held_values(proxy: Proxy, rid: str) -> tuple[str, ...]:
    """What LiteLLM resolved route rid's organization and api_version to: the proxy's values of
    UPSTREAM_ORG_SECRET and UPSTREAM_DSN (a skip naming the variable an external proxy lacks)."""
    route = proxy.route(rid)
    assert route is not None, rid
    params = route["litellm_params"]
    external = proxy.name is None
    return (
        resolved(external, ORG_SECRET, params.get("organization")),
        resolved(external, DSN_SECRET, params.get("api_version")),
    )


def by_case(plan: Plan, fleet_name: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for change in plan.changes:
        out.setdefault(change.model_name.removeprefix(f"{fleet_name}-"), []).append(change)
    return out


def stored_param_keys(proxy: Proxy, rid: str) -> set[str]:
    """litellm_params keys of the stored row (values encrypted): PATCH answers with the row, and
    a PATCH of the id alone changes nothing. LiteLLM never lists api_key, so this is the way to
    see it."""
    with proxy.http() as http:
        answer = http.patch(f"/model/{rid}/update", json={"model_info": {"id": rid}})
    answer.raise_for_status()
    return set(answer.json()["litellm_params"])


def test_corpus_converges_drift_shows_and_removals_apply_without_a_gap(
    proxy: Proxy, fleet_name: str
) -> None:
    doc = document(fleet_name, CORPUS)
    first = plan_of(proxy, doc)
    assert [c.action for c in first.changes] == ["create"] * len(CORPUS)
    assert_no_resolved_value(proxy, first)
    applied(proxy, first)
    held = held_values(proxy, route_id(fleet_name, f"{fleet_name}-env-references", "h"))

    # 1. after a successful apply, the next plan is empty
    again = plan_of(proxy, doc)
    assert again.empty, outputs(again)

    # 2. hand edits of keys fleet.yaml sets are drift; apply repairs them
    with proxy.http() as http:
        for name, case in CORPUS.items():
            rid = route_id(fleet_name, f"{fleet_name}-{name}", "h")
            edit = copy.deepcopy(case["edit"])
            if "model_info" in edit:
                edit["model_info"]["id"] = rid  # without it LiteLLM stores a random id
            http.patch(f"/model/{rid}/update", json=edit).raise_for_status()
    drift = plan_of(proxy, doc)
    assert_no_resolved_value(proxy, drift, held)
    seen = by_case(drift, fleet_name)
    for name, case in CORPUS.items():
        (change,) = seen[name]
        assert isinstance(change, Update), (name, change)
        assert case["shows"] in [d.path for d in change.diff], (name, change.diff)
    applied(proxy, drift)
    assert plan_of(proxy, doc).empty

    # 3. removals: seen, applied in place or by a replacement created first, then gone
    for name, case in CORPUS.items():
        for dotted in case["remove"]:
            without(doc, f"{fleet_name}-{name}", dotted)
    removal_plan = plan_of(proxy, doc)
    assert_no_resolved_value(proxy, removal_plan, held)
    seen = by_case(removal_plan, fleet_name)
    for name, case in CORPUS.items():
        changes = seen[name]
        paths = {d.path for c in changes if isinstance(c, (Update, Create)) for d in c.diff}
        for dotted in case["remove"]:
            dotted = "litellm_params.api_key" if dotted == "api_key" else dotted
            assert any(p == dotted or p.startswith(f"{dotted}.") for p in paths), (name, paths)
        if removal(case, removal_plan) == "in place":
            assert [c.action for c in changes] == ["update"], (name, changes)
        else:
            create, delete = sorted(changes, key=lambda c: c.action)
            assert isinstance(create, Create) and isinstance(delete, Delete), (name, changes)
            assert create.replaces == delete.id and delete.replaced_by == create.id
            assert create.id == f"{delete.id}-g2"
    result = applied(proxy, removal_plan)
    stages = [o.change.action for o in result.outcomes]
    assert stages == sorted(stages, key=["create", "update", "delete"].index)
    final = plan_of(proxy, doc)
    assert final.empty, outputs(final)

    live = {r["model_info"]["id"]: r for r in proxy.routes()}
    for name, case in CORPUS.items():
        (route,) = [r for r in render(fleet_of(doc)) if r.model_name == f"{fleet_name}-{name}"]
        rid = route.id
        if removal(case, removal_plan) != "in place":  # the replacement serves; the old is gone
            assert route.id not in live, name
            rid = f"{route.id}-g2"
        for dotted in case["remove"]:
            if dotted == "api_key":
                assert "api_key" not in stored_param_keys(proxy, rid), name
                continue
            node: Any = live[rid]
            *parents, last = dotted.split(".")
            for key in parents:
                node = node[key]
            assert last not in node, (name, dotted)


def test_a_changed_reference_is_an_update_checked_through_the_digest(
    proxy: Proxy, fleet_name: str
) -> None:
    """LiteLLM resolves organization (a name nothing masks) and never lists api_key: a changed
    reference is still seen, without its resolved value ever being shown."""
    model = f"{fleet_name}-m"
    host: dict[str, Any] = {"name": "h", "api_base": "http://10.0.8.1:8000/v1"}
    host["api_key"] = "os.environ/KEY_A"
    host["litellm_params"] = {"organization": ORG_REF}
    doc: dict[str, Any] = {"version": 1, "fleet": fleet_name, "models": {}}
    doc["models"][model] = {"served_model": "o/m", "hosts": [host]}
    applied(proxy, plan_of(proxy, doc))
    assert plan_of(proxy, doc).empty
    route = proxy.route(route_id(fleet_name, model, "h"))
    assert route is not None
    held = resolved(proxy.name is None, ORG_SECRET, route["litellm_params"].get("organization"))
    host["api_key"] = "os.environ/KEY_B"
    host["litellm_params"]["organization"] = DSN_REF
    plan = plan_of(proxy, doc)
    (change,) = plan.changes
    assert isinstance(change, Update)
    shown = {d.path: d for d in change.diff}
    for path, after in (
        ("litellm_params.api_key", "os.environ/KEY_B"),
        ("litellm_params.organization", DSN_REF),
    ):
        assert shown[path].checked == "digest"
        assert (shown[path].before, shown[path].after) == (UNREADABLE, after)
    assert "(checked through the digest)" in plan_text(plan)
    assert_no_resolved_value(proxy, plan, (held,))
    applied(proxy, plan)
    assert plan_of(proxy, doc).empty


# -- what LiteLLM does, that the design rests on ------------------------------------------------


@pytest.fixture
def scratch(proxy: Proxy, fleet_name: str) -> Iterator[tuple[httpx.Client, str]]:
    """A client and an id for one route written by hand, deleted afterwards."""
    rid = f"{fleet_name}-scratch"
    with proxy.http() as http:
        yield http, rid
        http.post("/model/delete", json={"id": rid})


def listed(proxy: Proxy, rid: str) -> dict[str, Any]:
    route = proxy.route(rid)
    assert route is not None, f"{rid} is not listed"
    return route


def test_patch_with_null_removes_no_key(proxy: Proxy, scratch: tuple[httpx.Client, str]) -> None:
    """Why removing a key replaces the route: null through PATCH leaves litellm_params keys
    (api_key included) and model_info keys as they were (1.98.1, 1.108.7 and 1.110.2 alike)."""
    http, rid = scratch
    params = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.7.1:8000/v1"}
    created = http.post(
        "/model/new",
        json={
            "model_name": rid,
            "litellm_params": {**params, "api_key": "os.environ/K", "rpm": 5},
            "model_info": {"id": rid, "note": "x"},
        },
    )
    created.raise_for_status()
    answer = http.patch(
        f"/model/{rid}/update",
        json={
            "litellm_params": {**params, "api_key": None, "rpm": None},
            "model_info": {"id": rid, "note": None},
        },
    )
    answer.raise_for_status()
    assert {"api_key", "rpm"} <= set(answer.json()["litellm_params"])
    route = listed(proxy, rid)
    assert route["litellm_params"]["rpm"] == 5 and route["model_info"]["note"] == "x"


def test_refused_keys_really_do_not_converge(
    proxy: Proxy, scratch: tuple[httpx.Client, str]
) -> None:
    """What `validate` refuses (sync/litellm/convergence.py), written straight to LiteLLM, does not
    come back as written. Pricing in model_info is dropped from 1.108 on (1.98.1 keeps it); a nested
    null comes back as the text 'None' on 1.98.1 and 1.108.7, as null on 1.110.2 (refused for
    those two)."""
    http, rid = scratch
    info = {
        "id": rid,
        "db_model": False,
        "blocked": True,
        "pricing_overrides": ["mine"],
        "created_at": "2020-01-01",
        "input_cost_per_token": 0.5,
    }
    params = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.7.2:8000/v1", "rpm": None}
    http.post(
        "/model/new", json={"model_name": rid, "litellm_params": params, "model_info": info}
    ).raise_for_status()
    route = listed(proxy, rid)
    rewritten = ["db_model", "blocked", "created_at"]
    if LITELLM_VERSION >= (1, 108):
        rewritten += ["pricing_overrides", "input_cost_per_token"]
    for key in rewritten:
        assert route["model_info"].get(key) != info[key], key
    assert "rpm" not in route["litellm_params"]
    team = http.post(
        "/model/new",
        json={
            "model_name": rid,
            "litellm_params": params | {"rpm": 1},
            "model_info": {"id": f"{rid}-team", "team_id": "no-such-team"},
        },
    )
    assert team.status_code >= 400  # a team model, not one fleet-sync can manage


def test_generations_never_leave_the_host_without_a_route(proxy: Proxy, fleet_name: str) -> None:
    """A replacement whose create LiteLLM refuses (a read-back never confirms it) keeps the old
    route: its delete is skipped, and the next plan tries again."""
    model = f"{fleet_name}-m"
    host: dict[str, Any] = {"name": "h", "api_base": "http://10.0.6.1:8000/v1"}
    host["model_info"] = {"note": "x"}  # removing a model_info key: a replacement everywhere
    doc: dict[str, Any] = {"version": 1, "fleet": fleet_name, "models": {}}
    doc["models"][model] = {"served_model": "o/m", "hosts": [host]}
    applied(proxy, plan_of(proxy, doc))
    del host["model_info"]
    host["litellm_params"] = {"tags": [{"not": "a string"}]}  # LiteLLM refuses it (422)
    plan = plan_of(proxy, doc, typed=False)  # validate would refuse it first
    assert sorted(c.action for c in plan.changes) == ["create", "delete"]
    with LiteLLMClient(proxy.urls, proxy.api_key) as client:
        result = apply_plan(plan, client, owner_of(plan.fleet), confirm_timeout=5)
    assert [o.status for o in result.outcomes] == ["failed", "skipped"]
    assert proxy.ids(model) == [route_id(fleet_name, model, "h")]
