"""A fake GitHub REST server on 127.0.0.1 for tests (threaded ``http.server``, port 0).

It keeps issues, pull requests and comments in memory, records every call, paginates lists with
a ``Link`` header (``per_page`` honoured, default 30, at most 100), checks
``Authorization: Bearer <token>`` and can inject faults (next N responses 500, rate limited,
"stored but answered 500", or raw bytes, dripped one at a time).

Authors as GitHub keeps them: every comment, issue and pull request has ``user: {login, type}``;
what the API creates is by the identity of the token that sent it. The default token behaves
like the Actions GITHUB_TOKEN (``GET /user`` answers 403 "Resource not accessible by
integration"; GraphQL's ``viewer { login }`` at ``POST /graphql`` names ``github-actions[bot]``,
type Bot, which it writes as); ``add_token`` adds a user's token (``GET /user`` names its
login), ``add_app_token`` a GitHub App's installation token (403 on ``GET /user``, the viewer
names ``<app>[bot]``; ``viewer=False``: GraphQL refuses to say). Tests seed comments and issues
by anyone.

Labels as a reviewed force reads them: ``add_label``/``remove_label`` by a login record GitHub's
issue events (``labeled``/``unlabeled`` with actor, id and created_at, at ``GET
/issues/N/events``); ``set_permission`` gives a login its access, answered at ``GET
/collaborators/LOGIN/permission`` (404 for a login that is no collaborator). Every comment has
``created_at``/``updated_at`` and every event ``created_at`` from one clock that advances a
second at each of them, so their order is the order of the calls.

Use the ``fake_github`` fixture (import it into conftest.py) or ``with FakeGitHub() as gh:``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from .fake_github_git import FakeGitData

JSON = dict[str, Any]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]
    json: Any
    status: int


ACTIONS_BOT = "github-actions[bot]"
INTEGRATION = "Resource not accessible by integration"


@dataclass(frozen=True)
class TokenUser:
    """Who a token writes as; ``integration``: GET /user answers 403 (Actions and app tokens)."""

    login: str
    type: str = "User"
    integration: bool = False
    viewer: bool = True  # whether GraphQL's viewer names the login

    def json(self) -> JSON:
        return {"login": self.login, "type": self.type}


def user_json(login: str, type_: str | None = None) -> JSON:
    return {"login": login, "type": type_ or ("Bot" if login.endswith("[bot]") else "User")}


@dataclass
class Fault:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "Server Error"
    after_commit: bool = False  # handle the request, then answer with this fault anyway
    method: str | None = None  # only requests with this method (None: any)
    path: str | None = None  # only requests whose path matches this regex (None: any)
    raw: bytes | None = None  # answer these bytes as the body instead of {"message": ...}
    drip: float | None = None  # send the body one byte per this many seconds

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path is None or re.search(self.path, path) is not None
        )


class FakeGitHub:
    """In-memory GitHub for one repository."""

    def __init__(self, token: str = "ghs_fake_token_0123456789", repo: str = "acme/fleet") -> None:
        self.token = token
        self.repo = repo
        self.tokens = {token: TokenUser(ACTIONS_BOT, "Bot", integration=True)}
        self.calls: list[Call] = []
        self.issues: dict[int, JSON] = {}  # number -> issue (PRs too: they share numbers)
        self.comments: dict[int, JSON] = {}  # id -> comment (with "issue_number")
        self.commit_pulls: dict[str, list[int]] = {}  # sha -> PR numbers
        self.faults: list[Fault] = []
        self.link_base: str | None = None  # host put in Link headers (None: this server)
        self.lock = threading.RLock()
        self.closing = threading.Event()  # set by stop(): a dripping answer ends
        self.gave_up = threading.Semaphore(0)  # released each time a client left a drip
        self.git = FakeGitData(self)  # branches, commits, pull requests, workflow dispatches
        self.events: dict[int, list[JSON]] = {}  # issue number -> its label events
        self.permissions: dict[str, str] = {}  # login -> admin | maintain | write | read | ...
        self._ticks = 0
        self._next_event_id = 500
        self._next_comment_id = 1000
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeGitHub is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        handler = type("Handler", (_Handler,), {"github": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self, **extra: str) -> dict[str, str]:
        """Environment variables that point fleet-sync at this server (the default token;
        GITHUB_TOKEN=... in ``extra`` picks another)."""
        return {
            "GITHUB_TOKEN": self.token,
            "GITHUB_REPOSITORY": self.repo,
            "GITHUB_API_URL": self.url,
            **extra,
        }

    # ------------------------------------------------------------------ seeding

    def add_token(self, token: str, login: str, type_: str = "User") -> str:
        """Accept another token, a user's (GET /user names ``login``); returns it."""
        with self.lock:
            self.tokens[token] = TokenUser(login, type_)
            return token

    def add_app_token(self, token: str, login: str, viewer: bool = True) -> str:
        """Accept a GitHub App's installation token writing as ``login`` (``<app>[bot]``)."""
        with self.lock:
            self.tokens[token] = TokenUser(login, "Bot", integration=True, viewer=viewer)
            return token

    def add_pull_request(
        self,
        number: int | None = None,
        *,
        state: str = "open",
        merged: bool = False,
        body: str = "",
        labels: list[str] | None = None,
        user: str = "someone",
        user_type: str | None = None,
    ) -> int:
        with self.lock:
            number = number if number is not None else self._next_number()
            self.issues[number] = {
                "number": number,
                "title": f"PR {number}",
                "body": body,
                "state": state,
                "labels": [{"name": name} for name in labels or []],
                "user": user_json(user, user_type),
                "pull_request": {"url": f"/repos/{self.repo}/pulls/{number}"},
                "merged_at": "2026-01-01T00:00:00Z" if merged else None,
            }
            return number

    def add_issue(
        self,
        title: str,
        body: str,
        *,
        labels: list[str] | None = None,
        state: str = "open",
        user: str = "someone",
        user_type: str | None = None,
    ) -> int:
        """An issue by ``user`` (type Bot for a login ending in [bot] unless ``user_type``)."""
        with self.lock:
            number = self._next_number()
            self.issues[number] = {
                "number": number,
                "title": title,
                "body": body,
                "state": state,
                "labels": [{"name": name} for name in labels or []],
                "user": user_json(user, user_type),
            }
            return number

    def add_comment(
        self, issue_number: int, body: str, *, user: str = "someone", user_type: str | None = None
    ) -> int:
        """A comment by ``user`` (type Bot for a login ending in [bot] unless ``user_type``)."""
        with self.lock:
            return int(self._create_comment(issue_number, body, user_json(user, user_type))["id"])

    def set_permission(self, login: str, permission: str) -> None:
        with self.lock:
            self.permissions[login] = permission

    def add_label(self, number: int, name: str, *, by: str) -> int:
        """``by`` adds label ``name`` to issue or PR ``number``; returns the event's id."""
        with self.lock:
            issue = self.issues[number]
            if all(label["name"] != name for label in issue["labels"]):
                issue["labels"].append({"name": name})
            return self._label_event(number, "labeled", name, by)

    def remove_label(self, number: int, name: str, *, by: str) -> int:
        with self.lock:
            issue = self.issues[number]
            issue["labels"] = [label for label in issue["labels"] if label["name"] != name]
            return self._label_event(number, "unlabeled", name, by)

    def _label_event(self, number: int, kind: str, name: str, by: str) -> int:
        self._next_event_id += 1
        self.events.setdefault(number, []).append({
            "id": self._next_event_id,
            "event": kind,
            "actor": user_json(by),
            "label": {"name": name, "color": "ededed"},
            "created_at": self._now(),
        })  # fmt: skip
        return self._next_event_id

    def _now(self) -> str:
        """The fake's clock: one second later at each call."""
        self._ticks += 1
        moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self._ticks)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def set_commit_pulls(self, sha: str, numbers: list[int]) -> None:
        with self.lock:
            self.commit_pulls[sha] = list(numbers)

    # ------------------------------------------------------------------ faults

    def fail_next(
        self,
        n: int = 1,
        status: int = 500,
        message: str = "Server Error",
        *,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """The next ``n`` requests (of ``method``, to a path matching ``path``, if given) answer
        ``status``, changing nothing."""
        with self.lock:
            self.faults.extend(
                Fault(status, message=message, method=method, path=path) for _ in range(n)
            )

    def answer_next(
        self,
        raw: bytes,
        n: int = 1,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        drip: float | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """The next ``n`` matching requests get ``raw`` as their body, changing nothing; with
        ``drip``, one byte per ``drip`` seconds until the client leaves (``gave_up``)."""
        with self.lock:
            self.faults.extend(
                Fault(status, dict(headers or {}), "", False, method, path, raw, drip)
                for _ in range(n)
            )

    def fail_after_commit_next(
        self, n: int = 1, status: int = 500, *, method: str | None = None
    ) -> None:
        """The next ``n`` requests (of ``method``) are carried out, then answered ``status``."""
        with self.lock:
            self.faults.extend(Fault(status, after_commit=True, method=method) for _ in range(n))

    def rate_limit_next(
        self,
        n: int = 1,
        *,
        retry_after: int | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """Primary rate limit (403, x-ratelimit-remaining: 0) or, with retry_after, 429."""
        with self.lock:
            for _ in range(n):
                if retry_after is None:
                    headers = {
                        "x-ratelimit-limit": "5000",
                        "x-ratelimit-remaining": "0",
                        "x-ratelimit-reset": str(int(time.time()) + 600),
                    }
                    self.faults.append(
                        Fault(403, headers, "API rate limit exceeded", method=method, path=path)
                    )
                else:
                    headers = {"retry-after": str(retry_after)}
                    message = "You have exceeded a secondary rate limit"
                    self.faults.append(Fault(429, headers, message, method=method, path=path))

    def take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for index, fault in enumerate(self.faults):
                if fault.matches(method, path):
                    return self.faults.pop(index)
            return None

    # ------------------------------------------------------------------ inspection

    def comments_on(self, issue_number: int) -> list[JSON]:
        with self.lock:
            return sorted(
                (c for c in self.comments.values() if c["issue_number"] == issue_number),
                key=lambda c: int(c["id"]),
            )

    def calls_to(self, method: str, pattern: str = "") -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method and re.search(pattern, c.path)]

    def writes(self) -> list[Call]:
        """Every call that may change something (a GraphQL query at /graphql changes nothing)."""
        with self.lock:
            return [
                c
                for c in self.calls
                if c.method in {"POST", "PATCH", "PUT", "DELETE"} and c.path != "/graphql"
            ]

    # ------------------------------------------------------------------ internals

    def _next_number(self) -> int:
        return max(self.issues, default=0) + 1

    def _create_comment(self, issue_number: int, body: str, user: JSON) -> JSON:
        self._next_comment_id += 1
        cid = self._next_comment_id
        comment = {
            "id": cid,
            "issue_number": issue_number,
            "body": body,
            "user": dict(user),
            "html_url": f"https://github.invalid/{self.repo}/issues/{issue_number}#c{cid}",
            "created_at": (now := self._now()),
            "updated_at": now,
        }
        self.comments[cid] = comment
        return comment

    def handle(
        self, method: str, path: str, query: dict[str, str], body: Any, token: TokenUser
    ) -> tuple[int, Any, dict[str, str]]:
        """Route one request authenticated as ``token``; returns (status, json, headers)."""
        if path == "/user":
            if method != "GET":
                return 405, {"message": "Method Not Allowed"}, {}
            if token.integration:
                return 403, {"message": INTEGRATION, "status": "403"}, {}
            return 200, {**token.json(), "id": 1, "site_admin": False}, {}
        if path == "/graphql":
            return self._graphql(method, body, token)
        prefix = f"/repos/{self.repo}"
        if not path.startswith(prefix + "/"):
            return 404, {"message": "Not Found"}, {}
        rest = path[len(prefix) :]
        if (answer := self.git.handle(method, rest, query, body, token.json())) is not None:
            return answer
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m.group(1))
            if number not in self.issues:
                return 404, {"message": "Not Found"}, {}
            if method == "GET":
                return self._page(path, query, self.comments_on(number))
            if method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                    return 422, {"message": "body is missing"}, {}
                return 201, self._create_comment(number, body["body"], token.json()), {}
        elif m := re.fullmatch(r"/issues/comments/(\d+)", rest):
            cid = int(m.group(1))
            if cid not in self.comments:
                return 404, {"message": "Not Found"}, {}
            if method == "PATCH":
                if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                    return 422, {"message": "body is missing"}, {}
                self.comments[cid]["body"] = body["body"]
                self.comments[cid]["updated_at"] = self._now()
                return 200, self.comments[cid], {}
        elif m := re.fullmatch(r"/issues/(\d+)/events", rest):
            if int(m.group(1)) not in self.issues:
                return 404, {"message": "Not Found"}, {}
            if method == "GET":
                return self._page(path, query, list(self.events.get(int(m.group(1)), [])))
        elif m := re.fullmatch(r"/collaborators/([^/]+)/permission", rest):
            if method == "GET":
                login = m.group(1)
                if login not in self.permissions:
                    return 404, {"message": f"{login} is not a user"}, {}
                permission = self.permissions[login]
                legacy = {"maintain": "write", "triage": "read"}.get(permission, permission)
                granted: JSON = {"permission": legacy, "role_name": permission}
                return 200, {**granted, "user": user_json(login)}, {}
        elif rest == "/issues":
            if method == "GET":
                return self._page(path, query, self._list_issues(query))
            if method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("title"), str):
                    return 422, {"message": "title is missing"}, {}
                number = self.add_issue(
                    body["title"],
                    str(body.get("body") or ""),
                    labels=list(body.get("labels", [])),
                    user=token.login,
                    user_type=token.type,
                )
                return 201, self.issues[number], {}
        elif m := re.fullmatch(r"/issues/(\d+)", rest):
            number = int(m.group(1))
            if number not in self.issues:
                return 404, {"message": "Not Found"}, {}
            if method == "GET":
                return 200, self.issues[number], {}
            if method == "PATCH":
                if not isinstance(body, dict):
                    return 422, {"message": "invalid body"}, {}
                issue = self.issues[number]
                for key in ("title", "body", "state"):
                    if key in body:
                        issue[key] = body[key]
                if "labels" in body:
                    issue["labels"] = [{"name": name} for name in body["labels"]]
                return 200, issue, {}
        elif m := re.fullmatch(r"/commits/([0-9A-Za-z]+)/pulls", rest):
            if method == "GET":
                pulls = [
                    self.issues.get(n)
                    or {
                        "number": n,
                        "state": "open",
                        "merged_at": None,
                        "user": user_json("someone"),
                    }
                    for n in self.commit_pulls.get(m.group(1), [])
                ]
                return self._page(path, query, pulls)
        else:
            return 404, {"message": "Not Found"}, {}
        return 405, {"message": "Method Not Allowed"}, {}

    def _graphql(self, method: str, body: Any, token: TokenUser) -> tuple[int, Any, dict[str, str]]:
        """GraphQL's viewer, the one query fleet-sync sends; errors as GitHub gives them (200)."""
        if method != "POST":
            return 405, {"message": "Method Not Allowed"}, {}
        query = body.get("query") if isinstance(body, dict) else None
        if not isinstance(query, str) or re.sub(r"\s+", " ", query) != "query { viewer { login } }":
            return 200, {"errors": [{"message": "this fake answers only the viewer's login"}]}, {}
        if not token.viewer:
            error = {"type": "FORBIDDEN", "message": INTEGRATION}
            return 200, {"data": None, "errors": [error]}, {}
        return 200, {"data": {"viewer": {"login": token.login}}}, {}

    def _list_issues(self, query: dict[str, str]) -> list[JSON]:
        state = query.get("state", "open")
        wanted = [name for name in query.get("labels", "").split(",") if name]
        found = []
        for issue in self.issues.values():
            if state != "all" and issue["state"] != state:
                continue
            names = {label["name"] for label in issue["labels"]}
            if all(name in names for name in wanted):
                found.append(issue)
        return sorted(found, key=lambda issue: -int(issue["number"]))  # newest first, as GitHub

    def _page(
        self, path: str, query: dict[str, str], items: list[JSON]
    ) -> tuple[int, Any, dict[str, str]]:
        per_page = min(max(int(query.get("per_page", "30")), 1), 100)
        page = max(int(query.get("page", "1")), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []

        def link(p: int, rel: str) -> str:
            target = f"{self.link_base or self.url}{path}?{urlencode({**query, 'page': str(p)})}"
            return f'<{target}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return 200, chunk, {"Link": ", ".join(links)} if links else {}


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # one small response per request: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        gh = self.github
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with gh.lock:
            token = gh.tokens.get(self.headers.get("Authorization", "").removeprefix("Bearer "))
            fault = gh.take_fault(self.command, parts.path) if token else None
            if token is None:
                status, payload, headers = 401, {"message": "Bad credentials"}, {}
            elif fault:
                if fault.after_commit:
                    gh.handle(self.command, parts.path, query, body, token)
                status, payload, headers = fault.status, {"message": fault.message}, fault.headers
            else:
                status, payload, headers = gh.handle(self.command, parts.path, query, body, token)
            gh.calls.append(Call(self.command, parts.path, query, body, status))
        if fault and fault.raw is not None:
            self._send_raw(fault)
            return
        data = b"" if status == 204 else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_raw(self, fault: Fault) -> None:
        """The fault's bytes as the body; dripped, until the client leaves or the fake stops."""
        raw = fault.raw or b""
        gh = self.github
        self.close_connection = True
        self.send_response(fault.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in fault.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if fault.drip is None:
            self.wfile.write(raw)
            return
        try:
            for index in range(len(raw)):
                self.wfile.write(raw[index : index + 1])
                self.wfile.flush()
                if gh.closing.wait(fault.drip):
                    return
        except OSError:  # the client gave up: what the test waits for
            gh.gave_up.release()

    do_GET = _serve
    do_POST = _serve
    do_PATCH = _serve
    do_PUT = _serve
    do_DELETE = _serve


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    """A started FakeGitHub; ``fake_github.env()`` gives the variables that point at it."""
    with FakeGitHub() as fake:
        yield fake
