"""A small fault-injecting HTTP reverse proxy for tests.

Put it between the tool under test and a real upstream (a LiteLLM proxy on 127.0.0.1)::

    with FaultProxy("http://127.0.0.1:4000") as fp:
        fp.add_rule("POST", r"/model/new", Fault.forward_then_500())
        run_tool(base_url=fp.url)
        assert fp.forwarded_writes() == [("POST", "/model/new", {...})]

Every request is forwarded to the upstream (method, path+query, headers including
Authorization, body) unless a rule scripts a fault for it.  Rules are checked in the order they
were added; the first rule that matches and still has uses left decides the fault, and each
use is counted atomically, so with concurrent requests exactly ``times`` of them get the fault.

Faults that forward (``forward_then_500``, ``delay``, ``forward_then_delay``,
``forward_then_reset``, ``truncate_page``, ``truncate_body``, ``drip``) make the write happen on
the upstream; the others (``fail_500``, ``status``, ``reset``, ``invalid_json``, ``answer``) never
reach it.  ``answer`` sends exactly the status, headers and bytes given (a broken gzip body, a
lying page count); ``drip`` sends the upstream's answer one byte at a time.

Tests wait on events, not the clock: ``on_forwarded_write(n, action)`` runs ``action`` (e.g.
``fp.close``) once the n-th write has reached the upstream.

The proxy only listens on 127.0.0.1 and only forwards to a loopback upstream.
"""

from __future__ import annotations

import contextlib
import enum
import http.server
import json
import re
import socket
import socketserver
import struct
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self, cast

import httpx

__all__ = [
    "FAIL_500_BODY",
    "FORWARD_THEN_500_BODY",
    "INVALID_JSON_BODY",
    "WRITE_METHODS",
    "Fault",
    "FaultKind",
    "FaultProxy",
    "LogRecord",
    "LoopbackHTTPServer",
    "Rule",
]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# Not relayed upstream: httpx sets Host and Content-Length itself; we ask for identity encoding.
_REQUEST_DROP = _HOP_BY_HOP | {"host", "content-length", "expect", "accept-encoding"}
# Not relayed downstream: the body we send is httpx's decoded body, its length is recomputed.
_RESPONSE_DROP = _HOP_BY_HOP | {"content-length", "content-encoding"}

FORWARD_THEN_500_BODY: dict[str, Any] = {
    "error": {
        "message": (
            "Model create was saved to the database, but the router reload failed on this pod"
        ),
        "type": "internal_server_error",
        "code": "500",
    }
}
FAIL_500_BODY: dict[str, Any] = {
    "error": {"message": "Internal Server Error", "type": "internal_server_error", "code": "500"}
}
INVALID_JSON_BODY = b'{"data": [{"model_name": "gpt-4o", <html>upstream hiccup</html>'


class FaultKind(enum.StrEnum):
    FORWARD_THEN_500 = "forward_then_500"
    FAIL_500 = "fail_500"
    STATUS = "status"
    DELAY = "delay"
    FORWARD_THEN_DELAY = "forward_then_delay"
    RESET = "reset"
    FORWARD_THEN_RESET = "forward_then_reset"
    TRUNCATE_PAGE = "truncate_page"
    TRUNCATE_BODY = "truncate_body"
    INVALID_JSON = "invalid_json"
    ANSWER = "answer"
    DRIP = "drip"


