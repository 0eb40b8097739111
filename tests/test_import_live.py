"""Import round trip on the real LiteLLM: untagged database routes of several providers (vLLM,
OpenAI, one with extra params and a credential LiteLLM masks) → `fleet-sync import` → the file
validates → `plan` shows only the tagging replacements (each untagged route re-created as a
tagged copy carrying the same parameters, then deleted), and says why. A group fleet.yaml
cannot express is left out whole, so it is not claimed and nothing of it is touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from sync.credentials import is_reference
from sync.importer import host_name, import_fleet
from sync.redaction import hidden_reference
from sync.render import Route

from .keys import read_only_key
from .proxyharness import Proxy, fleet_sync


def seed(proxy: Proxy, prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Untagged routes, as a runtime portal would have left them."""
    groups: dict[str, list[dict[str, Any]]] = {
        f"{prefix}-qwen": [
            {
                "model": "hosted_vllm/Qwen/Qwen3-8B",
                "api_base": "http://10.40.0.1:8000/v1",
                "rpm": 120,
                "timeout": 600,
            },
            {
                "model": "hosted_vllm/Qwen/Qwen3-8B",
                "api_base": "http://10.40.0.2:8000/v1",
                "rpm": 120,
                "timeout": 600,
                "weight": 2,
            },
        ],
        f"{prefix}-gpt": [
            {
                "model": "openai/gpt-4o",
                "api_base": "http://10.40.0.3:9000/v1",
                "max_retries": 2,
                "timeout": 600,
            },
        ],
        f"{prefix}-embed": [
            {
                "model": "hosted_vllm/BAAI/bge-m3",
                "api_base": "https://emb-8000.proxy.runpod.net/v1",
                "tpm": 100000,
                "stream_timeout": 30,
                "tags": ["search", "eu"],
                "azure_ad_token": "tok-0123456789abcdef",
                "timeout": 600,
            },
        ],
        # A plain string below the top level: LiteLLM resolves no reference there, so it
        # cannot become a placeholder, and import cannot tell it from a secret (left out whole).
        f"{prefix}-header": [
            {
                "model": "hosted_vllm/org/header",
                "api_base": "http://10.40.0.4:8000/v1",
                "extra_headers": {"X-Team": "search"},
            },
        ],
        # A credential nested in a header: not expressible as a reference (left out whole).
        f"{prefix}-authed": [
            {
                "model": "hosted_vllm/org/authed",
                "api_base": "http://10.40.0.5:8000/v1",
                "extra_headers": {"Authorization": "Bearer s3cr3t-value-xyz"},
            },
        ],
    }
    info = {f"{prefix}-qwen": {"max_input_tokens": 32768}}
    with proxy.http() as http:
        for model_name, routes in groups.items():
            for params in routes:
                body = {"model_name": model_name, "litellm_params": params}
                if model_name in info:
                    body["model_info"] = info[model_name]
                answer = http.post("/model/new", json=body)
                assert answer.status_code == 200, answer.text
    return groups


