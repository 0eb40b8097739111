"""Synthetic fleets and LiteLLM listings at any size, for the scale benchmark and the
plan-identity check. Plain data only (fleet.yaml text, /v2/model/info entries), so an older
fleet-sync can plan from the very same files.

The live entries are shaped like LiteLLM 1.108.7's: each one starts from a real entry read from
the proxy (litellm-1.108.7-entry.json: ~190 model_info fields, mostly null cost fields, and the
boolean defaults LiteLLM writes into litellm_params; `timeout` comes back as a float).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sync.core.render import Route

TEMPLATE = Path(__file__).with_name("litellm-1.108.7-entry.json")
HOSTS_PER_MODEL = 10
FLEET = "scale"


@cache
def _template() -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    return entry


def fleet_text(routes: int, fleet: str = FLEET, per_model: int = HOSTS_PER_MODEL) -> str:
    """A fleet.yaml rendering exactly `routes` routes: models of `per_model` hosts, every third
    host with its own litellm_params, and one drained host in every tenth model."""
    lines = [
        "# yaml-language-server: $schema=https://raw.githubusercontent.com/fleet-sync-dev/fleet-sync/v1/schema/fleet.schema.json",
        "version: 1",
        f"fleet: {fleet}",
        "owns: tagged",
        "defaults:",
        "  provider: hosted_vllm",
        "  api_key: os.environ/VLLM_API_KEY",
        "  litellm_params: {timeout: 600}",
        "safety: {max_prune_percent: 30}",
        "models:",
    ]
    left = routes
    model = 0
    while left > 0:
        count = min(per_model, left)
        lines += [
            f"  model-{model:04d}:",
            f"    served_model: org/Model-{model:04d}-8B",
            "    litellm_params: {rpm: 120}",
            "    model_info: {max_input_tokens: 131072}",
            "    hosts:",
        ]
        for host in range(count):
            lines += [
                f"      - name: host-{host:02d}",
                f"        api_base: {_address(model, host)}",
            ]
            if host % 3 == 0:
                lines.append("        litellm_params: {weight: 2}")
        if model % 10 == 0:
            lines += [
                "      - name: drained",
                f"        api_base: {_address(model, per_model)}",
                "        enabled: false",
            ]
        left -= count
        model += 1
    return "\n".join(lines) + "\n"


def _address(model: int, host: int, port: int = 8000) -> str:
    return f"http://10.{model // 250}.{model % 250}.{host + 1}:{port}/v1"


def entry(route: Route, **params: Any) -> dict[str, Any]:
    """The /v2/model/info entry LiteLLM lists for a route we wrote (api_key never comes back)."""
    out = copy.deepcopy(_template())
    out["model_name"] = route.model_name
    written = {k: v for k, v in route.litellm_params.items() if k != "api_key"}
    if "timeout" in written:
        written["timeout"] = float(written["timeout"])
    out["litellm_params"] = {**written, **_defaults(), **params}
    out["model_info"].update(route.model_info)
    out["model_info"]["key"] = route.litellm_params.get("model")
    return out


def _defaults() -> dict[str, Any]:
    return {k: v for k, v in _template()["litellm_params"].items() if v is False}


def _foreign(index: int, fleet: str | None, db_model: bool = True) -> dict[str, Any]:
    out = copy.deepcopy(_template())
    out["model_name"] = f"other-{index % 7}"
    out["litellm_params"] = {"model": "openai/gpt-4o", "api_base": "http://10.9.9.9/v1"}
    info = out["model_info"]
    info["id"] = f"other-{index:05d}"
    info["db_model"] = db_model
    for tag in ("fleet_sync_fleet", "fleet_sync_host", "fleet_sync_digest"):
        info.pop(tag, None)
    if fleet:
        info["fleet_sync_fleet"] = fleet
    return out


@dataclass(frozen=True)
class Scenario:
    """Live state before an apply (about 1 % of the routes differ) and after it."""

    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    changed: int


def scenario(desired: Sequence[Route], fleet: str = FLEET) -> Scenario:
    """1 % of the routes changed: 40 % of those moved or edited (updates), 30 % missing
    (creates), 30 % pruned (hosts gone from fleet.yaml); plus other fleets'
    routes, untagged ones and a config-file route, which are ignored."""
    changed = max(3, len(desired) // 100)
    updates = changed * 4 // 10
    creates = changed * 3 // 10
    deletes = changed - updates - creates
    step = max(1, len(desired) // changed)
    before: list[dict[str, Any]] = []
    kinds = ["update"] * updates + ["create"] * creates
    for index, route in enumerate(desired):
        slot = index // step if index % step == 0 else None
        kind = kinds[slot] if slot is not None and slot < len(kinds) else "same"
        if kind == "create":
            continue
        if kind == "same":
            before.append(entry(route))
        elif slot is not None and slot % 3 == 0:  # the host moved: address and digest differ
            moved = entry(route, api_base=str(route.api_base).replace(":8000", ":9000"))
            moved["model_info"]["fleet_sync_digest"] = "0" * 16
            before.append(moved)
        elif slot is not None and slot % 3 == 1:  # edited by hand on the proxy
            before.append(entry(route, rpm=7, max_parallel_requests=3))
        else:  # an older render: a param fleet.yaml no longer sets
            before.append(entry(route, tpm=1000))
    for index in range(deletes):
        gone = Route(
            id=f"{fleet}-gone-{index:05d}",
            model_name=desired[index % len(desired)].model_name if desired else "gone",
            litellm_params={"model": "hosted_vllm/org/Old", "api_base": _address(0, 200 + index)},
            model_info={
                "id": f"{fleet}-gone-{index:05d}",
                "fleet_sync_fleet": fleet,
                # Hosts gone from fleet.yaml (a drained host's route is paused, not pruned: a
                # row of this fleet tagged with a drained host's name would be that host's).
                "fleet_sync_host": f"gone-{index}",
                "fleet_sync_digest": "1" * 16,
            },
        )
        before.append(entry(gone))
    ignored = [_foreign(i, "another-fleet" if i % 3 else None) for i in range(changed)]
    ignored.append(_foreign(changed, None, db_model=False))
    after = [entry(route) for route in desired] + copy.deepcopy(ignored)
    return Scenario(before=before + ignored, after=after, changed=changed)
