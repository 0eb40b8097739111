"""`fleet-sync import` on the real LiteLLM: untagged database routes as a runtime portal leaves
them → import → the file validates; and the round trip import → validate → plan → apply adopts
every route in place (its id, its api_key and whatever the file leaves out kept), after which
the next plan is empty and requests still reach the upstream with the route's key. A value
import cannot write safely stays on the route and is named, never quoted; a group fleet.yaml
cannot express is left out whole, so it is not claimed and nothing of it is touched."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from sync.core.render import Route
from sync.edit.importer import host_name, import_fleet

from .support.keys import read_only_key
from .support.proxyharness import Proxy, Run, fleet_sync
from .support.proxysecrets import DSN_SECRET, ORG_SECRET, resolved
from .support.upstream import Upstream
from .test_probe_live import chat

CORPUS: dict[str, dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "cases" / "compare" / "corpus.yaml").read_text(encoding="utf-8")
)
PRICES = {"input_cost_per_token": 1e-06, "output_cost_per_token": 2.5e-07}


@pytest.fixture
def portal(proxy: Proxy, fleet_name: str) -> Iterator[list[str]]:
    """Ids of the routes a test seeds, deleted afterwards (with anything else of its models)."""
    seeded: list[str] = []
    yield seeded
    with proxy.http() as http:
        for route in proxy.routes():
            if route["model_name"].startswith(f"{fleet_name}-"):
                http.post("/model/delete", json={"id": route["model_info"]["id"]})


def seed(proxy: Proxy, model_name: str, params: dict[str, Any], info: Any = None) -> str:
    """One untagged route, as a runtime portal adds it: /model/new, LiteLLM picks the id."""
    body = {"model_name": model_name, "litellm_params": params, "model_info": info or {}}
    with proxy.http() as http:
        answer = http.post("/model/new", json=body)
    assert answer.status_code == 200, answer.text
    created: str = answer.json()["model_id"]
    return created


def run_import(proxy: Proxy, fleet: str, out: Path, models: list[str], **env: str) -> Run:
    only = [arg for name in models for arg in ("--model", name)]
    return fleet_sync(["import", "--fleet", fleet, "-o", str(out), *only], {**proxy.env(), **env})


def reader_env(proxy: Proxy) -> dict[str, str]:
    """Import with the read key only, so the final scrub does not know the master key: what
    keeps a resolved secret out of the output is import's own rule."""
    env = {k: v for k, v in proxy.env().items() if k != "LITELLM_PROXY_API_KEY"}
    env["LITELLM_PROXY_READ_API_KEY"] = read_only_key(proxy)
    return env


def test_import_of_every_corpus_param_several_hosts_and_prices_validates(
    proxy: Proxy, portal: list[str], tmp_path: Path, fleet_name: str
) -> None:
    """Every case of the compare corpus on three hosts (the third with a weight of its own),
    and priced routes of a model LiteLLM's cost map does not know and of one it knows: LiteLLM
    lists their prices again in model_info, and `1e-06` written plain is a string to YAML 1.1.
    All of it in one import, which must write a file validate accepts (exit 0)."""
    models: list[str] = []
    for n, (case, spec) in enumerate(sorted(CORPUS.items()), start=1):
        model = f"{fleet_name}-{case}"
        models.append(model)
        for i in range(3):
            params = {
                "model": f"hosted_vllm/org/{case}",
                "api_base": f"http://10.41.{n}.{i}:8000/v1",
                **spec.get("litellm_params", {}),
                **({"api_key": spec["api_key"]} if "api_key" in spec else {}),
                **({"weight": 3} if i == 2 else {}),
            }
            portal.append(seed(proxy, model, params, spec.get("model_info")))
    for served, provider in (("org/priced", "hosted_vllm"), ("gpt-4o", "openai")):
        model = f"{fleet_name}-priced-{provider}"
        models.append(model)
        for i in range(2):
            address = f"http://10.42.{len(models)}.{i}:9000/v1"
            params = {"model": f"{provider}/{served}", "api_base": address, **PRICES}
            portal.append(seed(proxy, model, params))
    env_route = next(r for r in proxy.routes() if r["model_name"] == f"{fleet_name}-env-references")
    listed = env_route["litellm_params"]
    external = proxy.name is None  # LiteLLM resolved the corpus's references in its environment:
    org_secret = resolved(external, ORG_SECRET, listed.get("organization"))
    database_url = resolved(external, DSN_SECRET, listed.get("api_version"))

    out = tmp_path / "fleet.yaml"
    done = run_import(proxy, fleet_name, out, models, **reader_env(proxy))
    assert done.code == 0, done.err
    assert "left out" not in done.err
    text = out.read_text(encoding="utf-8")
    for secret in (proxy.api_key, org_secret, database_url, str(urlsplit(database_url).password)):
        assert secret not in text + done.out + done.err
    assert fleet_sync(["validate", "-f", str(out)], proxy.env()).code == 0

    doc = yaml.safe_load(text)
    assert set(doc["models"]) == set(models)
    assert sum(len(m["hosts"]) for m in doc["models"].values()) == len(portal)
    for provider in ("hosted_vllm", "openai"):
        priced = doc["models"][f"{fleet_name}-priced-{provider}"]
        assert priced["litellm_params"] == PRICES and "model_info" not in priced
        assert f"kept: model {fleet_name}-priced-{provider}:" not in done.err  # nothing left
    assert "input_cost_per_token: 1.0e-06\n" in text
    router = doc["models"][f"{fleet_name}-router-params"]
    assert router["litellm_params"]["timeout"] == 600.0 and router["litellm_params"]["rpm"] == 120
    assert [h.get("litellm_params", {}).get("weight") for h in router["hosts"]] == [2, 2, 3]
    kept = f"kept: model {fleet_name}-env-references: litellm_params.api_version (every host: a"
    assert kept in done.err
    assert f"kept: model {fleet_name}-masked-but-not-secret: litellm_params.access_tier" in (
        done.err
    )
    assert "note: api_key stays on each route as it is (LiteLLM never lists it); to manage " in (
        done.err
    )


