"""What each LiteLLM version answers to the requests fleet-sync makes, errors above all: the
cases (shared by the live tests and the capture), and the capture that stores the real answers in
tests/cases/litellm/<version>.json for the unit tests of the error classification.

    .venv/bin/python -m tests.support.litellm_answers [VERSION ...]   # default: every matrix
    version

The capture starts its own harness instance per version (one at a time), a LiteLLM without a
database, and finally stops the instance's PostgreSQL under the running proxy (a real outage)."""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

from sync.litellm.releases import TESTED
from sync.live.client import ErrorKind

from .proxyharness import REPO, Proxy, harness_home, setup, start, stop, without_database

CASES_DIR = REPO / "tests" / "cases" / "litellm"
MISSING = "fleet-sync-no-such-id"
EXISTING = "fleet-sync-answers-a"  # a route the capture (or the live test) creates first
CONFIG_ROUTE = "cfg-static-1"  # the harness's config-file route (LITELLM_HARNESS_STATIC_MODEL=1)
Target = Literal["proxy", "no database", "outage"]
MAYBE, GONE, CLIENT = ErrorKind.MAYBE_COMMITTED, ErrorKind.NOT_FOUND, ErrorKind.CLIENT
# How fleet-sync must classify each error answer (answers below 400 are not errors). A mapping
# where versions differ: up to 1.108 a write's unexpected exception comes back as 400
# "Authentication Error, ..." (read back: it may have been written), 1.110 keeps the real error.
EXPECTED: dict[tuple[Target, str], ErrorKind | dict[str, ErrorKind]] = {
    ("proxy", "list with a wrong key"): ErrorKind.AUTH,
    ("proxy", "create with a wrong key"): ErrorKind.AUTH,
    ("proxy", "create without litellm_params"): MAYBE,  # a bare 500 after a write
    ("proxy", "create of an existing id"): MAYBE,  # read back, then update if it differs
    ("proxy", "update of a missing id"): GONE,
    ("proxy", "delete of a missing id"): GONE,
    ("proxy", "update of a config-file route"): CLIENT,
    ("proxy", "update removing model"): CLIENT,  # 1.110 refuses it (422); older ones merge
    ("no database", "create"): ErrorKind.NO_DATABASE,
    ("no database", "update"): ErrorKind.NO_DATABASE,
    ("no database", "delete"): ErrorKind.NO_DATABASE,
    ("outage", "readiness"): ErrorKind.NO_DATABASE,  # 503 {"db": "disconnected"}
    ("outage", "create"): MAYBE,
    ("outage", "update"): MAYBE,
    ("outage", "delete"): {"1.98.1": MAYBE, "1.108.7": MAYBE, "1.110.2": CLIENT},
}


def expected(target: Target, case: str, version: str) -> ErrorKind:
    kind = EXPECTED[(target, case)]
    return kind if isinstance(kind, ErrorKind) else kind[version]


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    body: Any = None
    write: bool = False
    wrong_key: bool = False
    target: Target = "proxy"

    @property
    def request(self) -> str:
        return f"{self.method} {self.path}"


def existing_route(route_id: str = EXISTING, model: str = "fleet-sync-answers") -> dict[str, Any]:
    return {
        "model_name": model,
        "litellm_params": {
            "model": "hosted_vllm/org/answers",
            "api_base": "http://216.243.220.245:16643/v1",
            "rpm": 5,
        },
        "model_info": {"id": route_id},
    }


def proxy_cases(existing: str = EXISTING) -> tuple[Case, ...]:
    """Answers a healthy proxy gives (`existing` names a route that exists)."""
    route = existing_route(existing)
    return (
        Case("readiness", "GET", "/health/readiness"),
        Case("readiness details", "GET", "/health/readiness/details"),
        Case("list with a wrong key", "GET", "/v2/model/info?page=1&size=1", wrong_key=True),
        Case("create with a wrong key", "POST", "/model/new", route, write=True, wrong_key=True),
        Case(
            "create without litellm_params",
            "POST",
            "/model/new",
            {"model_name": "fleet-sync-answers"},
            write=True,
        ),
        Case("create of an existing id", "POST", "/model/new", route, write=True),
        Case(
            "update of a missing id",
            "PATCH",
            f"/model/{MISSING}/update",
            {**existing_route(MISSING)},
            write=True,
        ),
        Case("delete of a missing id", "POST", "/model/delete", {"id": MISSING}, write=True),
        Case(
            "update of a config-file route",
            "PATCH",
            f"/model/{CONFIG_ROUTE}/update",
            {"litellm_params": {"rpm": 1}},
            write=True,
        ),
        Case(
            "update removing model",
            "PATCH",
            f"/model/{existing}/update",
            {"model_info": {"id": existing}, "litellm_params_to_remove": ["model"]},
            write=True,
        ),
        Case(
            "update removing rpm",
            "PATCH",
            f"/model/{existing}/update",
            {"model_info": {"id": existing}, "litellm_params_to_remove": ["rpm"]},
            write=True,
        ),
    )


