"""Every host's route is held to the size limit, whether its size is its model's (a host
without litellm_params or model_info of its own, measured once per model) or its own."""

from __future__ import annotations

from typing import Any

from sync.fleet.model import semantic_problems
from sync.fleet.yamlmarks import Marks
from sync.litellm.convergence import route_too_large


def test_each_host_gets_its_own_routes_verdict() -> None:
    big = {f"k{i}": "x" * 1000 for i in range(33)}  # ~34 KB: over the limit alone
    plain = {"name": "a", "api_base": "http://10.0.0.1:8000"}
    hosts: list[Any] = [
        plain,
        {"name": "b", "api_base": "http://10.0.0.2:8000", "model_info": {"x": "y" * 500}},
        {"name": "c", "api_base": "http://10.0.0.3:8000", "litellm_params": "not a mapping"},
        {"name": "d", "api_base": "http://10.0.0.4:8000", "litellm_params": {"k0": 1}},
    ]
    data: dict[str, Any] = {
        "defaults": {"litellm_params": {"timeout": 600}},
        "models": {
            "m": {"served_model": "x", "litellm_params": big, "hosts": hosts},
            "small": {"served_model": "x", "hosts": [plain]},
        },
    }
    said = [p.message for p in semantic_problems(data, Marks(), "f")]
    defaults, model = data["defaults"], data["models"]["m"]
    sizes = [route_too_large([defaults, model, host]) for host in hosts]
    assert sizes[0] and sizes[0] == sizes[2] and sizes[1] and sizes[1] != sizes[0]
    assert sizes[3] is None  # its own k0 replaces the model's: under the limit
    assert said == [f"models.m.hosts[{i}]: {sizes[i]}" for i in (0, 1, 2)]
