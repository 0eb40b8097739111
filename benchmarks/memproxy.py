"""A LiteLLM admin API answered from memory (an httpx transport), so the scale benchmark measures
fleet-sync's own work and not a proxy's. Pages are encoded before the clock starts; writes are
answered 200 at once and counted (the listing is whatever state the benchmark sets)."""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


class MemoryProxy:
    def __init__(self, entries: Sequence[dict[str, Any]], page_sizes: Sequence[int] = (200,)):
        self.writes = 0
        self._lock = threading.Lock()
        self.show(entries, page_sizes)

    def show(self, entries: Sequence[dict[str, Any]], page_sizes: Sequence[int] = (200,)) -> None:
        """List these entries from now on: every page pre-encoded for each page size given, of
        the whole listing and of each model group (`?model=G`, with or without `&search=G`)."""
        self._by_id = {e["model_info"]["id"]: e for e in entries}
        groups: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            groups.setdefault(entry["model_name"], []).append(entry)
        self._pages: dict[tuple[str | None, int, int], bytes] = {}
        for size in page_sizes:
            self._encode(None, entries, size)
            for name, members in groups.items():
                self._encode(name, members, size)

    def _encode(self, group: str | None, entries: Sequence[dict[str, Any]], size: int) -> None:
        total = len(entries)
        pages = max(1, math.ceil(total / size))
        for page in range(1, pages + 1):
            body = {
                "data": list(entries[(page - 1) * size : page * size]),
                "total_count": total,
                "current_page": page,
                "total_pages": pages,
                "size": size,
            }
            self._pages[(group, page, size)] = json.dumps(body).encode()

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path in ("/health/readiness", "/health/readiness/details"):
            ready = {"status": "healthy", "db": "connected", "litellm_version": "1.108.7"}
            return httpx.Response(200, json=ready)
        if path == "/v2/model/info":
            model_id = request.url.params.get("modelId")
            if model_id is not None:
                found = [self._by_id[model_id]] if model_id in self._by_id else []
                return httpx.Response(200, json={"data": found, "total_count": len(found)})
            page = int(request.url.params.get("page", "1"))
            size = int(request.url.params.get("size", "50"))
            group = request.url.params.get("model")
            body = self._pages.get((group, page, size))
            if body is None and group is not None:  # past the last page of a group, or none
                body = json.dumps({"data": [], "total_count": 0}).encode()
            if body is None:
                return httpx.Response(400, json={"error": {"message": f"no page {page}/{size}"}})
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        if request.method in ("POST", "PATCH") and path.startswith("/model/"):
            with self._lock:
                self.writes += 1
            return httpx.Response(200, json={"message": "ok"})
        return httpx.Response(404, json={"error": {"message": f"no route {path}"}})


@contextlib.contextmanager
def serve_in_background(proxy: MemoryProxy) -> Iterator[str]:
    """The same answers over HTTP on 127.0.0.1 (a free port), for the CLI end to end."""

    class Handler(BaseHTTPRequestHandler):
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
