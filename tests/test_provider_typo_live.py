"""A provider LiteLLM does not know, on the real proxy (attack-b f4).

LiteLLM stores such a route and cannot load it. An in-place update to one is the worst case: the
PATCH answers 200, every running router keeps the route's previous values in memory, and only
the database holds the typo, so a pod that starts later serves no route for the host while
plans compare with what the routers list. fleet-sync refuses an unknown provider before writing
(GET /public/providers), and an update the router did not load is written back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sync.core.render import route_id
from sync.live.client import LiteLLMClient

from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .test_onboarding_live import cleaned, env

ADDRESS = "http://127.0.0.1:9/v1"  # never asked: nothing here sends a request through a route


def test_a_provider_the_proxy_does_not_know_is_refused_before_anything_is_written(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    path = tmp_path / "other.yaml"  # -f: the messages name the file read, at the provider's line
    with cleaned(proxy, model):
        typo = {"provider": "hosted_vlm", "hosts": {"a": ADDRESS}}
        write_fleet(path, fleet_name, {model: typo})
        lines = path.read_text().splitlines()
        (line,) = [n for n, text in enumerate(lines, 1) if "provider: hosted_vlm" in text]
        col = lines[line - 1].index("hosted_vlm") + 1
        for command in ("plan", "apply"):
            run = fleet_sync([command, "-f", str(path)], env(proxy))
            assert run.code == 1, run.out + run.err
            located = (
                f"{path}:{line}:{col}: error: {model} host a: provider 'hosted_vlm' is unknown"
            )
            assert located in run.err, run.err
            assert "did you mean 'hosted_vllm'?" in run.err
            assert f"route(s) of {path} name a provider" in run.err
            assert "nothing was sent to the proxy" in run.err
        with LiteLLMClient([proxy.url], proxy.api_key) as client:
            assert client.find_stored(route_id(fleet_name, model, "a")) is None
        # The escape for a provider the proxy loads but does not list (a custom one).
        run = fleet_sync(
            ["plan", "-f", str(path), "--format", "json"],
            {**env(proxy), "FLEET_SYNC_EXTRA_PROVIDERS": "x, hosted_vlm"},
        )
        assert run.code == 0, run.err
        assert [c["action"] for c in json.loads(run.out)["changes"]] == ["create"]


@pytest.mark.parametrize(
    "loaded_otherwise",
    [
        {"use_litellm_proxy": True},  # loaded as litellm_proxy
        {"api_base": "https://api.groq.com/openai/v1"},  # loaded as groq (data: never dialled)
    ],
)
def test_a_route_loaded_under_another_provider_does_not_vouch_for_its_prefix(
    proxy: Proxy, tmp_path: Path, fleet_name: str, loaded_otherwise: dict[str, object]
) -> None:
    """Found by an outside attack: a hand-made route `hosted_vlm/x` that LiteLLM loads under
    another provider is listed, and made the typo a known provider (apply exit 4, never
    converging)."""
    model, other = f"{fleet_name}-m", f"{fleet_name}-other"
    path = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"provider": "hosted_vlm", "hosts": {"a": ADDRESS}}},
    )
    with cleaned(proxy, model, other), proxy.http() as http:
        params = {"model": "hosted_vlm/x", "api_base": ADDRESS, **loaded_otherwise}
        made = http.post("/model/new", json={"model_name": other, "litellm_params": params})
        assert made.status_code == 200, made.text
        assert any(r["model_name"] == other for r in proxy.routes())  # listed: it loaded
        run = fleet_sync(["plan", "-f", str(path)], env(proxy))
    assert run.code == 1, run.out + run.err
    assert "provider 'hosted_vlm' is unknown" in run.err


def test_a_proxy_that_does_not_list_its_providers_is_said_and_the_plan_goes_on(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    # Asked only about a provider no listed route has (no test here makes a cloudflare route).
    model = {"provider": "cloudflare", "hosts": {"a": ADDRESS}}
    path = write_fleet(tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": model})
    with FaultProxy(proxy.url) as fp:
        fp.add_rule("GET", r"^/public/providers", Fault.status(404), times=None)
        run = fleet_sync(
            ["plan", "-f", str(path), "--format", "json"],
            {**env(proxy), "LITELLM_PROXY_URL": fp.url, "LITELLM_PROXY_URLS": fp.url},
        )
    assert run.code == 0, run.err
    (note,) = [n for n in json.loads(run.out)["notes"] if "providers" in n]
    assert "answered 404" in note and "not caught before writing" in note
    assert f"note: {note}" in run.err


@pytest.mark.litellm_matrix
def test_an_update_the_router_does_not_load_is_written_back(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """One pod is enough: the pod taking the PATCH reloads at once. 1.108 and 1.110 answer 200
    and keep serving the previous values; 1.98 answers 500 "saved to the database, but ... not
    live" and serves no route for the host. The proof the database holds the previous values
    again is LiteLLM's: a later PATCH of the route is loaded (the router merges it with the
    stored row), which it never is while the stored row holds the typo."""
    model = f"{fleet_name}-m"
    path = tmp_path / "fleet.yaml"
    with cleaned(proxy, model):
        write_fleet(path, fleet_name, {model: {"hosts": {"a": ADDRESS}}})
        done = fleet_sync(["apply", "-f", str(path)], env(proxy))
        assert done.code == 0, done.out + done.err
        rid = route_id(fleet_name, model, "a")

        # What (a) refuses, let through as for a provider the proxy loads but does not list.
        write_fleet(path, fleet_name, {model: {"provider": "hosted_vlm", "hosts": {"a": ADDRESS}}})
        typo = {**env(proxy), "FLEET_SYNC_EXTRA_PROVIDERS": "hosted_vlm"}
        done = fleet_sync(["apply", "-f", str(path), "--confirm-timeout", "3"], typo)
        assert done.code == 4, done.out + done.err
        (line,) = [x for x in done.out.splitlines() if x.lstrip().startswith("failed")]
        assert f"update {model} host=a ({rid})" in line
        assert "LiteLLM stored the update but could not load it" in line
        assert "the previous values were written back so the route survives a restart" in line
        assert "read back: every pod lists them" in line
        route = proxy.route(rid)
        assert route is not None and route["litellm_params"]["model"] == f"hosted_vllm/org/{model}"

        # The stored row is loadable again: a PATCH merged with it is listed.
        probe = {"model_info": {"id": rid, "probe": 1}}
        with proxy.http() as http:
            assert http.patch(f"/model/{rid}/update", json=probe).status_code == 200
        route = proxy.route(rid)
        assert route is not None and route["model_info"].get("probe") == 1
        assert route["litellm_params"]["model"] == f"hosted_vllm/org/{model}"

        # fleet.yaml reverted: nothing to do, and nothing hidden in the database either.
        write_fleet(path, fleet_name, {model: {"hosts": {"a": ADDRESS}}})
        run = fleet_sync(["plan", "-f", str(path), "--detailed-exitcode"], env(proxy))
        assert run.code == 0, run.out + run.err
