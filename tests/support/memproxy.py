"""An in-memory LiteLLM for property tests of the plan core: it stores what POST /model/new and
PATCH /model/{id}/update store and lists it the way /v2/model/info does (1.108.7; 1.110.2 where
removal differs), as far as fleet-sync's comparison cares. Not a replacement for the real proxy
(tests/*_live.py): the writes never fail, and only what changes a compared value is modelled:

- PATCH merges: litellm_params and model_info are updated key by key (dict.update of the
  stored row), nulls dropped; a key absent from the body stays stored; a PATCH with
  litellm_params_to_remove removes those keys only on a LiteLLM that does (1.109 and later);
- pydantic coerces the typed router params (rpm "120" is stored as 120, timeout 600 as 600.0);
- the listing drops api_key and the other keys LiteLLM never lists (they stay stored: a PATCH
  that does not send them keeps them), resolves os.environ/ references at any depth, masks what
  the core's rule (sync.litellm.normalise.masked_key) says LiteLLM masks, and adds LiteLLM's own
  defaults and model_info enrichment;
- a row the router could not load is stored but not listed, until a write loads it;
- the pause flag (`blocked`) is a column of its own: POST /model/new sets it from a top-level
  `blocked` (1.108.7 and later), PATCH from a top-level `blocked`, and the listing shows it as
  model_info.blocked on every database route.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sync.core.plan import Plan, Update
from sync.core.render import Route
from sync.litellm.normalise import REFERENCE_PREFIX, masked_key
from sync.litellm.owned import NEVER_LISTED
from sync.litellm.releases import LiteLLMRelease
from sync.live.answers import parse_route
from sync.live.client import write_body

# Field types of LiteLLM 1.108.7's GenericLiteLLMParams that pydantic coerces on write.
COERCED: Mapping[str, type] = {
    "rpm": int,
    "tpm": int,
    "max_retries": int,
    "timeout": float,
    "stream_timeout": float,
}
# Never listed: LiteLLM drops these keys outright (the rest of what it hides, it masks); they
# stay stored, and a PATCH that does not send them keeps them.
DROPPED = NEVER_LISTED
# What LiteLLM 1.108.7 adds to every listed route: its boolean defaults in litellm_params, and
# in model_info its bookkeeping and a sample of the ~200 cost-map fields.
PARAM_DEFAULTS: Mapping[str, Any] = {
    "allow_client_keepalive_override": False,
    "merge_reasoning_content_in_choices": False,
    "use_in_pass_through": False,
    "use_litellm_proxy": False,
    "use_xai_oauth": False,
}
ENRICHMENT: Mapping[str, Any] = {
    "key": "hosted_vllm/enriched",
    "litellm_provider": "hosted_vllm",
    "supported_openai_params": ["temperature"],
    "pricing_overrides": [],
    "max_tokens": None,
    "input_cost_per_token": None,
    "output_cost_per_token": None,
}


class IdTaken(Exception):
    """POST /model/new with an id the database already holds."""


class NotEditable(Exception):
    """A write to a config-file route, or to an id the proxy does not hold."""


@dataclass
class Row:
    model_name: str
    litellm_params: dict[str, Any]
    model_info: dict[str, Any]
    db_model: bool = True  # False: from the proxy's config file; the admin API cannot edit it
    # False: stored in the database, but the router did not load it (a write it answered with
    # "saved to the database, but ... not live"); a later write of the row loads it again.
    listed: bool = True
    blocked: bool = False  # LiteLLM's pause flag (LiteLLM_ProxyModelTable.blocked)

    def serving_params(self) -> dict[str, Any]:
        """litellm_params as the router serves them: LiteLLM's defaults for keys not stored."""
        return {**PARAM_DEFAULTS, **self.litellm_params}


def _coerce(key: str, value: Any) -> Any:
    kind = COERCED.get(key)
    if kind is None or isinstance(value, bool) or str(value).startswith(REFERENCE_PREFIX):
        return value
    try:
        return kind(value)
    except (TypeError, ValueError):
        return value


def stored(values: Mapping[str, Any]) -> dict[str, Any]:
    """As the database holds it: a copy (JSON in a column), nulls dropped, types coerced."""
    return {k: _coerce(k, copy.deepcopy(v)) for k, v in values.items() if v is not None}


def resolved(name: str) -> str:
    """What the proxy's environment holds for a reference (never what fleet.yaml wrote)."""
    return f"resolved-{name.lower()}-value"


