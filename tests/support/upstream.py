"""Small OpenAI-compatible upstreams on 127.0.0.1 for probe and traffic tests: GET /v1/models
lists configured models, POST /v1/chat/completions answers one token; every request is counted
so a test can tell which upstream LiteLLM reached (and that another one saw nothing), and every
Authorization header is kept so a test can tell who received a key. A hostile one answers what
no API would: a body nested past any parser, one past every cap, or bytes that trickle."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal


class Upstream:
    def __init__(self, name: str, models: Sequence[str], key: str | None = None) -> None:
        self.name = name
        self.models = tuple(models)
        self.key = key  # when set, requests without "Bearer <key>" get 401
        self.counts: Counter[tuple[str, str]] = Counter()
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chats(self) -> int:
        return self.counts["POST", "/v1/chat/completions"]

    def model_lists(self) -> int:
        return self.counts["GET", "/v1/models"]

    def _record(self, method: str, path: str, authorization: str | None) -> None:
        with self._lock:
            self.counts[method, path] += 1
            self.authorizations.append(authorization)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                if upstream.key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {upstream.key}":
                    return True
                self._answer(401, {"error": {"message": "invalid key"}})
                return False

            def do_GET(self) -> None:
                upstream._record("GET", self.path, self.headers.get("Authorization"))
                if self.path != "/v1/models":
                    self._answer(404, {"error": {"message": "not found"}})
                elif self._authorised():
                    data = [
                        {"id": m, "object": "model", "owned_by": "test"} for m in upstream.models
                    ]
                    self._answer(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                upstream._record("POST", self.path, self.headers.get("Authorization"))
                if self.path != "/v1/chat/completions":
                    self._answer(404, {"error": {"message": "not found"}})
                elif self._authorised():
                    self._answer(200, _completion(request.get("model"), upstream.name))

        return Handler

    def start(self) -> Upstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _completion(model: Any, name: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{name}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(model),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": name},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextmanager
def upstreams(*specs: tuple[str, Sequence[str]]) -> Iterator[list[Upstream]]:
    started = [Upstream(name, models).start() for name, models in specs]
    try:
        yield started
    finally:
        for upstream in started:
            upstream.stop()


def silent_address() -> str:
    """A loopback address where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


Trickle = Literal["", "headers", "body"]


class HostileUpstream:
    """Answers every request with `body` and `status`, or trickles: its headers, or its body,
    one byte at a time (paced by an event, not a clock in the test) until the client leaves."""

    def __init__(self, body: bytes = b"", trickle: Trickle = "", status: int = 200) -> None:
        self.body, self.trickle, self.status = body, trickle, status
        self.requests = 0
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return f"{self.origin}/v1"

    def _drip(self, write: Any, data: bytes) -> None:
        """One byte at a time (data repeated) until the client is gone or stop(); after 500
        (10 s) it gives up, so a client without a deadline fails its test instead of hanging."""
        at = 0
        while at < 500 and not self._stop.wait(0.02):
            try:
                write(data[at % len(data) : at % len(data) + 1])
            except OSError:  # the client gave up: what the test waits for
                return
            at += 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                upstream.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if upstream.trickle == "headers":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Pad: ")
                    upstream._drip(self._flushed, b"a")
                    return
                self.send_response(upstream.status)
                self.send_header("Content-Type", "application/json")
                if upstream.trickle == "body":
                    self.send_header("Content-Length", str(10**9))
                    self.end_headers()
                    upstream._drip(self._flushed, b'{"data": [')
                    return
                self.send_header("Content-Length", str(len(upstream.body)))
                self.end_headers()
                self.wfile.write(upstream.body)

            def _flushed(self, data: bytes) -> None:
                self.wfile.write(data)
                self.wfile.flush()

            do_GET = do_POST = _answer

        return Handler

    def start(self) -> HostileUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def hostile(
    body: bytes = b"", trickle: Trickle = "", status: int = 200
) -> Iterator[HostileUpstream]:
    upstream = HostileUpstream(body, trickle, status).start()
    try:
        yield upstream
    finally:
        upstream.stop()
