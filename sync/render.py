"""Fleet → desired routes (LiteLLM deployments) with deterministic ids and ownership tags."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from .fleet import Fleet, Host, Model

TAG_FLEET = "fleet_sync_fleet"
TAG_HOST = "fleet_sync_host"
TAG_DIGEST = "fleet_sync_digest"
TAG_SOURCE = "fleet_sync_source"  # the repository that writes the route (see ownership.py)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Route:
    """One LiteLLM deployment: model_name, litellm_params, model_info (whose id is the key)."""

    id: str
    model_name: str
    litellm_params: Mapping[str, Any]
    model_info: Mapping[str, Any]

    @property
    def fleet(self) -> str | None:
        value = self.model_info.get(TAG_FLEET)
        return value if isinstance(value, str) else None

    @property
    def host(self) -> str | None:
        value = self.model_info.get(TAG_HOST)
        return value if isinstance(value, str) else None

    @property
    def source(self) -> str | None:
        value = self.model_info.get(TAG_SOURCE)
        return value if isinstance(value, str) else None

    @property
    def digest(self) -> str | None:
        value = self.model_info.get(TAG_DIGEST)
        return value if isinstance(value, str) else None

    @property
    def api_base(self) -> str | None:
        value = self.litellm_params.get("api_base")
        return value if isinstance(value, str) else None

    @property
    def db_model(self) -> bool:
        """False for routes from the proxy's config file, which the admin API cannot edit."""
        return self.model_info.get("db_model", True) is not False

    def deployment(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "litellm_params": dict(self.litellm_params),
            "model_info": dict(self.model_info),
        }


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def route_id(fleet: str, model: str, host: str) -> str:
    """Deterministic and URL-safe; from identity (fleet, model, host name), never the address.

    The readable part helps people reading `/v2/model/info`; the hash keeps ids unique even when
    two names slug to the same text.
    """
    digest = hashlib.sha256(f"{fleet}\0{model}\0{host}".encode()).hexdigest()[:10]
    slug = "-".join(_UNSAFE.sub("-", part).strip("-") for part in (fleet, model, host))
    return f"{slug}-{digest}"


def route_digest(
    model_name: str, litellm_params: Mapping[str, Any], model_info: Mapping[str, Any]
) -> str:
    """Digest of what we write, api_key reference included: LiteLLM never returns the key, so a
    changed reference is visible only through this tag."""
    body = {"model_name": model_name, "litellm_params": litellm_params, "model_info": model_info}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]


def _render_host(fleet: Fleet, model: Model, host: Host) -> Route:
    d = fleet.defaults
    provider = host.provider or model.provider or d.provider
    api_key = host.api_key or model.api_key or d.api_key
    params: dict[str, Any] = {**d.litellm_params, **model.litellm_params, **host.litellm_params}
    params["model"] = f"{provider}/{model.served_model}"
    params["api_base"] = host.api_base
    if api_key:
        params["api_key"] = api_key
    rid = route_id(fleet.name, model.name, host.name)
    info: dict[str, Any] = {**d.model_info, **model.model_info, **host.model_info}
    info.update({"id": rid, TAG_FLEET: fleet.name, TAG_HOST: host.name})
    if fleet.source:
        info[TAG_SOURCE] = fleet.source
    info[TAG_DIGEST] = route_digest(model.name, params, info)
    return Route(
        id=rid,
        model_name=model.name,
        litellm_params=_sorted(params),
        model_info=_sorted(info),
    )


def _sorted(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {k: mapping[k] for k in sorted(mapping)}


def render(fleet: Fleet) -> tuple[Route, ...]:
    """One route per enabled host, in a stable order (by model, then host as written)."""
    return tuple(
        _render_host(fleet, model, host)
        for model in fleet.models
        for host in model.hosts
        if host.enabled
    )


def render_config(routes: Iterable[Route]) -> str:
    """A LiteLLM config.yaml fragment: {model_list: [...]}, byte-for-byte deterministic."""
    model_list = [r.deployment() for r in routes]
    return yaml.safe_dump(
        {"model_list": model_list}, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