def test_import_round_trip_plans_only_the_tagging_replacements(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    groups = seed(proxy, fleet_name)
    out = tmp_path / "fleet.yaml"
    only = [arg for name in groups for arg in ("--model", name)]
    done = fleet_sync(["import", "--fleet", fleet_name, "-o", str(out), *only], proxy.env())
    assert done.code == 0, done.err
    assert "replaces each untagged route with a tagged copy" in done.err
    assert f"model group {fleet_name}-authed left out whole" in done.err
    header = f"model group {fleet_name}-header left out whole"
    assert f"{header}: " in done.err and "litellm_params.extra_headers.X-Team holds a" in done.err
    assert "s3cr3t" not in done.err + out.read_text() and "0123456789abcdef" not in out.read_text()
    env_name = f"fleet-sync-import-{fleet_name}-embed-azure-ad-token"
    assert f"set {env_name.upper().replace('-', '_')} in the proxy's" in done.err

    text = out.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=")
    doc = yaml.safe_load(text)
    assert doc["owns"] == "model_groups" and doc["fleet"] == fleet_name
    assert set(doc["models"]) == {f"{fleet_name}-qwen", f"{fleet_name}-gpt", f"{fleet_name}-embed"}
    qwen = doc["models"][f"{fleet_name}-qwen"]
    assert qwen["litellm_params"] == {"rpm": 120}  # shared by its hosts: lifted to the model
    assert qwen["model_info"] == {"max_input_tokens": 32768}
    assert [h["name"] for h in qwen["hosts"]] == ["10.40.0.1-8000", "10.40.0.2-8000"]
    assert qwen["hosts"][1]["litellm_params"] == {"weight": 2}
    assert doc["defaults"]["litellm_params"] == {"timeout": 600}  # shared by every model
    assert doc["models"][f"{fleet_name}-embed"]["litellm_params"]["tags"] == ["search", "eu"]
    assert "model_info" not in doc["models"][f"{fleet_name}-gpt"]  # LiteLLM's cost map, not ours

    assert fleet_sync(["validate", "-f", str(out)], proxy.env()).code == 0

    plan = fleet_sync(["plan", "-f", str(out), "--format", "json"], proxy.env())
    assert plan.code == 0, plan.err
    changes = json.loads(plan.out)["changes"]
    creates = {c["id"]: c for c in changes if c["action"] == "create"}
    deletes = [c for c in changes if c["action"] == "delete"]
    assert {c["action"] for c in changes} == {"create", "delete"}  # no update, nothing else
    assert len(creates) == len(deletes) == 4  # every imported route, none lost
    assert {d["replaced_by"] for d in deletes} == set(creates)
    for old in deletes:
        new = creates[old["replaced_by"]]
        assert new["model_name"] == old["model_name"]
        before, after = old["before"]["litellm_params"], new["after"]["litellm_params"]
        for key, value in after.items():  # the same parameters, a credential as its reference
            if is_reference(value):
                assert before[key] == hidden_reference(value), key  # never the live value
            else:
                assert before[key] == value, key
        assert set(before) == set(after)
        info = {k: v for k, v in new["after"]["model_info"].items() if k != "id"}
        tags = {k for k in info if k.startswith("fleet_sync_")}
        assert tags == {"fleet_sync_fleet", "fleet_sync_host", "fleet_sync_digest"}
        assert all(old["before"]["model_info"][k] == v for k, v in info.items() if k not in tags)
    text_plan = fleet_sync(["plan", "-f", str(out)], proxy.env())
    assert text_plan.out.count("replaced by a tagged one") == 4
    ignored = [i["model_name"] for i in json.loads(plan.out)["ignored"]]
    for left_out in (f"{fleet_name}-authed", f"{fleet_name}-header"):
        assert ignored.count(left_out) == 1  # left out of the file: not claimed, not touched


def test_import_writes_no_value_litellm_resolved_from_the_environment(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """A portal stored os.environ/ references on keys not named like secrets; LiteLLM lists the
    values it resolved from its own environment (the database URL with its password, the
    master key). None of them reaches the file or the output; the round trip still holds."""
    model = f"{fleet_name}-refs"
    seeded = {
        "model": "hosted_vllm/org/refs",
        "api_base": "http://fleet:pw-in-the-address@10.40.0.6:8000/v1",
        "organization": "os.environ/DATABASE_URL",  # any top-level key is resolved
        "vertex_project": "os.environ/LITELLM_MASTER_KEY",
        "api_version": "os.environ/LITELLM_MASTER_KEY",  # allow-listed key, not its shape
        "extra_headers": {"X-Org": "os.environ/DATABASE_URL"},  # never resolved down here
        "timeout": 600,
    }
    with proxy.http() as http:
        answer = http.post("/model/new", json={"model_name": model, "litellm_params": seeded})
        assert answer.status_code == 200, answer.text
    (live,) = [r for r in proxy.routes() if r["model_name"] == model]
    resolved = [live["litellm_params"][k] for k in ("organization", "vertex_project")]
    assert resolved[0].startswith("postgres") and "@" in resolved[0]  # LiteLLM resolved them:
    assert resolved[1] == proxy.api_key  # the harness's master key is LITELLM_MASTER_KEY
    known = [*resolved, str(urlsplit(resolved[0]).password), "pw-in-the-address"]

    out = tmp_path / "fleet.yaml"
    env = {k: v for k, v in proxy.env().items() if k != "LITELLM_PROXY_API_KEY"}
    env["LITELLM_PROXY_READ_API_KEY"] = read_only_key(proxy)  # so the scrub knows no master key
    done = fleet_sync(["import", "--fleet", fleet_name, "-o", str(out), "--model", model], env)
    assert done.code == 0, done.err
    text = out.read_text(encoding="utf-8")
    for value in known:
        assert len(value) >= 6 and value not in text + done.out + done.err

    doc = yaml.safe_load(text)
    params = doc["models"][model]["litellm_params"]
    prefix = f"os.environ/FLEET_SYNC_IMPORT_{model.upper().replace('-', '_')}"
    assert params == {
        "organization": f"{prefix}_ORGANIZATION",
        "vertex_project": f"{prefix}_VERTEX_PROJECT",
        "api_version": f"{prefix}_API_VERSION",
        "extra_headers": {"X-Org": "os.environ/DATABASE_URL"},  # the reference as stored
        "timeout": 600,
    }
    (host,) = doc["models"][model]["hosts"]
    assert host["api_base"] == "http://10.40.0.6:8000/v1"
    for key in ("ORGANIZATION", "VERTEX_PROJECT", "API_VERSION"):
        assert f"set {prefix.removeprefix('os.environ/')}_{key} in the proxy's" in done.err
    assert "api_base carried user:password@, written without it" in done.err

    assert fleet_sync(["validate", "-f", str(out)], proxy.env()).code == 0
    plan = fleet_sync(["plan", "-f", str(out), "--format", "json"], proxy.env())
    assert plan.code == 0, plan.err
    changes = json.loads(plan.out)["changes"]
    assert sorted(c["action"] for c in changes) == ["create", "delete"]  # only the tagging
    assert changes[1]["replaced_by"] == changes[0]["id"]
    for value in known:
        assert value not in plan.out + plan.err


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
