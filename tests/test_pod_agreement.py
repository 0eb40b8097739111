"""Pods agree on what the plan reads, not on LiteLLM's enrichment of unrelated routes (issue 8,
item 7). A unit test of read_live over two scripted pods (httpx.MockTransport): the point is what
is compared, not LiteLLM's behaviour, which the live tests cover."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest
import yaml

from sync.core.render import render
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.live.client import LiteLLMClient
from sync.live.errors import ProxyError
from sync.live.state import read_live

PODS = ("http://127.0.0.1:1", "http://127.0.0.1:2")
FLEET = {
    "version": 1,
    "fleet": "f1",
    "models": {
        "m": {
            "served_model": "org/m",
            "hosts": [{"name": "a", "api_base": "http://10.0.0.1:8000/v1"}],
        }
    },
}


def fleet() -> Fleet:
    return fleet_from_doc(parse_yaml(yaml.safe_dump(FLEET), "fleet.yaml"), "fleet.yaml")


def ours(**params: Any) -> dict[str, Any]:
    """Our route as LiteLLM lists it (no api_key), with `params` changed."""
    entry = render(fleet())[0].deployment()
    entry["litellm_params"].pop("api_key", None)
    entry["litellm_params"].update(params)
    return entry


def other(cost: float) -> dict[str, Any]:
    """Another fleet's route as a pod enriches it from its own cost map."""
    return {
        "model_name": "x",
        "litellm_params": {"model": "openai/gpt-x"},
        "model_info": {"id": "x-1", "fleet_sync_fleet": "f2", "input_cost_per_token": cost},
    }


def pods(listings: Mapping[str, Sequence[dict[str, Any]]]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        origin = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
        if request.url.path == "/health/readiness":
            return httpx.Response(200, json={"db": "connected"})
        rows = list(listings[origin])
        if "model" in request.url.params:
            rows = [r for r in rows if r["model_name"] == request.url.params["model"]]
        body = {"data": rows, "total_count": len(rows), "total_pages": 1, "current_page": 1}
        return httpx.Response(200, content=json.dumps(body).encode())

    return httpx.MockTransport(answer)


def read(listings: Mapping[str, Sequence[dict[str, Any]]]) -> list[str]:
    with LiteLLMClient(PODS, "sk-test", transport=pods(listings)) as client:
        state = read_live(client, fleet(), lambda line: None, settle_timeout=0)
    return sorted(r.id for r in state.listed)


def test_pods_that_enrich_unrelated_routes_differently_agree() -> None:
    listings = {PODS[0]: [ours(), other(1e-6)], PODS[1]: [ours(), other(2e-6)]}
    assert read(listings) == sorted([ours()["model_info"]["id"], "x-1"])


def test_pods_that_differ_on_a_route_the_plan_reads_do_not_agree() -> None:
    moved = ours(api_base="http://10.0.0.2:8000/v1")
    with pytest.raises(ProxyError, match="pods still disagree") as stopped:
        read({PODS[0]: [ours(), other(1e-6)], PODS[1]: [moved, other(1e-6)]})
    assert stopped.value.exit_code == 1


def test_pods_that_differ_on_which_owned_routes_exist_do_not_agree() -> None:
    with pytest.raises(ProxyError):
        read({PODS[0]: [ours()], PODS[1]: []})