def test_import_writes_no_value_litellm_resolved_from_the_environment(
    proxy: Proxy, portal: list[str], tmp_path: Path, fleet_name: str
) -> None:
    """A portal stored os.environ/ references on keys not named like secrets; LiteLLM lists the
    values it resolved from its own environment (the database URL with its password, the
    master key). None of them reaches the file or the output: the keys stay on the route,
    named as kept. An address with user:password@ leaves its group out whole."""
    model, addressed = f"{fleet_name}-refs", f"{fleet_name}-userinfo"
    seeded = {
        "model": "hosted_vllm/org/refs",
        "api_base": "http://10.40.0.6:8000/v1",
        "organization": "os.environ/DATABASE_URL",  # any top-level key is resolved
        "vertex_project": "os.environ/LITELLM_MASTER_KEY",
        "api_version": "os.environ/LITELLM_MASTER_KEY",  # allow-listed key, not its shape
        # Never resolved down here (LiteLLM sends the text): validate refuses it, so it stays.
        "extra_headers": {"X-Org": "os.environ/DATABASE_URL"},
        "timeout": 600,
    }
    portal.append(seed(proxy, model, seeded))
    userinfo = {"model": "hosted_vllm/org/u", "api_base": "http://fleet:pw-in-it@10.40.0.7:8000/v1"}
    portal.append(seed(proxy, addressed, userinfo))
    (live,) = [r for r in proxy.routes() if r["model_name"] == model]
    resolved = [live["litellm_params"][k] for k in ("organization", "vertex_project")]
    assert resolved[0].startswith("postgres") and "@" in resolved[0]  # LiteLLM resolved them:
    assert resolved[1] == proxy.api_key  # the harness's master key is LITELLM_MASTER_KEY
    known = [*resolved, str(urlsplit(resolved[0]).password), "pw-in-it"]

    out = tmp_path / "fleet.yaml"
    done = run_import(proxy, fleet_name, out, [model, addressed], **reader_env(proxy))
    assert done.code == 0, done.err
    text = out.read_text(encoding="utf-8")
    for value in known:
        assert len(value) >= 6 and value not in text + done.out + done.err

    doc = yaml.safe_load(text)
    assert set(doc["models"]) == {model}
    assert doc["models"][model]["litellm_params"] == {"timeout": 600.0}
    (host,) = doc["models"][model]["hosts"]
    assert host["api_base"] == "http://10.40.0.6:8000/v1"
    resolved_why = "a string LiteLLM may have resolved from an os.environ/ secret"
    assert "litellm_params.extra_headers (every host: validate refuses it as listed)" in done.err
    for key in ("api_version", "organization", "vertex_project"):
        assert f"litellm_params.{key} (every host: {resolved_why})" in done.err
        assert f"#   litellm_params.{key} (every host): a string LiteLLM" in text
    assert f"left out: model group {addressed} left out whole: " in done.err
    assert "api_base carries user:password@, which fleet.yaml refuses" in done.err
    assert fleet_sync(["validate", "-f", str(out)], proxy.env()).code == 0


