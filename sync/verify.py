"""Edge: after apply, one minimal chat request per changed model group THROUGH the proxy, and
which route (so which host) answered. LiteLLM answers /v1/models from its own table, so only a
real request proves the route serves; its answer names the deployment in response headers."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from .apply import Result
from .fleet import normalise_address
from .health import Verified
from .litellm import error_message
from .render import Route

# Set by LiteLLM on every answer, errors included (proxy/common_request_processing.py).
MODEL_ID_HEADER = "x-litellm-model-id"
API_BASE_HEADER = "x-litellm-model-api-base"


def changed_groups(result: Result, desired: Sequence[Route]) -> tuple[str, ...]:
    """Model groups a confirmed change touched and fleet.yaml still routes (a group pruned away
    entirely has nothing left to answer)."""
    routed = {r.model_name for r in desired}
    done = {o.change.model_name for o in result.outcomes if o.status == "done"}
    return tuple(sorted(done & routed))


def verify_groups(
    proxy_url: str,
    api_key: str,
    groups: Sequence[str],
    routes: Sequence[Route],
    *,
    timeout: float = 30.0,
    transport: httpx.BaseTransport | None = None,
) -> tuple[Verified, ...]:
    """`routes`: the fleet's routes as the apply left them, under the ids that serve each host
    (a route adopted in place keeps LiteLLM's id): what the answering deployment is matched to."""
    with httpx.Client(
        base_url=proxy_url.rstrip("/"),
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=timeout,
        transport=transport,
    ) as http:
        return tuple(_verify(http, group, routes) for group in groups)


def _verify(http: httpx.Client, group: str, routes: Sequence[Route]) -> Verified:
    body = {"model": group, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    try:
        response = http.post("/v1/chat/completions", json=body)
    except httpx.HTTPError as exc:
        return Verified(group, False, f"no answer from the proxy: {type(exc).__name__} {exc}")
    route_id = response.headers.get(MODEL_ID_HEADER) or None
    api_base = response.headers.get(API_BASE_HEADER) or None
    ours = next((r for r in routes if r.id == route_id), None)
    where = _where(route_id, ours, api_base, [r for r in routes if r.model_name == group])
    common = {"route_id": route_id, "host": ours.host if ours else None, "api_base": api_base}
    if not response.is_success:
        reason = error_message(response.text)
        return Verified(group, False, f"{response.status_code}{where}: {reason}", **common)
    if ours is not None and api_base and _moved(api_base, ours.api_base or ""):
        return Verified(
            group,
            False,
            f"answered{where}, but fleet.yaml puts host {ours.host} at {ours.api_base}: "
            "the proxy still routes to the old address",
            **common,
        )
    note = "" if ours else " (a route this fleet does not own: its hosts were not exercised)"
    return Verified(group, True, f"answered{where}{note}", **common)


def _where(
    route_id: str | None, ours: Route | None, api_base: str | None, group: Sequence[Route]
) -> str:
    if route_id is None:
        # LiteLLM names the deployment on failures only when the router got that far.
        only = (
            f"; this fleet's only route of the model is host {group[0].host} at {group[0].api_base}"
            if len(group) == 1
            else ""
        )
        return f" (the proxy did not say which route{only})"
    who = f"host {ours.host} ({route_id})" if ours else f"route {route_id}"
    return f" by {who}" + (f" at {api_base}" if api_base else "")


def _moved(answered: str, wanted: str) -> bool:
    try:
        return normalise_address(answered) != normalise_address(wanted)
    except (KeyError, ValueError):
        return answered.rstrip("/") != wanted.rstrip("/")