def _resolve(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(REFERENCE_PREFIX):
        return resolved(value.removeprefix(REFERENCE_PREFIX))
    if isinstance(value, dict):
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


def _mask(key: str, value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _mask(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(key, v) for v in value]
    if isinstance(value, str) and masked_key(key):
        return value[:2] + "*" * 8 + value[-2:]
    return value


@dataclass
class MemProxy:
    version: str = "1.108.7"  # the LiteLLM it behaves as (only removal in place depends on it)
    rows: dict[str, Row] = field(default_factory=dict)

    # -- the admin API ----------------------------------------------------------------------

    def create(self, deployment: Mapping[str, Any]) -> None:
        info = stored(deployment["model_info"])
        if info["id"] in self.rows:
            raise IdTaken(info["id"])
        params = stored(deployment["litellm_params"])
        row = Row(str(deployment["model_name"]), params, info)
        if LiteLLMRelease(self.version).creates_paused:
            row.blocked = deployment.get("blocked") is True
        self.rows[info["id"]] = row

    def patch(self, route_id: str, deployment: Mapping[str, Any]) -> dict[str, Any]:
        """Returns the stored row as LiteLLM answers a PATCH (api_key included, unresolved)."""
        row = self._editable(route_id)
        row.model_name = str(deployment.get("model_name") or row.model_name)
        row.litellm_params.update(stored(deployment.get("litellm_params") or {}))
        row.model_info.update(stored(deployment.get("model_info") or {}))
        row.model_info["id"] = route_id
        row.listed = True
        if isinstance(deployment.get("blocked"), bool):
            row.blocked = deployment["blocked"]
        return {"litellm_params": dict(row.litellm_params), "model_info": dict(row.model_info)}

    def remove_keys(self, route_id: str, keys: Iterable[str]) -> None:
        """PATCH with litellm_params_to_remove: honoured from 1.109, ignored before."""
        row = self._editable(route_id)
        if LiteLLMRelease(self.version).removes_params_in_place:
            for key in keys:
                row.litellm_params.pop(key, None)

    def delete(self, route_id: str) -> None:
        self._editable(route_id)
        del self.rows[route_id]

    def add_unlisted_route(self, deployment: Mapping[str, Any]) -> None:
        """A row LiteLLM stored but its router does not list."""
        self.create(deployment)
        self.rows[deployment["model_info"]["id"]].listed = False

    def add_config_route(self, deployment: Mapping[str, Any]) -> None:
        """A route from the proxy's config.yaml (model_info.db_model: false on read)."""
        self.create(deployment)
        self.rows[deployment["model_info"]["id"]].db_model = False

    def _editable(self, route_id: str) -> Row:
        row = self.rows.get(route_id)
        if row is None or not row.db_model:
            raise NotEditable(route_id)
        return row

    # -- GET /v2/model/info -----------------------------------------------------------------

    def listing(self) -> list[Route]:
        """What the router lists (all pages of /v2/model/info)."""
        return self._routes(rid for rid, row in self.rows.items() if row.listed)

    def stored_unlisted(self, model_names: Iterable[str]) -> list[Route]:
        """The rows of these model groups the router does not list, as LiteLLM's search shows
        them (sync.live.client.LiteLLMClient.list_stored)."""
        groups = set(model_names)
        return self._routes(
            rid for rid, row in self.rows.items() if not row.listed and row.model_name in groups
        )

    def _routes(self, ids: Iterable[str]) -> list[Route]:
        routes = [parse_route(self._entry(rid, self.rows[rid])) for rid in ids]
        return [r for r in routes if r is not None]

    def _entry(self, route_id: str, row: Row) -> dict[str, Any]:
        params = {k: v for k, v in row.litellm_params.items() if k not in DROPPED}
        params = {k: _mask(k, _resolve(v)) for k, v in params.items()}
        info = {k: v for k, v in ENRICHMENT.items() if k not in row.model_info}
        info.update(row.model_info)
        info["db_model"] = row.db_model
        if row.db_model:
            info["blocked"] = row.blocked
        info["id"] = route_id
        return {
            "model_name": row.model_name,
            "litellm_params": {**PARAM_DEFAULTS, **params},
            "model_info": info,
        }


def apply(proxy: MemProxy, plan: Plan) -> None:
    """What sync/live/apply.py sends for each change, in its order, when every write succeeds:
    creates (a replacement's new generation among them), PATCHes (a removal in place first),
    then deletes."""
    for change in plan.of("create"):
        proxy.create(write_body(change.route))
        if change.route.paused:  # as LiteLLMClient.create: paused by a PATCH after
            proxy.patch(change.id, {"model_info": {"id": change.id}, "blocked": True})
    for change in plan.of("update"):
        assert isinstance(change, Update)
        if change.removes:
            proxy.remove_keys(change.id, [path.split(".", 1)[1] for path in change.removes])
        proxy.patch(change.id, write_body(change.route))
    for change in plan.of("delete"):
        proxy.delete(change.id)