def test_import_validate_plan_apply_adopts_every_route_in_place(
    proxy: Proxy, portal: list[str], tmp_path: Path, fleet_name: str
) -> None:
    """The onboarding path: untagged routes with a literal api_key (which LiteLLM never lists)
    to upstreams that answer only with that key, priced and param-rich routes, values LiteLLM
    masks or resolves. import → validate → plan shows only in-place updates of those very
    routes (no create, no delete) → apply → the next plan is empty, every id is kept, and
    requests through the proxy still reach the upstreams with their keys."""
    keyed, rich = f"{fleet_name}-keyed", f"{fleet_name}-rich"
    keys = [f"upstream-key-{secrets.token_hex(8)}" for _ in range(2)]
    ups = [Upstream(f"U{i}", ["org/keyed"], key=key).start() for i, key in enumerate(keys)]
    try:
        for up, key in zip(ups, keys, strict=True):
            params = {
                "model": "hosted_vllm/org/keyed",
                "api_base": up.url,
                "api_key": key,  # literal: LiteLLM never lists it, import cannot write it
                "rpm": 100,
                **PRICES,
                "access_tier": "gold",  # masked by LiteLLM
                "organization": "os.environ/HOME",  # resolved by LiteLLM
            }
            portal.append(seed(proxy, keyed, params, {"team": "search"}))
        for i, case in enumerate(("router-params", "nested-dict", "numbers-int-and-float")):
            params = {
                "model": "hosted_vllm/org/rich",
                "api_base": f"http://10.43.0.{i}:8000/v1",
                **CORPUS[case]["litellm_params"],
            }
            portal.append(seed(proxy, rich, params))
        for _ in range(2):
            assert chat(proxy, keyed) in ("U0", "U1")  # served before, with the keys

        out = tmp_path / "fleet.yaml"
        done = run_import(proxy, fleet_name, out, [keyed, rich])
        assert done.code == 0, done.err
        assert "`fleet-sync plan` adopts each route in place: it adds fleet-sync's tags by " in (
            done.err
        )
        assert not any(key in out.read_text() + done.err for key in keys)
        assert fleet_sync(["validate", "-f", str(out)], proxy.env()).code == 0

        plan = fleet_sync(["plan", "-f", str(out), "--format", "json"], proxy.env())
        assert plan.code == 0, plan.err
        changes = json.loads(plan.out)["changes"]
        assert {c["action"] for c in changes} == {"update"}  # no create, no delete
        assert sorted(c["id"] for c in changes) == sorted(portal)  # each route, once

        applied = fleet_sync(["apply", "-f", str(out)], proxy.env())
        assert applied.code == 0, applied.out + applied.err
        again = fleet_sync(["plan", "-f", str(out), "--detailed-exitcode"], proxy.env())
        assert again.code == 0, again.out + again.err
        live = {r["model_info"]["id"]: r for r in proxy.routes()}
        assert set(portal) <= set(live)  # every id kept
        assert sorted(proxy.ids(keyed) + proxy.ids(rich)) == sorted(portal)
        for rid in portal:
            assert live[rid]["model_info"]["fleet_sync_fleet"] == fleet_name
        for rid in portal[:2]:  # the prices, and what import left out, still on the route
            params = live[rid]["litellm_params"]
            assert {k: params[k] for k in PRICES} == PRICES
            assert {"access_tier", "organization"} <= set(params)
            assert live[rid]["model_info"]["team"] == "search"

        before = [up.chats() for up in ups]
        for _ in range(6):
            assert chat(proxy, keyed) in ("U0", "U1")  # 200: the upstream took the key
        assert sum(up.chats() for up in ups) == sum(before) + 6
        for up, key in zip(ups, keys, strict=True):
            assert set(up.authorizations) <= {f"Bearer {key}"}
    finally:
        for up in ups:
            up.stop()


def test_import_refuses_what_fleet_yaml_cannot_say() -> None:
    def route(rid: str, model: str, params: dict[str, Any], **info: Any) -> Route:
        return Route(rid, model, params, {"id": rid, **info})

    base = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1:8000/v1"}
    imported = import_fleet(
        [
            route("1", "dup", base),
            route("2", "dup", {**base, "api_base": "http://10.0.0.1:8000/v1/"}),
            route("3", "mixed", base),
            route("4", "mixed", {**base, "model": "hosted_vllm/org/other"}),
            route("5", "noprefix", {**base, "model": "gpt-4o"}),
            route("6", "nobase", {"model": "openai/gpt-4o"}),
            route("7", "cfg", base, db_model=False),
            route("8", "theirs", base, fleet_sync_fleet="other"),
            route("9", "ok", base),
        ],
        "f",
    )
    said = "\n".join(imported.left_out)
    assert "dup left out whole: two of its routes point at the same address" in said
    assert "mixed left out whole: its routes serve different models" in said
    assert "noprefix left out whole: 5: model 'gpt-4o' has no provider prefix" in said
    assert "nobase left out whole: 6: no api_base" in said
    assert "cfg (7): config-file route" in said
    assert "1 route(s) tagged by fleet other" in said
    assert imported.routes == 1 and imported.models == 1


def test_host_names_are_readable_stable_and_unique() -> None:
    assert host_name("http://103.196.86.105:17140/v1") == "103.196.86.105-17140"
    assert host_name("https://abc123-8000.proxy.runpod.net/v1") == "abc123-8000.proxy.runpod.net"
    assert host_name("http://[::1]:8000/v1") == "1-8000"
    base = {"model": "hosted_vllm/org/m"}
    routes = [
        Route(str(i), "m", {**base, "api_base": f"http://10.0.0.1:8000/{p}"}, {"id": str(i)})
        for i, p in enumerate(["a", "b"])
    ]
    first = yaml.safe_load(import_fleet(routes, "f").text)["models"]["m"]["hosts"]
    again = yaml.safe_load(import_fleet(routes[::-1], "f").text)["models"]["m"]["hosts"]
    assert first == again
    names = [h["name"] for h in first]
    assert len(set(names)) == 2 and all(n.startswith("10.0.0.1-8000-") for n in names)