def failure_cases(target: Target) -> tuple[Case, ...]:
    """Answers of a proxy without a database, or whose database went away."""
    route = existing_route("fleet-sync-answers-b")
    return (
        Case("readiness", "GET", "/health/readiness", target=target),
        Case("list", "GET", "/v2/model/info?page=1&size=1", target=target),
        Case("create", "POST", "/model/new", route, write=True, target=target),
        Case(
            "update",
            "PATCH",
            f"/model/{EXISTING}/update",
            {"model_info": {"id": EXISTING}, "litellm_params": {"rpm": 6}},
            write=True,
            target=target,
        ),
        Case("delete", "POST", "/model/delete", {"id": EXISTING}, write=True, target=target),
    )


def client(url: str) -> httpx.Client:
    # No connection reuse: after an unhandled error LiteLLM's server drops the connection, and
    # the next request sent on it would record a reset instead of its own answer.
    return httpx.Client(base_url=url, timeout=120, limits=httpx.Limits(max_keepalive_connections=0))


def send(http: httpx.Client, case: Case, api_key: str) -> httpx.Response:
    key = "sk-fleet-sync-wrong-key" if case.wrong_key else api_key
    return http.request(
        case.method,
        case.path,
        json=case.body,
        headers={"Authorization": f"Bearer {key}"},
    )


def body_of(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


# -- capture ------------------------------------------------------------------------------------


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """Secrets out, and what changes per run (ports, timestamps) made stable."""
    text = json.dumps(value)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<secret>")
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "<time>", text)
    return json.loads(text)


def record(http: httpx.Client, case: Case, api_key: str, secrets: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "target": case.target,
        "case": case.name,
        "request": case.request,
        "write": case.write,
    }
    try:
        response = send(http, case, api_key)
    except httpx.TransportError as exc:  # recorded: what fleet-sync would see
        return {**out, "status": None, "body": f"{type(exc).__name__}: {exc}"}
    return {**out, "status": response.status_code, "body": scrub(body_of(response), secrets)}


def stop_postgres(proxy: Proxy) -> None:
    """A real database outage: fast shutdown of the instance's PostgreSQL, the proxy running."""
    assert proxy.version and proxy.name
    rundir = harness_home(proxy.version) / "run" / proxy.name
    pgdir = Path((rundir / "pgdir.path").read_text().strip())
    pid = int((pgdir / "data" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"PostgreSQL (pid {pid}) did not stop")
        time.sleep(0.2)


def capture(version: str) -> dict[str, Any]:
    setup(version)
    proxy = start(
        f"fleet-sync-answers-{os.getpid()}", 1, {"LITELLM_HARNESS_STATIC_MODEL": "1"}, version
    )
    secrets = [proxy.api_key]
    answers: list[dict[str, Any]] = []
    try:
        with client(proxy.url) as http:
            setup_case = Case("setup", "POST", "/model/new", existing_route())
            send(http, setup_case, proxy.api_key).raise_for_status()
            answers += [record(http, c, proxy.api_key, secrets) for c in proxy_cases()]
        with (
            tempfile.TemporaryDirectory() as work,
            without_database(version, proxy.api_key, Path(work)) as url,
            client(url) as http,
        ):
            answers += [
                record(http, c, proxy.api_key, secrets) for c in failure_cases("no database")
            ]
        stop_postgres(proxy)
        with client(proxy.url) as http:
            answers += [record(http, c, proxy.api_key, secrets) for c in failure_cases("outage")]
    finally:
        stop(proxy)
    return {
        "litellm": version,
        "captured": datetime.date.today().isoformat(),
        "by": "python -m tests.support.litellm_answers",
        "answers": answers,
    }


def captured(version: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES_DIR / f"{version}.json").read_text(encoding="utf-8"))
    return data


def main(argv: list[str]) -> int:
    CASES_DIR.mkdir(parents=True, exist_ok=True)
    for version in argv or TESTED:
        started = time.monotonic()
        data = capture(version)
        path = CASES_DIR / f"{version}.json"
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"{path}: {len(data['answers'])} answers in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
