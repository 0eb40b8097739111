"""Each fault of tests/support/faultproxy.py does what it says, against a tiny fake LiteLLM
upstream."""

from __future__ import annotations

import http.server
import json
import math
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
import pytest

from .support.faultproxy import (
    FAIL_500_BODY,
    FORWARD_THEN_500_BODY,
    Fault,
    FaultKind,
    FaultProxy,
    LoopbackHTTPServer,
)

TRANSPORT_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError)
AUTH = {"Authorization": "Bearer sk-test-master"}


# -- a tiny LiteLLM-like upstream ----------------------------------------------------------------


@dataclass
class UpstreamState:
    models: list[dict[str, Any]]
    writes: list[tuple[str, str, Any]] = field(default_factory=list)
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, target, auth
    lock: threading.Lock = field(default_factory=threading.Lock)


class _UpstreamServer(LoopbackHTTPServer):
    state: UpstreamState


class _UpstreamHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, doc: Any) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Upstream", "fake-litellm")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        state = cast(_UpstreamServer, self.server).state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = json.loads(raw) if raw else None
        url = urllib.parse.urlsplit(self.path)
        with state.lock:
            state.seen.append((self.command, self.path, self.headers.get("Authorization")))
            if self.command == "GET" and url.path == "/v2/model/info":
                q = dict(urllib.parse.parse_qsl(url.query))
                page, size = int(q.get("page", "1")), int(q.get("size", "50"))
                total = len(state.models)
                doc = {
                    "data": state.models[(page - 1) * size : page * size],
                    "total_count": total,
                    "current_page": page,
                    "total_pages": max(math.ceil(total / size), 1),
                    "size": size,
                }
                return self._reply(200, doc)
            if self.command in ("POST", "PATCH", "PUT", "DELETE"):
                state.writes.append((self.command, url.path, body))
            if self.command == "POST" and url.path == "/model/new":
                state.models.append(body)
                return self._reply(200, {"model_id": body["model_info"]["id"]})
            if self.command == "PATCH" and url.path.endswith("/update"):
                return self._reply(200, {"model_id": url.path.split("/")[2]})
            if self.command == "POST" and url.path == "/model/delete":
                state.models = [m for m in state.models if m["model_info"]["id"] != body["id"]]
                return self._reply(200, {"message": f"Model: {body['id']} deleted successfully"})
        self._reply(404, {"detail": "Not Found"})

    do_GET = do_POST = do_PATCH = _handle


def _model(model_id: str) -> dict[str, Any]:
    return {
        "model_name": f"route-{model_id}",
        "litellm_params": {"model": f"openai/{model_id}"},
        "model_info": {"id": model_id},
    }


@pytest.fixture
def upstream() -> Iterator[_UpstreamServer]:
    server = _UpstreamServer(_UpstreamHandler)
    server.state = UpstreamState(models=[_model(f"m{i}") for i in range(5)])
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(2)


@pytest.fixture
def fp(upstream: _UpstreamServer) -> Iterator[FaultProxy]:
    with FaultProxy(upstream.url) as proxy:
        yield proxy


@pytest.fixture
def client(fp: FaultProxy) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fp.url, headers=AUTH, timeout=5.0, trust_env=False) as c:
        yield c


# -- plain forwarding ------------------------------------------------------------------------------


