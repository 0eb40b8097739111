"""LiteLLM admin API client: paged listing, create, patch, delete; error classes; retries."""

from __future__ import annotations

import enum
import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from .access import CHANGED_BY_HEADER, READ_ONLY, changed_by
from .render import Route, canonical_json

PAGE_SIZE = 200


class ErrorKind(enum.Enum):
    TRANSIENT = "transient"  # connect error, timeout on read, 429, 502/503/504: retry
    MAYBE_COMMITTED = "maybe committed"  # a write answered 500 / timed out: read back first
    NOT_FOUND = "not found"
    CLIENT = "client error"  # other 4xx: this change fails, others go on
    AUTH = "auth"  # 401/403: nothing will work
    NO_DATABASE = "no database"
    BAD_RESPONSE = "bad response"  # unparsable or inconsistent answer


class ProxyError(Exception):
    def __init__(self, kind: ErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


def error_message(body: str) -> str:
    """LiteLLM's error text from {"error": {"message": ...}} or {"detail": ...}, else the body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:300]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail"))
        if isinstance(error, dict):
            return str(error.get("message", error.get("error", error)))[:300]
        if error is not None:
            return str(error)[:300]
    return body.strip()[:300]


def classify(status: int, body: str, write: bool) -> ErrorKind:
    """Error class of an HTTP answer (pure, so it is tested on plain data)."""
    text = error_message(body).lower()
    if status in (401, 403):
        return ErrorKind.AUTH
    if "no db connected" in text or "db not connected" in text or "database not connected" in text:
        return ErrorKind.NO_DATABASE
    if status == 404 or (400 <= status < 500 and "not found" in text):
        return ErrorKind.NOT_FOUND
    if status in (408, 429, 502, 503, 504):
        return ErrorKind.TRANSIENT
    if status >= 500:
        # A 500 after a write may mean the row was written ("saved to the database, but ...")
        # or that the id already exists ("Failed to add model to db"): read back, never guess.
        return ErrorKind.MAYBE_COMMITTED if write else ErrorKind.TRANSIENT
    return ErrorKind.CLIENT


@dataclass(frozen=True)
class Retry:
    attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 4.0

    def delay(self, attempt: int) -> float:
        delay: float = min(self.max_delay, self.base_delay * 2**attempt)
        return delay * (0.5 + random.random() / 2)  # jitter: parallel writers do not retry in step


class LiteLLMClient:
    """Writes go to the first URL; reads can target any listed pod."""

    def __init__(
        self,
        urls: Sequence[str],
        api_key: str,
        timeout: float = 20.0,
        retry: Retry | None = None,
        transport: httpx.BaseTransport | None = None,
        changed_by_header: str | None = None,
    ) -> None:
        if not urls:
            raise ValueError("at least one proxy URL is needed")
        self.urls = tuple(u.rstrip("/") for u in urls)
        self.retry = retry or Retry()
        # Sent on writes only: LiteLLM's audit trail names who changed a route.
        self._write_headers = {CHANGED_BY_HEADER: changed_by_header or changed_by({})}
        self._http = httpx.Client(
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
            transport=transport,
            limits=httpx.Limits(max_connections=16),
        )

    @property
    def write_url(self) -> str:
        return self.urls[0]

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LiteLLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ---------------------------------------------------------------------------

    def _send(self, method: str, url: str, write: bool, **kwargs: Any) -> Any:
        """One request with retries for transient errors; returns parsed JSON."""
        last: ProxyError | None = None
        if write:
            kwargs["headers"] = self._write_headers
        for attempt in range(self.retry.attempts):
            if attempt:
                time.sleep(self.retry.delay(attempt - 1))
            try:
                response = self._http.request(method, url, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                # Nothing was sent: safe to retry, writes included.
                last = ProxyError(ErrorKind.TRANSIENT, f"cannot connect to {_origin(url)}: {exc}")
                continue
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                kind = ErrorKind.MAYBE_COMMITTED if write else ErrorKind.TRANSIENT
                last = ProxyError(
                    kind, f"{method} {_path(url)}: {type(exc).__name__} {exc}".strip()
                )
                if write:
                    raise last from None
                continue
            if response.is_success:
                try:
                    return response.json() if response.content else None
                except ValueError:
                    # A write that answered 2xx with garbage may well have happened.
                    kind = ErrorKind.MAYBE_COMMITTED if write else ErrorKind.BAD_RESPONSE
                    raise ProxyError(kind, f"{method} {_path(url)}: answer is not JSON") from None
            kind = classify(response.status_code, response.text, write)
            message = f"{method} {_path(url)} answered {response.status_code}: "
            if kind is ErrorKind.AUTH and write and response.status_code == 403:
                message = (
                    f"{READ_ONLY}: the proxy at {_origin(url)} answered 403 to {method} "
                    f"{_path(url)}; apply needs a proxy_admin key in LITELLM_PROXY_API_KEY: "
                )
            elif kind is ErrorKind.AUTH:
                message = (
                    f"the proxy at {_origin(url)} refused the admin key ({response.status_code}); "
                    "check LITELLM_PROXY_API_KEY: "
                )
            last = ProxyError(kind, message + error_message(response.text), response.status_code)
            if kind is not ErrorKind.TRANSIENT:
                raise last
        assert last is not None
        raise last

    # -- reads -------------------------------------------------------------------------------

    def check_ready(self, url: str) -> None:
        """Fail early on a proxy without a database (it lists nothing and cannot write)."""
        try:
            data = self._send("GET", f"{url}/health/readiness", write=False)
        except ProxyError as exc:
            if exc.kind is ErrorKind.TRANSIENT:
                raise ProxyError(
                    ErrorKind.TRANSIENT, f"proxy unreachable at {url}: {exc}"
                ) from None
            raise
        db = data.get("db") if isinstance(data, dict) else None
        if db != "connected":
            raise ProxyError(
                ErrorKind.NO_DATABASE,
                f"the proxy at {url} has no database (db: {db}); fleet-sync manages routes "
                "stored in LiteLLM's database: set DATABASE_URL and store_model_in_db: true",
            )

    def key_role(self) -> str | None:
        """The user role of the key in use (proxy_admin_viewer, ...), or None when the proxy does
        not say: the master key has no key row, and a proxy may refuse either lookup."""
        try:
            key = self._send("GET", f"{self.write_url}/key/info", write=False)
            info = key.get("info") if isinstance(key, dict) else None
            user_id = info.get("user_id") if isinstance(info, dict) else None
            if not isinstance(user_id, str) or not user_id:
                return None
            user = self._send(
                "GET", f"{self.write_url}/user/info", write=False, params={"user_id": user_id}
            )
        except ProxyError:
            return None  # not knowing is no reason to stop: a refused write still says why
        row = user.get("user_info") if isinstance(user, dict) else None
        role = row.get("user_role") if isinstance(row, dict) else None
        return role if isinstance(role, str) else None

    def list_routes(self, url: str | None = None, consistent_reads: int = 3) -> list[Route]:
        """Every route on one pod, all pages. A listing whose pages disagree (a page shorter than
        total_count implies, a duplicate id, a count that moved) is read again and finally
        refused: pruning from an incomplete read would delete routes that exist."""
        base = url or self.write_url
        problem = ""
        for _ in range(consistent_reads):
            routes, problem = self._list_once(base)
            if not problem:
                return routes
        raise ProxyError(
            ErrorKind.BAD_RESPONSE,
            f"the route listing of {base} was inconsistent {consistent_reads} times ({problem}); "
            "refusing to plan from an incomplete read",
        )

    def list_agreed(self, settle_timeout: float, poll: float = 1.0) -> list[Route]:
        """Every route, once all listed pods show the same set. Pods reload from the database on
        an interval; planning from a lagging pod would miss a delete made through another pod
        (and never repair it), so disagreeing pods are read again until they settle."""
        deadline = time.monotonic() + settle_timeout
        while True:
            listings = [self.list_routes(url) for url in self.urls]
            prints = [_fingerprint(routes) for routes in listings]
            if all(p == prints[0] for p in prints):
                return listings[0]
            if time.monotonic() >= deadline:
                counts = ", ".join(
                    f"{u}: {len(r)} routes" for u, r in zip(self.urls, listings, strict=True)
                )
                raise ProxyError(
                    ErrorKind.BAD_RESPONSE,
                    f"the proxy pods still disagree after {settle_timeout:g}s ({counts}); "
                    "refusing to plan from a lagging pod",
                )
            time.sleep(poll)

    def _list_once(self, base: str) -> tuple[list[Route], str]:
        entries: list[Any] = []
        page, total, pages = 1, None, 1
        while page <= pages:
            data = self._send(
                "GET",
                f"{base}/v2/model/info",
                write=False,
                params={"page": page, "size": PAGE_SIZE},
            )
            if not isinstance(data, dict) or not isinstance(data.get("data"), list):
                return [], f"page {page} has no data list"
            count = data.get("total_count", len(data["data"]))
            if total is not None and count != total:
                return [], f"total_count moved from {total} to {count} between pages"
            total = count
            pages = int(data.get("total_pages") or 1)
            entries.extend(data["data"])
            page += 1
        routes = [r for r in (parse_route(e) for e in entries) if r is not None]
        ids = [r.id for r in routes]
        if len(entries) != total:
            return [], f"{len(entries)} entries read, total_count says {total}"
        if len(set(ids)) != len(ids):
            return [], "an id appears twice"
        return routes, ""

    def find_route(self, route_id: str, url: str | None = None) -> Route | None:
        data = self._send(
            "GET",
            f"{url or self.write_url}/v2/model/info",
            write=False,
            params={"modelId": route_id},
        )
        for entry in data.get("data", []) if isinstance(data, dict) else []:
            route = parse_route(entry)
            if route is not None and route.id == route_id:
                return route
        return None

    # -- writes ------------------------------------------------------------------------------

    def create(self, route: Route) -> None:
        self._send("POST", f"{self.write_url}/model/new", write=True, json=route.deployment())

    def update(self, route: Route, remove: Sequence[str] = ()) -> Mapping[str, Any]:
        """PATCH with the full desired litellm_params and model_info including its id (without
        it LiteLLM stores a random id). Returns the stored row as LiteLLM answers it."""
        body = route.deployment()
        if remove:
            body["litellm_params_to_remove"] = list(remove)
        answer = self._send(
            "PATCH", f"{self.write_url}/model/{route.id}/update", write=True, json=body
        )
        return answer if isinstance(answer, dict) else {}

    def delete(self, route_id: str) -> None:
        self._send("POST", f"{self.write_url}/model/delete", write=True, json={"id": route_id})


def _fingerprint(routes: Sequence[Route]) -> list[str]:
    return sorted(canonical_json(r.deployment()) for r in routes)


def parse_route(entry: Any) -> Route | None:
    """A live entry as a Route, or None for what is not a deployment (no id)."""
    if not isinstance(entry, dict):
        return None
    info = entry.get("model_info")
    params = entry.get("litellm_params")
    if not isinstance(info, dict) or not isinstance(info.get("id"), str):
        return None
    return Route(
        id=info["id"],
        model_name=str(entry.get("model_name", "")),
        litellm_params=params if isinstance(params, dict) else {},
        model_info=info,
    )


def _origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port}" if parsed.port else str(parsed)


def _path(url: str) -> str:
    return httpx.URL(url).path
