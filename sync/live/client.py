"""LiteLLM admin API client: paged listing, create, patch, delete; retries. What its answers look
like is in sync/live/answers.py, what its errors mean in sync/live/errors.py."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx

from sync.core.addressing import id_refusal, request_refusal
from sync.core.render import PAUSED, Route, canonical_json
from sync.litellm.teams import enterprise_only
from sync.live.access import CHANGED_BY_HEADER, READ_ONLY, changed_by
from sync.live.answers import listing_page, parse_route
from sync.live.errors import ErrorKind as ErrorKind
from sync.live.errors import ProxyError as ProxyError
from sync.live.errors import classify as classify
from sync.live.errors import error_message as error_message
from sync.secrets.credentials import strip_userinfo
from sync.secrets.display import printable
from sync.untrusted.bounded_http import Answer, AnswerLate, AnswerTooLarge, exchange
from sync.untrusted.json_parser import MAX_JSON_BYTES, parse_json

# Every GET /v2/model/info without modelId makes LiteLLM deep-copy and enrich its whole route
# list before it cuts the page (model_info_v2, 1.98.1-1.110.2): reading N routes costs the proxy
# pages x N, so pages are as large as the body cap allows (benchmarks/real_proxy.py, 5,000
# routes on LiteLLM 1.108.7: 5 pages of 1,000 cost it 1.45x the CPU of one page of all, 3 pages
# 1.25x). LiteLLM lists ~8.5 KB per route (mostly null cost fields): 1,700 of them fill 90 % of
# MAX_BODY_BYTES. A page over it (larger routes: fleet.yaml renders up to 32 KiB) is read again
# in pages half as large, down to SMALL_PAGE_SIZE.
PAGE_SIZE = 1700
SMALL_PAGE_SIZE = 200
# 16 MiB leaves room for large model_info while a hostile or broken proxy cannot exhaust memory.
MAX_BODY_BYTES = MAX_JSON_BYTES
MAX_GROUP_PAGES = 500  # a model group of 100,000 routes; past that the answer is not believed


@dataclass(frozen=True)
class Retry:
    attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 4.0

    def delay(self, attempt: int) -> float:
        delay: float = min(self.max_delay, self.base_delay * 2**attempt)
        return delay * (0.5 + random.random() / 2)  # jitter: parallel writers do not retry in step


class TooLarge(ProxyError):
    """An answer over MAX_BODY_BYTES (a listing page is then read again in smaller pages)."""


class LiteLLMClient:
    """Each route's writes go to one pod, chosen by its id (spread_writes) or always the first;
    reads can target any listed pod."""

    def __init__(
        self,
        urls: Sequence[str],
        api_key: str,
        timeout: float = 20.0,
        retry: Retry | None = None,
        transport: httpx.BaseTransport | None = None,
        changed_by_header: str | None = None,
        spread_writes: bool = True,
        key_name: str = "LITELLM_PROXY_API_KEY",
    ) -> None:
        if not urls:
            raise ValueError("at least one proxy URL is needed")
        self.urls = tuple(u.rstrip("/") for u in urls)
        self.retry = retry or Retry()
        self.spread_writes = spread_writes
        self.timeout = timeout
        self.key_name = key_name  # where the key came from, for messages that say to fix it
        self.page_size = PAGE_SIZE  # halved while a page is too large
        # The version each pod reported with its readiness (check_ready), so read_version
        # does not ask again: one request a pod says both.
        self._versions: dict[str, str | None] = {}
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

    def pod_for(self, route_id: str) -> str:
        """The pod that takes every write of this route. Each LiteLLM write reloads the router
        of the pod that receives it (120-250 ms), so pods take writes in parallel. The choice
        (rendezvous hashing) depends on the id and the set of pods only, not their order, so
        every run writes a route to the same pod and an ambiguous write is read back there."""
        if not self.spread_writes or len(self.urls) == 1:
            return self.write_url
        return max(
            self.urls, key=lambda url: hashlib.sha256(f"{url}\0{route_id}".encode()).digest()
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LiteLLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ---------------------------------------------------------------------------

    def _send(
        self, method: str, base: str, path: str, write: bool, ids: Sequence[str] = (), **kwargs: Any
    ) -> Any:
        """One request with retries for transient errors; returns parsed JSON. Every admin
        request goes through here, its URL made here: `base` one of the proxy's configured
        URLs, `path` a literal of this module with one `{}` per id in `ids`, each id written
        as one exactly-addressed segment (sync/core/addressing.py) or the request refused
        before anything is sent. Values from an answer go only into `ids`, `params` (httpx
        encodes each as one value) and JSON bodies, whose selecting ids (`id`,
        `model_info.id`) must be addressable and the path's id."""
        url = self._url(method, base, path, ids, kwargs.get("json"))
        last: ProxyError | None = None
        if write:
            kwargs["headers"] = self._write_headers
        for attempt in range(self.retry.attempts):
            if attempt:
                time.sleep(self.retry.delay(attempt - 1))
            where = f"{method} {_path(url)}"
            # A write whose answer is lost or garbled may well have happened: read back first.
            unsure = ErrorKind.MAYBE_COMMITTED if write else ErrorKind.BAD_RESPONSE
            try:
                answer = self._exchange(method, url, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                # Nothing was sent: safe to retry, writes included.
                last = ProxyError(ErrorKind.TRANSIENT, f"cannot connect to {_origin(url)}: {exc}")
                continue
            except httpx.DecodingError:
                raise ProxyError(unsure, f"{where}: the answer cannot be decoded") from None
            except AnswerTooLarge:
                raise TooLarge(
                    unsure, f"{where}: the answer is larger than {MAX_BODY_BYTES // 2**20} MiB"
                ) from None
            except (AnswerLate, httpx.TimeoutException, httpx.TransportError) as exc:
                kind = ErrorKind.MAYBE_COMMITTED if write else ErrorKind.TRANSIENT
                reason = (
                    f"no complete answer within {self.timeout:g}s"
                    if isinstance(exc, AnswerLate | httpx.TimeoutException)
                    else f"{type(exc).__name__} {printable(str(exc))}".strip()
                )
                last = ProxyError(kind, f"{where}: {reason}")
                if write:
                    raise last from None
                continue
            except httpx.InvalidURL as exc:
                raise ProxyError(ErrorKind.CLIENT, f"invalid proxy URL: {exc}") from None
            if 200 <= answer.status < 300:
                try:
                    return parse_json(answer.body)
                except ValueError as exc:
                    raise ProxyError(unsure, f"{where}: {exc}") from None
            text = answer.text
            kind = classify(answer.status, text, write)
            message = f"{where} answered {answer.status}: "
            if answer.status == 403 and enterprise_only(error_message(text)):
                message = (
                    f"{where} answered 403: the proxy has no LiteLLM Enterprise licence, which "
                    "LiteLLM requires for this write (a team model's above all); not a matter "
                    "of the key: "
                )
            elif kind is ErrorKind.AUTH and write and answer.status == 403:
                message = (
                    f"{READ_ONLY}: the proxy at {_origin(url)} answered 403 to {where}; "
                    f"apply needs a proxy_admin key in {self.key_name}: "
                )
            elif kind is ErrorKind.AUTH:
                message = (
                    f"the proxy at {_origin(url)} refused the admin key ({answer.status}); "
                    f"check {self.key_name}: "
                )
            last = ProxyError(kind, message + error_message(text), answer.status)
            if kind is not ErrorKind.TRANSIENT:
                raise last
        assert last is not None
        raise last

    def _url(self, method: str, base: str, path: str, ids: Sequence[str], body: Any) -> str:
        """The URL of one admin request, or ProxyError CLIENT before anything is sent."""
        base = base.rstrip("/")
        if base not in self.urls:
            raise ProxyError(
                ErrorKind.CLIENT,
                f"refusing {method} {path}: {strip_userinfo(base)} is not one of the proxy's "
                "URLs; nothing was sent",
            )
        problem = request_refusal(method, path, ids, body)
        if problem:
            raise ProxyError(ErrorKind.CLIENT, problem)
        return base + path.format(*ids)

    def _exchange(self, method: str, url: str, **kwargs: Any) -> Answer:
        """One request and its whole answer within the deadline (--timeout) and MAX_BODY_BYTES."""
        return exchange(self._http, method, url, seconds=self.timeout, cap=MAX_BODY_BYTES, **kwargs)

    # -- reads -------------------------------------------------------------------------------

    def check_ready(self, url: str) -> None:
        """Fail early on a proxy without a database (it lists nothing and cannot write). Asks
        the authenticated /health/readiness/details first, which says the database's state and
        the LiteLLM version in one answer (1.98-1.110); the public /health/readiness only where
        details is refused, fails while the proxy answers, or does not say both. (Whether a
        pod is shutting down only the public probe says: check_serving, before writes.)"""
        try:
            data = self._send("GET", url, "/health/readiness/details", write=False)
        except ProxyError as exc:
            unanswered = exc.kind is ErrorKind.TRANSIENT and exc.status is None
            if unanswered or exc.kind is ErrorKind.NO_DATABASE:
                self._unready(url, exc)  # nothing answers, or the database is down
            data = None  # refused, an error or a garbled answer: the public probe decides
        version = _version_in(data)
        says_db = isinstance(data, dict) and isinstance(data.get("db"), str)
        if version is None or not says_db:
            public = self._readiness(url)
            version = version or _version_in(public)
            data = data if says_db else public
        self._check_database(url, data)
        self._versions[url] = version

    def check_serving(self) -> None:
        """Before the first write: every pod answers the public /health/readiness. A pod
        draining for a restart (/health/drain) answers 503 "shutting_down" there, while the
        /health/readiness/details check_ready asked still answers 200 (1.98.1-1.110.2)."""
        for url in self.urls:
            self._check_database(url, self._readiness(url))

    def _readiness(self, url: str) -> Any:
        try:
            return self._send("GET", url, "/health/readiness", write=False)
        except ProxyError as exc:
            self._unready(url, exc)

    def _unready(self, url: str, exc: ProxyError) -> NoReturn:
        """Raise what a failed readiness means for the run."""
        if exc.kind is ErrorKind.TRANSIENT:
            raise ProxyError(
                ErrorKind.TRANSIENT, f"proxy unreachable at {strip_userinfo(url)}: {exc}"
            ) from None
        if exc.kind is ErrorKind.NO_DATABASE:
            raise ProxyError(
                ErrorKind.NO_DATABASE,
                f"the proxy at {strip_userinfo(url)} cannot reach its database ({exc}); its "
                "route listing would be stale and no write would stick: fix the database, "
                "then run again",
                exc.status,
            ) from None
        raise exc

    def _check_database(self, url: str, data: Any) -> None:
        db = data.get("db") if isinstance(data, dict) else None
        if db != "connected":
            raise ProxyError(
                ErrorKind.NO_DATABASE,
                f"the proxy at {strip_userinfo(url)} has no database (db: "
                f"{printable(str(db))[:40]}); fleet-sync manages routes "
                "stored in LiteLLM's database: set DATABASE_URL and store_model_in_db: true",
            )

    def read_version(self, url: str) -> str | None:
        """The LiteLLM version the proxy at `url` runs, or None when it does not say. Never
        through /health (it calls every route's upstream): the authenticated
        /health/readiness/details reports it (1.98-1.110; older releases put it in the public
        /health/readiness, which newer ones keep to status + db). Not asked again where
        check_ready's answer said it."""
        if url in self._versions:  # check_ready read this pod's readiness
            return self._versions[url]
        for path in ("/health/readiness/details", "/health/readiness"):
            try:
                data = self._send("GET", url, path, write=False)
            except ProxyError:
                continue  # no such endpoint here, or it failed: the version stays unknown
            if version := _version_in(data):
                return version
        return None

    def read_providers(self, url: str) -> frozenset[str] | str:
        """The providers LiteLLM lists at GET /public/providers (its LlmProviders, 1.98.1 to
        1.110.2; no key needed), or why it could not be read."""
        try:
            data = self._send("GET", url, "/public/providers", write=False)
        except ProxyError as exc:
            return str(exc)
        if not isinstance(data, list) or not all(isinstance(p, str) for p in data):
            return "GET /public/providers did not answer a list of names"
        return frozenset(data)

    def read_json(self, path: str, params: Mapping[str, str | int]) -> Any:
        """One GET of an admin read (`path` a literal of the caller's) on the pod that takes
        the writes, parsed by the bounded parser; ProxyError as every request."""
        return self._send("GET", self.write_url, path, write=False, params=dict(params))

    def key_role(self) -> str | None:
        """The user role of the key in use (proxy_admin_viewer, ...), or None when the proxy does
        not say: the master key has no key row, and a proxy may refuse either lookup."""
        try:
            key = self._send("GET", self.write_url, "/key/info", write=False)
            info = key.get("info") if isinstance(key, dict) else None
            user_id = info.get("user_id") if isinstance(info, dict) else None
            if not isinstance(user_id, str) or not user_id:
                return None
            user = self._send(
                "GET", self.write_url, "/user/info", write=False, params={"user_id": user_id}
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
            while True:
                try:
                    routes, problem = self._list_once(base, self.page_size)
                    break
                except TooLarge:
                    if self.page_size == SMALL_PAGE_SIZE:
                        raise
                    # Large routes: smaller pages from now on.
                    self.page_size = max(SMALL_PAGE_SIZE, self.page_size // 2)
            if not problem:
                return routes
        raise ProxyError(
            ErrorKind.BAD_RESPONSE,
            f"the route listing of {strip_userinfo(base)} was inconsistent {consistent_reads} "
            f"times ({problem}); refusing to plan from an incomplete read",
        )

    def list_agreed(
        self,
        settle_timeout: float,
        poll: float = 1.0,
        project: Callable[[Sequence[Route]], object] | None = None,
    ) -> list[Route]:
        """Every route, once all listed pods agree. Pods reload from the database on an
        interval; planning from a lagging pod would miss a delete made through another pod
        (and never repair it), so disagreeing pods are read again until they settle.

        `project` says what must agree (the caller's view of a listing, e.g. what its plan
        reads); without it, every route's every field must."""
        if len(self.urls) == 1:  # one pod agrees with itself
            return self.list_routes(self.urls[0])
        deadline = time.monotonic() + settle_timeout
        view = project or _fingerprint
        while True:
            pool = ThreadPoolExecutor(max_workers=len(self.urls))  # each pod works alone
            try:
                listings = list(pool.map(self.list_routes, self.urls))
            finally:  # an interrupt raised here (sync/run/interrupt.py) waits for no pod
                pool.shutdown(wait=False, cancel_futures=True)
            prints = [view(routes) for routes in listings]
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

    def _list_once(self, base: str, size: int) -> tuple[list[Route], str]:
        """All pages once: the routes, or "" replaced by why the pages disagree (read again).
        An answer of the wrong shape is a ProxyError at once: nothing is planned from it."""
        routes: list[Route] = []
        entries = 0  # parsed page by page: a whole listing of raw entries is ~100 MB at 10,000
        page, total, pages = 1, -1, 1
        while page <= pages:
            data = self._send(
                "GET", base, "/v2/model/info", write=False, params={"page": page, "size": size}
            )
            try:
                items, count, page_count = listing_page(data, page, size)
            except ValueError as exc:
                raise ProxyError(
                    ErrorKind.BAD_RESPONSE, f"{exc}; refusing to plan from this answer"
                ) from None
            if page > 1 and (count, page_count) != (total, pages):
                return [], (
                    f"total_count/total_pages moved from {total}/{pages} to "
                    f"{count}/{page_count} between pages"
                )
            total, pages = count, page_count
            entries += len(items)
            routes += [r for r in map(parse_route, items) if r is not None]
            page += 1
        ids = [r.id for r in routes]
        if entries != total:
            return [], f"{entries} entries read, total_count says {total}"
        if len(set(ids)) != len(ids):
            return [], "an id appears twice"
        return routes, ""

    def find_route(self, route_id: str, model_name: str, url: str | None = None) -> Route | None:
        """The route as the router lists it (what clients route on), or None. Read through the
        model group's listing: `?modelId=` falls back to the database row, which a route LiteLLM
        stored but could not load still has."""
        _check_id(route_id, "GET /v2/model/info?model=<name> (read-back)")
        rows = self._group_rows(url or self.pod_for(route_id), {"model": model_name})
        return next((r for r in rows if r.id == route_id), None)

    def find_stored(self, route_id: str, url: str | None = None) -> Route | None:
        """The route as LiteLLM stored it, listed or not (`?modelId=` reads the router, then the
        database)."""
        _check_id(route_id, "GET /v2/model/info?modelId=<id>")
        data = self._send(
            "GET",
            url or self.pod_for(route_id),
            "/v2/model/info",
            write=False,
            params={"modelId": route_id},
        )
        for entry in data.get("data", []) if isinstance(data, dict) else []:
            route = parse_route(entry)
            if route is not None and route.id == route_id:
                return route
        return None

    def group_rows(self, base: str, model_name: str) -> list[Route]:
        """Every route of a model group LiteLLM stored, listed by its router or not:
        `?model=G&search=G` answers the router's routes of G plus the database rows of G the
        router does not hold (each such read copies the whole route list: sync/live/stored.py
        reads these rows for many groups at once)."""
        rows = self._group_rows(base, {"model": model_name, "search": model_name})
        return [r for r in rows if r.model_name == model_name]  # search matches parts of names

    def entries(self, base: str, params: Mapping[str, str | int]) -> list[Any]:
        """The `data` list of one GET /v2/model/info answer (entries unchecked: parse_route)."""
        data = self._send("GET", base, "/v2/model/info", write=False, params=params)
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ProxyError(ErrorKind.BAD_RESPONSE, f"{_origin(base)}: an answer has no data list")
        return entries

    def _group_rows(self, base: str, params: Mapping[str, str]) -> list[Route]:
        """All pages of a filtered listing. With `search`, LiteLLM's total_count counts only
        what it fetched for the page asked, so pages are read until one comes back short."""
        routes: list[Route] = []
        for page in range(1, MAX_GROUP_PAGES + 1):
            entries = self.entries(base, {**params, "page": page, "size": SMALL_PAGE_SIZE})
            routes += [r for r in (parse_route(e) for e in entries) if r is not None]
            if len(entries) < SMALL_PAGE_SIZE:
                return routes
        raise ProxyError(
            ErrorKind.BAD_RESPONSE,
            f"{_origin(base)}: a model group listing did not end after {MAX_GROUP_PAGES} pages",
        )

    # -- writes ------------------------------------------------------------------------------

    def create(self, route: Route) -> None:
        """POST /model/new; a route to be paused (a drained host's replacement) is sent with
        `blocked` (LiteLLM >= 1.108.7 stores it paused) and then paused by a PATCH (1.98.1
        stores it unpaused and ignores the flag)."""
        self._send("POST", self.pod_for(route.id), "/model/new", write=True, json=write_body(route))
        if route.paused:
            self.pause(route.id, True)

    def update(self, route: Route) -> None:
        """PATCH with the full desired litellm_params and model_info including its id (without
        it LiteLLM stores a random id). PATCH replaces each top-level key it is sent and keeps
        the others: it removes none, a key sent as null included."""
        self._send(
            "PATCH",
            self.pod_for(route.id),
            "/model/{}/update",
            write=True,
            ids=(route.id,),
            json=write_body(route),
        )

    def pause(self, route_id: str, paused: bool) -> None:
        """PATCH that only sets LiteLLM's pause flag (`blocked`, a column of its own: the
        route's id, values, api_key and spend stay; its router sends a paused route nothing)."""
        self._send(
            "PATCH",
            self.pod_for(route_id),
            "/model/{}/update",
            write=True,
            ids=(route_id,),
            json={"model_info": {"id": route_id}, PAUSED: paused},
        )

    def remove_keys(self, route_id: str, keys: Sequence[str]) -> Mapping[str, Any]:
        """PATCH that only removes these top-level litellm_params keys (litellm_params_to_remove:
        LiteLLM 1.109+; older releases ignore it). Returns the stored row as LiteLLM answers it
        (values encrypted: the keys tell what is stored, api_key included)."""
        answer = self._send(
            "PATCH",
            self.pod_for(route_id),
            "/model/{}/update",
            write=True,
            ids=(route_id,),
            json={"model_info": {"id": route_id}, "litellm_params_to_remove": list(keys)},
        )
        return answer if isinstance(answer, dict) else {}

    def delete(self, route_id: str) -> None:
        self._send(
            "POST", self.pod_for(route_id), "/model/delete", write=True, json={"id": route_id}
        )


def write_body(route: Route) -> dict[str, Any]:
    """What a create or an update sends: the pause state a route carries goes as LiteLLM's
    top-level `blocked` (its column), never inside model_info, where its router ignores it."""
    body = route.deployment()
    pause = body["model_info"].pop(PAUSED, None)
    if isinstance(pause, bool):
        body[PAUSED] = pause
    return body


def _check_id(rid: str, where: str) -> None:
    problem = id_refusal(rid, where)
    if problem:
        raise ProxyError(ErrorKind.CLIENT, problem)


def _fingerprint(routes: Sequence[Route]) -> object:
    return sorted(canonical_json(r.deployment()) for r in routes)


def _origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port}" if parsed.port else str(parsed)


def _version_in(readiness: Any) -> str | None:
    """The LiteLLM version a readiness answer reports, printable (it is printed: no terminal
    control from a proxy), or None."""
    version = readiness.get("litellm_version") if isinstance(readiness, dict) else None
    return printable(version)[:40] if isinstance(version, str) and version else None


def _path(url: str) -> str:
    return httpx.URL(url).path
