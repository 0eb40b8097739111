"""Edge: after apply, one minimal chat request per changed model group THROUGH the proxy, and
which route (so which host) answered. LiteLLM answers /v1/models from its own table, so only a
real request proves the route serves; its answer names the deployment in response headers."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from sync.core.health import Verified
from sync.core.render import Route
from sync.core.result import Result
from sync.fleet.model import normalise_address
from sync.live.client import error_message
from sync.secrets.display import printable
from sync.untrusted.bounded_http import AnswerLate, AnswerTooLarge, exchange

# Set by LiteLLM on every answer, errors included (proxy/common_request_processing.py).
MODEL_ID_HEADER = "x-litellm-model-id"
API_BASE_HEADER = "x-litellm-model-api-base"
# A one-token completion or LiteLLM's error is a few KiB; more is not an answer to read whole.
BODY_CAP = 1 << 20


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
) -> tuple[Verified, ...]:
    """Each group's request and its whole answer within `timeout` seconds. `routes`: the
    fleet's routes as the apply left them, under the ids that serve each host (a route adopted
    in place keeps LiteLLM's id): what the answering deployment is matched to."""
    with httpx.Client(
        base_url=proxy_url.rstrip("/"),
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=timeout,
    ) as http:
        return tuple(_verify(http, group, routes, timeout) for group in groups)


def _verify(http: httpx.Client, group: str, routes: Sequence[Route], timeout: float) -> Verified:
    body = {"model": group, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    try:
        reply = exchange(
            http, "POST", "/v1/chat/completions", seconds=timeout, cap=BODY_CAP, json=body
        )
    except AnswerLate:
        return Verified(group, False, f"no complete answer from the proxy within {timeout:g}s")
    except AnswerTooLarge:
        return Verified(group, False, f"the proxy's answer is larger than {BODY_CAP // 1024} KiB")
    except httpx.HTTPError as exc:
        reason = printable(f"{type(exc).__name__} {exc}")
        return Verified(group, False, f"no answer from the proxy: {reason}")
    except UnicodeEncodeError as exc:  # a key no header can carry: its text is not shown
        return Verified(group, False, f"the request could not be sent ({type(exc).__name__})")
    except (httpx.InvalidURL, UnicodeError) as exc:  # no request can be built for the URL
        reason = printable(f"invalid address: {exc}")
        return Verified(group, False, f"no answer from the proxy: {reason}")
    except ValueError as exc:  # any other request httpx cannot build: not shown either
        return Verified(group, False, f"the request could not be sent ({type(exc).__name__})")
    route_id = _header(reply.headers, MODEL_ID_HEADER)
    api_base = _header(reply.headers, API_BASE_HEADER)
    ours = next((r for r in routes if r.id == route_id), None)
    where = _where(route_id, ours, api_base, [r for r in routes if r.model_name == group])
    common = {"route_id": route_id, "host": ours.host if ours else None, "api_base": api_base}
    if not 200 <= reply.status < 300:
        reason = error_message(reply.text)
        return Verified(group, False, f"{reply.status}{where}: {reason}", **common)
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


def _header(headers: httpx.Headers, name: str) -> str | None:
    """A header the proxy set, on one printable line (verify's text goes to the terminal)."""
    value = headers.get(name)
    return printable(value[:500]) if value else None


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
