"""What a replacement cannot take over from the route it replaces, and what it carries anyway.

A replacement (a create under a new id, then the delete of the old route) starts from what
fleet.yaml renders. The old route may hold more: keys added by hand, and keys LiteLLM never
lists. Apart from the keys fleet-sync wrote and fleet.yaml dropped (the reason for the
replacement), each top-level key the old route lists is either carried to the new route (its
value cannot be a secret LiteLLM resolved: a number, a boolean, a reference, a routing-shaped
string — the rules `import` writes by) or shown as dropped, never with its value. What LiteLLM
never lists (api_key, ...) any route may hold unseen unless fleet-sync recorded writing it
(`fleet_sync_paths`): a person may have set it by hand on a route fleet-sync created, and a
route it adopted may hold the portal's. The plan names those keys; the safety rails refuse to
replace a route fleet-sync did not create.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from sync.core.render import TAG_PREFIX, Route
from sync.litellm.convergence import PRICING
from sync.litellm.normalise import same
from sync.litellm.owned import (
    NESTED_SHAPES,
    NEVER_LISTED,
    PARAM_DEFAULTS,
    ROUTING_SHAPES,
    bookkeeping,
    model_information,
)
from sync.litellm.redirects import REDIRECTS
from sync.secrets.credentials import is_reference, looks_like_credential


@dataclass(frozen=True)
class Leftovers:
    """What the route being replaced holds that fleet.yaml does not set."""

    carries: Mapping[str, Any] = field(default_factory=dict)  # litellm_params key -> live value
    drops: tuple[str, ...] = ()  # paths it lists that the new route will not have
    unseen: tuple[str, ...] = ()  # paths LiteLLM never lists that it may hold


def carriable(key: str, value: Any) -> bool:
    """Whether a live top-level litellm_params value may be written as it is listed: it cannot
    be a secret LiteLLM resolved from an os.environ/ reference (the rules of
    sync/edit/import_rules.py param_verdict "keep")."""
    if isinstance(value, bool | int | float) or is_reference(value):
        return True
    if isinstance(value, str):
        shape = ROUTING_SHAPES.get(key)
        return shape is not None and shape.fullmatch(value) is not None
    shape = NESTED_SHAPES.get(key)
    return all(
        shape is not None and shape.fullmatch(leaf) is not None and not looks_like_credential(leaf)
        for leaf in _strings(value)
    )


def _strings(value: Any) -> list[str]:
    """Every string in a nested value that is not a reference."""
    if isinstance(value, str):
        return [] if is_reference(value) else [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def leftovers(live: Route, desired: Route) -> Leftovers:
    """What `live` holds beyond `desired` (the route about to replace it)."""
    written = {path[:2] for path in live.written or {}}
    carries: dict[str, Any] = {}
    drops: list[str] = []
    for key, value in sorted(live.litellm_params.items()):
        if (
            value is None
            or key in desired.litellm_params
            or key in NEVER_LISTED
            or ("litellm_params", key) in written
            or key
            in REDIRECTS  # removed on purpose (sync/litellm/redirects.py), or the model's own
            or (key in PARAM_DEFAULTS and same(PARAM_DEFAULTS[key], value))
        ):
            continue
        if carriable(key, value):
            carries[key] = value
        else:
            drops.append(f"litellm_params.{key}")
    for key, value in sorted(live.model_info.items()):
        if value is None or key in desired.model_info or ("model_info", key) in written:
            continue
        if _litellms(key) or key in live.litellm_params:  # LiteLLM mirrors params
            continue
        drops.append(f"model_info.{key}")
    return Leftovers(carries, tuple(drops), unseen(live, desired.litellm_params))


def unseen(live: Route, kept: Collection[str] = ()) -> tuple[str, ...]:
    """The keys LiteLLM never lists that `live` may hold without anyone seeing them: every one
    fleet-sync did not record writing there (a key set by hand, or by whoever created the
    route), except the `kept` litellm_params keys (fleet.yaml sets them on the route that
    stays)."""
    written = {path[1] for path in live.written or {} if path[0] == "litellm_params"}
    return tuple(f"litellm_params.{key}" for key in sorted(NEVER_LISTED - written - set(kept)))


def _litellms(key: str) -> bool:
    """A model_info key LiteLLM fills in itself (or fleet-sync's own tag): its bookkeeping, and
    its model information, which it lists on every route of a model from its cost map or from
    any route of the model (the replacement will list it as well)."""
    return (
        key.startswith(TAG_PREFIX)
        or bookkeeping(key)
        or PRICING.search(key) is not None
        or model_information(key)
    )


def carrying(route: Route, carries: Mapping[str, Any]) -> Route:
    """The route with the carried keys added to what it writes, after its digest and record of
    paths were made: they stay what fleet.yaml renders, so the next plan compares only that."""
    if not carries:
        return route
    params = {**route.litellm_params, **carries}
    return Route(
        route.id, route.model_name, {k: params[k] for k in sorted(params)}, route.model_info
    )