_FORWARDING_KINDS = frozenset(
    {
        FaultKind.FORWARD_THEN_500,
        FaultKind.DELAY,
        FaultKind.FORWARD_THEN_DELAY,
        FaultKind.FORWARD_THEN_RESET,
        FaultKind.TRUNCATE_PAGE,
        FaultKind.TRUNCATE_BODY,
        FaultKind.DRIP,
    }
)
_PARAMETERLESS_KINDS = frozenset(
    {
        FaultKind.FORWARD_THEN_500,
        FaultKind.FAIL_500,
        FaultKind.RESET,
        FaultKind.FORWARD_THEN_RESET,
        FaultKind.INVALID_JSON,
    }
)


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour.  Build it with the classmethods, e.g. ``Fault.delay(2.0)``."""

    kind: FaultKind
    seconds: float = 0.0
    code: int = 0
    drop: int = 0
    nbytes: int = 0
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def forward_then_500(cls) -> Fault:
        """Forward (the write happens), discard the upstream answer, answer a LiteLLM-like 500."""
        return cls(FaultKind.FORWARD_THEN_500)

    @classmethod
    def fail_500(cls) -> Fault:
        """Do not forward; answer 500 Internal Server Error."""
        return cls(FaultKind.FAIL_500)

    @classmethod
    def status(cls, code: int, body: bytes | None = None) -> Fault:
        """Do not forward; answer ``code`` with a small JSON error body (or ``body``)."""
        if not 100 <= code <= 599:
            raise ValueError(f"bad HTTP status {code}")
        return cls(FaultKind.STATUS, code=code, body=body)

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Sleep ``seconds`` (interrupted by close()), then forward and answer normally."""
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        return cls(FaultKind.DELAY, seconds=seconds)

    @classmethod
    def forward_then_delay(cls, seconds: float) -> Fault:
        """Forward (the write happens), then sleep ``seconds`` before answering."""
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        return cls(FaultKind.FORWARD_THEN_DELAY, seconds=seconds)

    @classmethod
    def reset(cls) -> Fault:
        """Do not forward; close the connection with a TCP RST and no response."""
        return cls(FaultKind.RESET)

    @classmethod
    def forward_then_reset(cls) -> Fault:
        """Forward (the write happens), then close the connection with a TCP RST."""
        return cls(FaultKind.FORWARD_THEN_RESET)

    @classmethod
    def truncate_page(cls, drop: int = 1) -> Fault:
        """Forward, then remove the last ``drop`` entries of ``data``; totals stay as they were."""
        if drop < 0:
            raise ValueError("drop must be >= 0")
        return cls(FaultKind.TRUNCATE_PAGE, drop=drop)

    @classmethod
    def truncate_body(cls, bytes: int) -> Fault:
        """Forward, announce the full Content-Length, send only ``bytes`` bytes, then close."""
        if bytes < 0:
            raise ValueError("bytes must be >= 0")
        return cls(FaultKind.TRUNCATE_BODY, nbytes=bytes)

    @classmethod
    def invalid_json(cls, body: bytes | None = None) -> Fault:
        """Do not forward; answer 200 ``application/json`` with a body that is not JSON."""
        return cls(FaultKind.INVALID_JSON, body=body)

    @classmethod
    def answer(cls, code: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> Fault:
        """Do not forward; answer ``code`` with exactly these headers (Content-Encoding too) and
        bytes; Content-Length is the body's length unless a header gives it."""
        if not 100 <= code <= 599:
            raise ValueError(f"bad HTTP status {code}")
        return cls(FaultKind.ANSWER, code=code, body=body, headers=tuple(headers))

    @classmethod
    def drip(cls, seconds: float) -> Fault:
        """Forward, then send the answer one byte every ``seconds`` (until close())."""
        if seconds <= 0:
            raise ValueError("seconds must be > 0")
        return cls(FaultKind.DRIP, seconds=seconds)

    @classmethod
    def parse(cls, fault: Fault | str) -> Fault:
        """Accept a Fault, or the name of a fault without parameters (e.g. ``"reset"``)."""
        if isinstance(fault, Fault):
            return fault
        kind = FaultKind(fault)
        if kind not in _PARAMETERLESS_KINDS:
            raise ValueError(f"fault {fault!r} needs parameters; use Fault.{fault}(...)")
        return cls(kind)

    @property
    def forwards(self) -> bool:
        """Whether a request hit by this fault is sent to the upstream."""
        return self.kind in _FORWARDING_KINDS

    def __str__(self) -> str:
        k = self.kind
        if k in (FaultKind.DELAY, FaultKind.FORWARD_THEN_DELAY, FaultKind.DRIP):
            return f"{k.value}({self.seconds:g})"
        if k in (FaultKind.STATUS, FaultKind.ANSWER):
            return f"{k.value}({self.code})"
        if k is FaultKind.TRUNCATE_PAGE:
            return f"truncate_page(drop={self.drop})"
        if k is FaultKind.TRUNCATE_BODY:
            return f"truncate_body(bytes={self.nbytes})"
        return k.value


@dataclass(eq=False)
class Rule:
    """A scripted fault.  ``times=None`` means every matching request, forever."""

    method: str
    path_regex: re.Pattern[str]
    fault: Fault
    times: int | None = 1
    body_regex: re.Pattern[str] | None = None
    hits: int = 0

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def matches(self, method: str, path: str, query: str, body_text: str) -> bool:
        if self.method != "*" and self.method != method:
            return False
        target_ok = self.path_regex.fullmatch(path) is not None or (
            bool(query) and self.path_regex.fullmatch(f"{path}?{query}") is not None
        )
        if not target_ok:
            return False
        return self.body_regex is None or self.body_regex.search(body_text) is not None


@dataclass(frozen=True)
class LogRecord:
    """One request the proxy received, appended once its fate (and upstream status) is known."""

    method: str
    path: str
    query: str
    body: Any  # the parsed JSON request body, or None
    fault: Fault | None
    upstream_status: int | None  # None: the request did not reach the upstream
    raw_body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-cased names
    error: str | None = None  # upstream transport error, or why it was not forwarded
    time: float = 0.0  # time.monotonic() when logged

    @property
    def forwarded(self) -> bool:
        return self.upstream_status is not None

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    @property
    def params(self) -> dict[str, str]:
        return dict(urllib.parse.parse_qsl(self.query, keep_blank_values=True))


@dataclass(frozen=True)
class _UpstreamResponse:
    status: int
    headers: list[tuple[str, str]]
    content: bytes


class LoopbackHTTPServer(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer on 127.0.0.1 that skips the reverse-DNS lookup of ``server_bind``
    and does not join handler threads in ``server_close`` (handy for test upstreams too)."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        handler: type[http.server.BaseHTTPRequestHandler],
        port: int = 0,
    ) -> None:
        super().__init__(("127.0.0.1", port), handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        # Headers and body go out in separate writes: without this, Nagle + delayed ACK
        # add ~40 ms to every response.
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _ProxyServer(LoopbackHTTPServer):
    def __init__(self, proxy: FaultProxy) -> None:
        self.fault_proxy = proxy
        super().__init__(_ProxyHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if self.fault_proxy.closing:
            return
        super().handle_error(request, client_address)


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    # -- plumbing -----------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        self.server.fault_proxy._register(self.connection)

    def finish(self) -> None:
        self.server.fault_proxy._unregister(self.connection)
        with contextlib.suppress(OSError, ValueError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _dispatch(self) -> None:
        fp = self.server.fault_proxy
        fp._request_started()
        try:
            self._proxy()
        except (OSError, ValueError):
            # The client went away (e.g. it timed out) or we are shutting down.
            self.close_connection = True
        finally:
            fp._request_finished()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(
        self,
        status: int,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        *,
        announce_length: int | None = None,
    ) -> None:
        self.send_response_only(status)
        for name, value in headers:
            if name.lower() not in _RESPONSE_DROP:
                self.send_header(name, value)
        length = len(body) if announce_length is None else announce_length
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_exactly(self, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> None:
        self.close_connection = True
        self.send_response_only(status)
        named = set()
        for name, value in headers:
            self.send_header(name, value)
            named.add(name.lower())
        if "content-length" not in named:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, status: int, doc: Any) -> None:
        self._send(status, [("Content-Type", "application/json")], json.dumps(doc).encode())

    def _reset(self) -> None:
        """Close abruptly: SO_LINGER 0 makes the kernel send RST instead of FIN."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # The fd is really closed once rfile (which holds a reference) is closed in finish().
        with contextlib.suppress(OSError):
            self.connection.close()

    # -- the proxy ----------------------------------------------------------------------------

    def _proxy(self) -> None:
        fp = self.server.fault_proxy
        method = self.command.upper()
        raw = self._read_body()
        split = urllib.parse.urlsplit(self.path)
        path, query = split.path or "/", split.query
        target = path + (f"?{query}" if query else "")
        headers = list(self.headers.items())
        fault = fp._pick_fault(method, path, query, raw)
        kind = fault.kind if fault is not None else None

        def log(upstream: _UpstreamResponse | None, error: str | None = None) -> None:
            fp._log_request(
                LogRecord(
                    method=method,
                    path=path,
                    query=query,
                    body=_parse_json(raw),
                    fault=fault,
                    upstream_status=upstream.status if upstream is not None else None,
                    raw_body=raw,
                    headers={k.lower(): v for k, v in headers},
                    error=error,
                    time=time.monotonic(),
                )
            )

        upstream: _UpstreamResponse | None = None
        if fault is None or fault.forwards:
            if kind is FaultKind.DELAY and fp._closing.wait(fault.seconds if fault else 0.0):
                log(None, "proxy closed during delay")
                self._reset()
                return
            try:
                upstream = fp._forward(method, target, headers, raw)
            except httpx.HTTPError as exc:
                log(None, f"{type(exc).__name__}: {exc}")
                message = f"fault proxy could not reach upstream: {exc!r}"
                self._send_json(502, {"error": {"message": message, "type": "upstream_error"}})
                return

        if fault is None:
            assert upstream is not None
            log(upstream)
            self._send(upstream.status, upstream.headers, upstream.content)
            return

        if kind is FaultKind.FAIL_500:
            log(None)
            self._send_json(500, FAIL_500_BODY)
        elif kind is FaultKind.STATUS:
            log(None)
            if fault.body is not None:
                self._send(fault.code, [("Content-Type", "application/json")], fault.body)
            else:
                self._send_json(fault.code, _status_body(fault.code))
        elif kind is FaultKind.INVALID_JSON:
            log(None)
            body = fault.body if fault.body is not None else INVALID_JSON_BODY
            self._send(200, [("Content-Type", "application/json")], body)
        elif kind is FaultKind.RESET:
            log(None)
            self._reset()
        elif kind is FaultKind.ANSWER:
            log(None)
            self._send_exactly(fault.code, fault.headers, fault.body or b"")
        else:
            assert upstream is not None
            self._after_forward(fault, upstream, log)

    def _after_forward(
        self,
        fault: Fault,
        upstream: _UpstreamResponse,
        log: Callable[[_UpstreamResponse | None], None],
    ) -> None:
        fp = self.server.fault_proxy
        kind = fault.kind
        log(upstream)
        if kind is FaultKind.TRUNCATE_PAGE:
            self._send(upstream.status, upstream.headers, _drop_entries(upstream, fault.drop))
        elif kind is FaultKind.DELAY:
            self._send(upstream.status, upstream.headers, upstream.content)
        elif kind is FaultKind.FORWARD_THEN_500:
            self._send_json(500, FORWARD_THEN_500_BODY)
        elif kind is FaultKind.FORWARD_THEN_DELAY:
            if fp._closing.wait(fault.seconds):
                self._reset()
                return
            self._send(upstream.status, upstream.headers, upstream.content)
        elif kind is FaultKind.FORWARD_THEN_RESET:
            self._reset()
        elif kind is FaultKind.DRIP:
            self.close_connection = True
            self._send(
                upstream.status, upstream.headers, b"", announce_length=len(upstream.content)
            )
            for index in range(len(upstream.content)):
                if fp._closing.wait(fault.seconds):
                    self._reset()
                    return
                self.wfile.write(upstream.content[index : index + 1])
                self.wfile.flush()
        elif kind is FaultKind.TRUNCATE_BODY:
            self.close_connection = True
            content = upstream.content
            self._send(
                upstream.status,
                upstream.headers,
                content[: fault.nbytes],
                announce_length=len(content),
            )
        else:  # pragma: no cover - every kind is handled above
            raise AssertionError(f"unhandled fault {fault}")


def _parse_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _status_body(code: int) -> dict[str, Any]:
    try:
        message = HTTPStatus(code).phrase
    except ValueError:
        message = f"HTTP {code}"
    return {"error": {"message": message, "type": "fault_injected", "code": str(code)}}


def _drop_entries(upstream: _UpstreamResponse, drop: int) -> bytes:
    """Remove the last ``drop`` entries of ``data``, leaving total_count/total_pages alone."""
    doc = _parse_json(upstream.content)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        return upstream.content
    data = cast(list[Any], doc["data"])
    doc["data"] = data[: max(len(data) - drop, 0)]
    return json.dumps(doc).encode()


class FaultProxy:
    """Fault-injecting reverse proxy on ``127.0.0.1:<ephemeral port>``; see the module doc.

    It starts serving in the constructor; ``close()`` (or leaving the ``with`` block) stops it
    without waiting for delayed requests, which are cut off.
    """

    def __init__(self, upstream_url: str, *, upstream_timeout: float = 30.0) -> None:
        upstream = httpx.URL(upstream_url)
        if upstream.scheme != "http" or upstream.host not in LOOPBACK_HOSTS:
            raise ValueError(f"upstream must be http:// on loopback, got {upstream_url!r}")
        self.upstream_url = upstream_url.rstrip("/")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._closed = False
        self._rules: list[Rule] = []
        self._log: list[LogRecord] = []
        self._in_flight = 0
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._write_hooks: list[tuple[int, Callable[[], None]]] = []
        self._client = httpx.Client(
            timeout=upstream_timeout, follow_redirects=False, trust_env=False
        )
        self._server = _ProxyServer(self)
        self.port = self._server.server_port
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"faultproxy-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def __repr__(self) -> str:
        return f"FaultProxy({self.url} -> {self.upstream_url}, rules={len(self._rules)})"

    # -- context manager / lifecycle ----------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def closing(self) -> bool:
        return self._closing.is_set()

    def close(self, join_timeout: float = 2.0) -> None:
        """Stop serving: interrupt delays, cut open connections, join handler threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = dict(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + join_timeout
        for thread in connections.values():
            if thread is not threading.current_thread():  # close() from a handler (a hook)
                thread.join(max(deadline - time.monotonic(), 0.0))
        self._thread.join(max(deadline - time.monotonic(), 0.0))
        self._client.close()

    # -- scripting ----------------------------------------------------------------------------

    def add_rule(
        self,
        method: str,
        path_regex: str,
        fault: Fault | str,
        times: int | None = 1,
        body_regex: str | None = None,
    ) -> Rule:
        """Give ``fault`` to the first ``times`` requests matching (None: all of them).

        ``method`` is an HTTP method or ``"*"``.  ``path_regex`` must match the whole path
        (``/model/.+/update``) or the whole ``path?query`` (``/v2/model/info\\?page=2.*``).
        ``body_regex`` is searched in the raw request body text (httpx sends compact JSON,
        ``{"id":"x"}``, so write ``'"id":\\s*"x"'`` to match any client).
        """
        if times is not None and times < 0:
            raise ValueError("times must be >= 0 or None")
        rule = Rule(
            method=method.upper(),
            path_regex=re.compile(path_regex),
            fault=Fault.parse(fault),
            times=times,
            body_regex=re.compile(body_regex) if body_regex is not None else None,
        )
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear_rules(self) -> None:
        with self._lock:
            self._rules.clear()

    @property
    def rules(self) -> list[Rule]:
        with self._lock:
            return list(self._rules)

    # -- observing ----------------------------------------------------------------------------

    @property
    def log(self) -> list[LogRecord]:
        """A snapshot of the requests seen so far, in the order they were logged."""
        with self._lock:
            return list(self._log)

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    def requests(self, method: str | None = None, path_regex: str | None = None) -> list[LogRecord]:
        """Log records filtered by method and (full-match) path regex."""
        pattern = re.compile(path_regex) if path_regex is not None else None
        return [
            r
            for r in self.log
            if (method is None or r.method == method.upper())
            and (pattern is None or pattern.fullmatch(r.path) is not None)
        ]

    def forwarded_writes(self) -> list[tuple[str, str, Any]]:
        """(method, path, json body) of every POST/PUT/PATCH/DELETE that reached the upstream."""
        return [(r.method, r.path, r.body) for r in self.log if r.is_write and r.forwarded]

    def on_forwarded_write(self, count: int, action: Callable[[], None]) -> None:
        """Run ``action`` once ``count`` writes have reached the upstream: an event to act on,
        where a timer would race.  It runs in the handler of the count-th write, after the
        upstream answered and before that answer is relayed, so ``fp.close`` there lets no
        later request through (and cuts that answer: the client cannot know the write
        happened)."""
        if count < 1:
            raise ValueError("count must be >= 1")
        with self._lock:
            self._write_hooks.append((count, action))
        self._fire_write_hooks()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no request is being handled (e.g. a delayed forward has landed)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    # -- internals used by the handler --------------------------------------------------------

    def _register(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections[conn] = threading.current_thread()

    def _unregister(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.pop(conn, None)

    def _request_started(self) -> None:
        with self._lock:
            self._in_flight += 1

    def _request_finished(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def _log_request(self, record: LogRecord) -> None:
        with self._lock:
            self._log.append(record)
        if record.is_write and record.forwarded:
            self._fire_write_hooks()

    def _fire_write_hooks(self) -> None:
        with self._lock:
            written = sum(1 for r in self._log if r.is_write and r.forwarded)
            due = [hook for hook in self._write_hooks if hook[0] <= written]
            self._write_hooks = [hook for hook in self._write_hooks if hook[0] > written]
        for _count, action in due:
            action()

    def _pick_fault(self, method: str, path: str, query: str, raw: bytes) -> Fault | None:
        body_text = raw.decode("utf-8", errors="replace")
        with self._lock:
            for rule in self._rules:
                if not rule.exhausted and rule.matches(method, path, query, body_text):
                    rule.hits += 1
                    return rule.fault
        return None

    def _forward(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> _UpstreamResponse:
        connection_tokens = {
            token.strip().lower()
            for name, value in headers
            if name.lower() == "connection"
            for token in value.split(",")
        }
        fwd = [
            (name, value)
            for name, value in headers
            if name.lower() not in _REQUEST_DROP and name.lower() not in connection_tokens
        ]
        fwd.append(("Accept-Encoding", "identity"))
        response = self._client.request(
            method, self.upstream_url + target, headers=fwd, content=body or None
        )
        return _UpstreamResponse(
            status=response.status_code,
            headers=list(response.headers.multi_items()),
            content=response.content,
        )