def test_passthrough_relays_request_and_response(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    r = client.get("/v2/model/info", params={"page": 2, "size": 2})
    assert r.status_code == 200
    doc = r.json()
    assert [m["model_info"]["id"] for m in doc["data"]] == ["m2", "m3"]
    assert doc["total_count"] == 5 and doc["current_page"] == 2
    assert r.headers["x-upstream"] == "fake-litellm"
    assert r.headers["content-length"] == str(len(r.content))

    r = client.post("/model/new", json=_model("x1"))
    assert r.status_code == 200 and r.json() == {"model_id": "x1"}
    r = client.post("/nope", json={})
    assert r.status_code == 404

    assert upstream.state.seen[0] == ("GET", "/v2/model/info?page=2&size=2", AUTH["Authorization"])
    assert upstream.state.writes[0] == ("POST", "/model/new", _model("x1"))
    get, post, nope = fp.log
    assert (get.method, get.path, get.query, get.body) == (
        "GET",
        "/v2/model/info",
        "page=2&size=2",
        None,
    )
    assert get.params == {"page": "2", "size": "2"}
    assert get.headers["authorization"] == AUTH["Authorization"]
    assert (get.fault, get.upstream_status) == (None, 200)
    assert (post.method, post.path, post.body, post.upstream_status) == (
        "POST",
        "/model/new",
        _model("x1"),
        200,
    )
    assert nope.upstream_status == 404 and nope.forwarded


# -- each fault ------------------------------------------------------------------------------------


def test_forward_then_500_writes_upstream_but_answers_500(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("POST", "/model/new", Fault.forward_then_500())
    r = client.post("/model/new", json=_model("a"))
    assert r.status_code == 500
    assert r.json() == FORWARD_THEN_500_BODY
    assert "router reload failed" in r.json()["error"]["message"]
    assert upstream.state.writes == [("POST", "/model/new", _model("a"))]
    (rec,) = fp.log
    assert rec.fault == Fault.forward_then_500() and rec.upstream_status == 200
    assert fp.forwarded_writes() == [("POST", "/model/new", _model("a"))]


def test_fail_500_does_not_reach_upstream(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("POST", "/model/new", "fail_500")
    r = client.post("/model/new", json=_model("a"))
    assert r.status_code == 500
    assert r.json() == FAIL_500_BODY
    assert upstream.state.seen == [] and upstream.state.writes == []
    (rec,) = fp.log
    assert rec.fault is not None and rec.fault.kind is FaultKind.FAIL_500
    assert rec.upstream_status is None and not rec.forwarded
    assert fp.forwarded_writes() == []


@pytest.mark.parametrize("code", [502, 503, 504, 429])
def test_status_answers_code_without_forwarding(
    code: int, fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("PATCH", r"/model/[^/]+/update", Fault.status(code))
    r = client.patch("/model/m1/update", json={"model_info": {"id": "m1"}})
    assert r.status_code == code
    assert r.json()["error"]["code"] == str(code)
    assert upstream.state.seen == []
    assert client.patch("/model/m1/update", json={}).status_code == 200  # times=1


def test_reset_gives_transport_error_and_does_not_forward(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("POST", "/model/new", Fault.reset(), times=2)
    with pytest.raises(TRANSPORT_ERRORS):
        client.post("/model/new", json=_model("a"))
    # It really is an RST (SO_LINGER 0), not an orderly FIN.
    with socket.create_connection(("127.0.0.1", fp.port), timeout=3) as sock:
        sock.sendall(b"POST /model/new HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        with pytest.raises(ConnectionResetError):
            sock.recv(1024)
    assert upstream.state.seen == []
    assert [r.upstream_status for r in fp.log] == [None, None]
    assert client.post("/model/new", json=_model("b")).status_code == 200
    assert upstream.state.writes == [("POST", "/model/new", _model("b"))]


def test_forward_then_reset_writes_upstream_then_resets(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("POST", "/model/delete", Fault.forward_then_reset())
    with pytest.raises(TRANSPORT_ERRORS):
        client.post("/model/delete", json={"id": "m0"})
    assert upstream.state.writes == [("POST", "/model/delete", {"id": "m0"})]
    assert fp.forwarded_writes() == [("POST", "/model/delete", {"id": "m0"})]
    assert "m0" not in [m["model_info"]["id"] for m in upstream.state.models]


def test_delay_past_client_timeout_then_later_request_served(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("POST", "/model/new", Fault.delay(0.8))
    t0 = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        client.post("/model/new", json=_model("slow"), timeout=0.2)
    assert time.monotonic() - t0 < 0.7
    assert upstream.state.writes == []  # still sleeping: not forwarded yet

    # The delayed request is still in flight; the next one is served at once.
    t1 = time.monotonic()
    r = client.post("/model/new", json=_model("fast"))
    assert r.status_code == 200 and time.monotonic() - t1 < 0.5
    assert upstream.state.writes == [("POST", "/model/new", _model("fast"))]

    # After the sleep the delayed request is forwarded after all (like a slow server would).
    assert fp.wait_idle(3)
    assert [w[2]["model_info"]["id"] for w in upstream.state.writes] == ["fast", "slow"]
    slow = fp.requests("POST", "/model/new")[-1]
    assert slow.fault == Fault.delay(0.8) and slow.upstream_status == 200


def test_forward_then_delay_commits_write_before_client_times_out(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("POST", "/model/new", Fault.forward_then_delay(5))
    with pytest.raises(httpx.ReadTimeout):
        client.post("/model/new", json=_model("a"), timeout=0.3)
    assert upstream.state.writes == [("POST", "/model/new", _model("a"))]
    assert fp.forwarded_writes() == [("POST", "/model/new", _model("a"))]
    assert client.get("/v2/model/info").json()["total_count"] == 6


def test_truncate_page_drops_entries_but_keeps_totals(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("GET", "/v2/model/info", Fault.truncate_page(drop=2))
    doc = client.get("/v2/model/info", params={"page": 1, "size": 5}).json()
    assert [m["model_info"]["id"] for m in doc["data"]] == ["m0", "m1", "m2"]
    assert (doc["total_count"], doc["total_pages"], doc["current_page"]) == (5, 1, 1)
    assert len(upstream.state.seen) == 1  # it was forwarded
    doc = client.get("/v2/model/info", params={"page": 1, "size": 5}).json()
    assert len(doc["data"]) == 5


def test_truncate_body_cuts_response_short(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    full = client.get("/v2/model/info").content
    fp.add_rule("GET", "/v2/model/info", Fault.truncate_body(bytes=10))
    with client.stream("GET", "/v2/model/info") as r:
        assert r.status_code == 200
        assert r.headers["content-length"] == str(len(full))  # announces the full length
        with pytest.raises(TRANSPORT_ERRORS):
            r.read()

    fp.add_rule("POST", "/model/new", Fault.truncate_body(bytes=3))
    with pytest.raises(TRANSPORT_ERRORS):
        client.post("/model/new", json=_model("a"))
    assert upstream.state.writes == [("POST", "/model/new", _model("a"))]
    assert client.get("/v2/model/info").status_code == 200


def test_invalid_json_is_200_json_but_not_json(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("GET", "/v2/model/info", Fault.invalid_json())
    r = client.get("/v2/model/info")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.content
    with pytest.raises(ValueError):
        json.loads(r.content)
    assert upstream.state.seen == []


# -- scripting -------------------------------------------------------------------------------------


def test_times_is_honoured(fp: FaultProxy, client: httpx.Client) -> None:
    rule = fp.add_rule("GET", "/v2/model/info", Fault.status(503), times=2)
    codes = [client.get("/v2/model/info").status_code for _ in range(3)]
    assert codes == [503, 503, 200]
    assert rule.hits == 2 and rule.exhausted

    fp.clear_rules()
    fp.add_rule("GET", "/v2/model/info", "fail_500", times=None)
    assert [client.get("/v2/model/info").status_code for _ in range(3)] == [500, 500, 500]
    fp.clear_rules()
    assert client.get("/v2/model/info").status_code == 200


def test_times_is_exact_under_concurrency(fp: FaultProxy) -> None:
    fp.add_rule("GET", "/v2/model/info", "fail_500", times=3)
    with httpx.Client(base_url=fp.url, timeout=5, trust_env=False) as c:

        def get(_: int) -> int:
            return c.get("/v2/model/info").status_code

        with ThreadPoolExecutor(12) as pool:
            codes = list(pool.map(get, range(12)))
    assert sorted(codes) == [200] * 9 + [500] * 3


def test_rules_checked_in_order_with_method_path_query_and_body(
    fp: FaultProxy, client: httpx.Client
) -> None:
    fp.add_rule("POST", "/model/new", Fault.fail_500(), body_regex=r'"id":\s*"b"')
    fp.add_rule("POST", "/model/new", Fault.status(503))
    fp.add_rule("GET", r"/v2/model/info\?page=2&.*", Fault.status(504))
    fp.add_rule("*", r"/model/.+/update", Fault.status(502))

    assert client.post("/model/new", json=_model("a")).status_code == 503  # 1st rule: body differs
    assert client.post("/model/new", json=_model("b")).status_code == 500
    assert client.post("/model/new", json=_model("a")).status_code == 200  # 503 rule used up
    assert client.get("/model/new").status_code == 404  # method differs: forwarded
    assert client.get("/v2/model/info", params={"page": 1, "size": 2}).status_code == 200
    assert client.get("/v2/model/info", params={"page": 2, "size": 2}).status_code == 504
    assert client.patch("/model/m1/update", json={}).status_code == 502
    assert client.post("/v2/model/new", json=_model("c")).status_code == 404  # full match only


def test_first_matching_rule_wins(fp: FaultProxy, client: httpx.Client) -> None:
    fp.add_rule("GET", "/v2/model/info", Fault.status(502))
    fp.add_rule("*", r"/v2/.*", Fault.status(503))
    codes = [client.get("/v2/model/info").status_code for _ in range(3)]
    assert codes == [502, 503, 200]


def test_forwarded_writes_is_accurate(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    fp.add_rule("POST", "/model/new", "fail_500", body_regex=r'"id":\s*"f"')
    fp.add_rule("POST", "/model/new", "reset", body_regex=r'"id":\s*"r"')
    fp.add_rule("POST", "/model/new", "forward_then_500", body_regex=r'"id":\s*"w"')
    fp.add_rule("PATCH", r"/model/.+/update", Fault.status(503))

    client.post("/model/new", json=_model("f"))
    with pytest.raises(TRANSPORT_ERRORS):
        client.post("/model/new", json=_model("r"))
    client.post("/model/new", json=_model("w"))
    client.post("/model/new", json=_model("ok"))
    client.patch("/model/m1/update", json={"x": 1})
    client.patch("/model/m2/update", json={"x": 2})
    client.post("/model/delete", json={"id": "m3"})
    client.get("/v2/model/info")

    expected = [
        ("POST", "/model/new", _model("w")),
        ("POST", "/model/new", _model("ok")),
        ("PATCH", "/model/m2/update", {"x": 2}),
        ("POST", "/model/delete", {"id": "m3"}),
    ]
    assert fp.forwarded_writes() == expected
    assert upstream.state.writes == expected
    assert len(fp.log) == 8


def test_string_faults_and_bad_upstream_are_rejected(upstream: _UpstreamServer) -> None:
    with FaultProxy(upstream.url) as proxy:
        with pytest.raises(ValueError):
            proxy.add_rule("GET", "/", "delay")  # needs seconds
        with pytest.raises(ValueError):
            proxy.add_rule("GET", "/", "no_such_fault")
    with pytest.raises(ValueError):
        FaultProxy("http://example.com:4000")


# -- shutdown --------------------------------------------------------------------------------------


def test_close_does_not_hang_with_delayed_requests_in_flight(upstream: _UpstreamServer) -> None:
    proxy = FaultProxy(upstream.url)
    proxy.add_rule("GET", "/v2/model/info", Fault.delay(30), times=None)
    proxy.add_rule("POST", "/model/new", Fault.forward_then_delay(30), times=None)
    errors: list[BaseException] = []

    def call(method: str) -> None:
        with httpx.Client(base_url=proxy.url, timeout=20, trust_env=False) as c:
            try:
                if method == "POST":
                    c.post("/model/new", json=_model("slow"))
                else:
                    c.get("/v2/model/info")
            except httpx.HTTPError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=call, args=(m,)) for m in ("GET", "GET", "POST")]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 3
    while len(proxy.log) < 1 or len(upstream.state.seen) < 1:  # the POST was forwarded
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.1)  # let the GETs start sleeping too

    t0 = time.monotonic()
    proxy.close()
    assert time.monotonic() - t0 < 1.0  # the sleeps were interrupted, not waited out
    interrupted = [r for r in proxy.log if r.error == "proxy closed during delay"]
    assert [(r.method, r.upstream_status) for r in interrupted] == [("GET", None)] * 2
    for t in threads:
        t.join(3)
        assert not t.is_alive()
    assert len(errors) == 3 and all(isinstance(e, httpx.TransportError) for e in errors)
    proxy.close()  # idempotent


# -- garbage answers and events --------------------------------------------------------------------


def test_answer_sends_exactly_the_headers_and_bytes_given(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    headers = [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]
    fp.add_rule("GET", "/v2/model/info", Fault.answer(200, b"\x1f\x8b not gzip", headers))
    with pytest.raises(httpx.DecodingError):
        client.get("/v2/model/info")
    fp.add_rule("GET", "/v2/model/info", Fault.answer(200, b'{"total_pages": "2"}'))
    assert client.get("/v2/model/info").json() == {"total_pages": "2"}
    assert upstream.state.seen == []  # never forwarded


def test_drip_relays_the_whole_answer_one_byte_at_a_time(
    fp: FaultProxy, client: httpx.Client, upstream: _UpstreamServer
) -> None:
    full = client.get("/v2/model/info").content
    fp.add_rule("GET", "/v2/model/info", Fault.drip(0.0005))
    with client.stream("GET", "/v2/model/info") as r:
        assert r.headers["content-length"] == str(len(full))
        assert r.read() == full
    assert [str(r.fault) for r in fp.log if r.fault] == ["drip(0.0005)"]
    assert len(upstream.state.seen) == 2  # forwarded


def test_on_forwarded_write_acts_before_any_later_request(upstream: _UpstreamServer) -> None:
    proxy = FaultProxy(upstream.url)
    proxy.on_forwarded_write(2, proxy.close)
    with httpx.Client(base_url=proxy.url, headers=AUTH, timeout=5, trust_env=False) as c:
        assert c.post("/model/new", json=_model("a")).status_code == 200
        assert c.get("/v2/model/info").status_code == 200  # reads do not count
        with pytest.raises(httpx.TransportError):  # the 2nd write lands; its answer is cut
            c.post("/model/new", json=_model("b"))
        with pytest.raises(httpx.TransportError):
            c.post("/model/new", json=_model("c"))
    assert [body["model_info"]["id"] for _m, _p, body in upstream.state.writes] == ["a", "b"]
    assert proxy.closing
