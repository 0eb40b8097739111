"""`fleet-sync import` and model_info on the real LiteLLM: a key written under a *_key name
(a RunPod key, a vLLM --api-key) never reaches the file, and neither does the model information
LiteLLM lists on a route but took from another route serving the same model (it shares what one
route's model_info sets with every route of that model): adopting the route would otherwise
save another route's context window and capabilities into this one's row."""

from __future__ import annotations

from pathlib import Path

import yaml

from .support.proxyharness import Proxy, fleet_sync
from .test_import_live import portal, run_import, seed

__all__ = ["portal"]  # the fixture, used by name

RUNPOD = "GHMCS1UYUVJCSQQADZ7LJEN485HA4VPO"  # a legacy RunPod key: 32 upper-case and digits
UUID = "6fda865a-30a5-1a8e-cda0-434c44919d49"  # a vLLM --api-key


def test_import_leaves_keys_and_another_routes_model_information_on_the_route(
    proxy: Proxy, portal: list[str], tmp_path: Path, fleet_name: str
) -> None:
    meta, other = f"{fleet_name}-meta", f"{fleet_name}-other"
    served = f"hosted_vllm/org/{fleet_name}"
    info = {"runpod_key": RUNPOD, "vllm_serve_key": UUID, "team": "search"}
    params = {"model": served, "api_base": "http://10.43.0.1:8000/v1", "api_key": "x"}
    portal.append(seed(proxy, meta, params, info))
    params = {**params, "api_base": "http://10.43.0.2:8000/v1"}
    portal.append(seed(proxy, other, params, {"max_input_tokens": 2048, "supports_vision": True}))
    # What LiteLLM lists for the first route: the other route's model information as well.
    (listed,) = [r["model_info"] for r in proxy.routes() if r["model_name"] == meta]
    assert listed["max_input_tokens"] == 2048 and listed["supports_vision"] is True

    out = tmp_path / "fleet.yaml"
    done = run_import(proxy, fleet_name, out, [meta])
    assert done.code == 0, done.err
    text = out.read_text(encoding="utf-8")
    for secret in (RUNPOD, UUID):
        assert secret not in text + done.out + done.err
    model = yaml.safe_load(text)["models"][meta]
    assert model["model_info"] == {"team": "search"}
    for path in ("runpod_key", "vllm_serve_key", "max_input_tokens", "supports_vision"):
        assert f"model_info.{path} (every host: " in done.err, path
    assert fleet_sync(["validate", "-f", str(out)], proxy.env()).code == 0
