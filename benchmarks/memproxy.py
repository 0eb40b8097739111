"""A LiteLLM admin API answered from memory (an httpx transport), so the scale benchmark measures
fleet-sync's own work and not a proxy's. Writes are answered 200 at once and counted (the listing
is whatever state the benchmark sets).

`GET /v2/model/info` answers its filters as LiteLLM 1.108.7's `model_info_v2` does
(proxy_server.py), so the benchmark times the requests fleet-sync really sends and reads what it
really gets back:

- `?model=G`: the router's routes whose model_name is exactly G (or whose
  model_info.team_public_model_name is);
- `?search=S`: of those, the ones with S (case-insensitive) in model_name, team_public_model_name
  or litellm_params.model, then the database rows the router does not hold whose model_name is G
  (with `model`) or holds S (without), fetched up to page x size less the router's matches;
  total_count is what that gave (router matches + rows fetched), total_pages its ceiling;
- `?modelId=X`: the router's route of that id, else the database row (then `search` must be in
  its model_name); one page of 0 or 1;
- a router with no routes answers an empty page whatever the filter, as LiteLLM returns early.

Database rows the router does not list are `stored` (a write LiteLLM saved but could not load).
Every answer is encoded once and kept: the whole listing's pages before the clock starts, a
filtered one at its first request (benchmarks warm up before they time)."""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from sync.live.client import PAGE_SIZE, SMALL_PAGE_SIZE

Entry = dict[str, Any]


class MemoryProxy:
    def __init__(
        self,
        entries: Sequence[Entry],
        page_sizes: Sequence[int] = (SMALL_PAGE_SIZE, PAGE_SIZE),
        stored: Sequence[Entry] = (),
    ):
        self.writes = 0
        self.requests = 0
        self._lock = threading.Lock()
        self.show(entries, page_sizes, stored)

    def show(
        self,
        entries: Sequence[Entry],
        page_sizes: Sequence[int] = (SMALL_PAGE_SIZE, PAGE_SIZE),
        stored: Sequence[Entry] = (),
    ) -> None:
        """List these entries from now on (and hold `stored` in the database only), the whole
        listing's pages pre-encoded for each page size given."""
        self._entries = list(entries)
        self._stored = list(stored)
        self._router_ids = {e["model_info"]["id"] for e in entries}
        self._by_id = {e["model_info"]["id"]: e for e in [*self._stored, *entries]}
        self._answers: dict[tuple[str | None, ...], bytes] = {}
        for size in page_sizes:
            for page in range(1, max(1, math.ceil(len(entries) / size)) + 1):
                self._answer(None, None, None, page, size)

    def _answer(
        self, model: str | None, search: str | None, model_id: str | None, page: int, size: int
    ) -> bytes:
        key = (model, search, model_id, str(page), str(size))
        body = self._answers.get(key)
        if body is None:
            rows, total = self._select(model, search, model_id, page, size)
            body = json.dumps(_paginated(rows, page, size, total)).encode()
            self._answers[key] = body
        return body

    def _select(
        self, model: str | None, search: str | None, model_id: str | None, page: int, size: int
    ) -> tuple[list[Entry], int]:
        """model_info_v2's filters: the rows it pages through and its total_count."""
        if not self._entries:
            return [], 0
        needle = (search or "").lower().strip()
        if model_id is not None:
            found = self._by_id.get(model_id)
            if found is not None and needle and needle not in found["model_name"].lower():
                found = None
            return ([found] if found is not None else []), int(found is not None)
        rows = self._entries
        if model is not None:
            rows = [e for e in rows if model in (e["model_name"], _public_name(e))]
        if not needle:
            return rows, len(rows)
        rows = [e for e in rows if _matches_search(e, needle)]
        if model is None or needle in model.lower():
            in_router = {e["model_info"]["id"] for e in rows if e["model_info"].get("db_model")}
            take = max(0, page * size - len(rows))
            rows = (
                rows
                + [
                    e
                    for e in self._stored
                    if (
                        e["model_name"] == model
                        if model is not None
                        else needle in e["model_name"].lower()
                    )
                    and e["model_info"]["id"] not in in_router
                ][:take]
            )
        return rows, len(rows)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        with self._lock:
            self.requests += 1
        if path in ("/health/readiness", "/health/readiness/details"):
            ready = {"status": "healthy", "db": "connected", "litellm_version": "1.108.7"}
            return httpx.Response(200, json=ready)
        if path == "/public/providers":
            return httpx.Response(200, json=["hosted_vllm", "openai"])
        if path == "/v2/model/info":
            params = request.url.params
            try:
                page, size = int(params.get("page", "1")), int(params.get("size", "50"))
            except ValueError:
                page = size = 0
            if page < 1 or size < 1:  # FastAPI's Query(ge=1)
                return httpx.Response(422, json={"detail": "page and size must be >= 1"})
            body = self._answer(
                params.get("model"), params.get("search"), params.get("modelId"), page, size
            )
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        if request.method in ("POST", "PATCH") and path.startswith("/model/"):
            with self._lock:
                self.writes += 1
            return httpx.Response(200, json={"message": "ok"})
        return httpx.Response(404, json={"error": {"message": f"no route {path}"}})


def _public_name(entry: Entry) -> Any:
    return (entry.get("model_info") or {}).get("team_public_model_name")


def _matches_search(entry: Entry, needle: str) -> bool:
    """_apply_search_filter_to_models: model_name, team_public_model_name, litellm_params.model."""
    model = (entry.get("litellm_params") or {}).get("model")
    return (
        needle in (entry.get("model_name") or "").lower()
        or needle in (_public_name(entry) or "").lower()
        or (isinstance(model, str) and needle in model.lower())
    )


def _paginated(rows: Sequence[Entry], page: int, size: int, total: int) -> dict[str, Any]:
    """_paginate_models_response."""
    skip = (page - 1) * size
    return {
        "data": list(rows[skip : skip + size]),
        "total_count": total,
        "current_page": page,
        "total_pages": -(-total // size) if total > 0 else 0,
        "size": size,
    }


@contextlib.contextmanager
def serve_in_background(proxy: MemoryProxy) -> Iterator[str]:
    """The same answers over HTTP on 127.0.0.1 (a free port), for the CLI end to end."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn serves LiteLLM
        # TCP_NODELAY, as asyncio sets it under uvicorn: the body written after the headers is
        # not held for the client's delayed ACK (40 ms a small answer otherwise).
        disable_nagle_algorithm = True

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = httpx.Request(
                self.command, f"http://127.0.0.1{self.path}", content=self.rfile.read(length)
            )
            response = proxy._handle(request)
            self.send_response(response.status_code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(response.content)))
            self.end_headers()
            self.wfile.write(response.content)

        do_GET = do_POST = do_PATCH = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the benchmark prints figures only

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
