"""Each variable error names the variable actually read (issue 23, Deliver 8): the read key's
refusal names LITELLM_PROXY_READ_API_KEY, --api-key names --api-key, a target's empty URL
variable names that variable (and never falls back to LITELLM_PROXY_URL), a LITELLM_PROXY_URLS
without a URL names itself. A local server that refuses every key stands in for the proxy."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from .support.proxyharness import Run, fleet_sync

FLEET = {"version": 1, "fleet": "f", "models": {"m": {"served_model": "org/m", "hosts": []}}}


class Refusing:
    """An HTTP server on loopback answering 401 to everything, counting the requests."""

    def __init__(self) -> None:
        seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                body = b'{"error": {"message": "Authentication Error, invalid key"}}'
                self.send_response(401)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.seen = seen
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def refusing() -> Iterator[Refusing]:
    server = Refusing()
    yield server
    server.close()


def run(tmp_path: Path, doc: dict[str, Any], env: dict[str, str], *args: str) -> Run:
    """The command in a subprocess, its output as one text (stdout and stderr)."""
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    full = {"NO_COLOR": "1", "PATH": os.environ.get("PATH", ""), **env}
    done = fleet_sync([args[0], "-f", str(path), *args[1:]], full, tmp_path)
    return Run(done.code, done.out + done.err, done.err)


def test_the_read_keys_refusal_names_the_read_key(tmp_path: Path, refusing: Refusing) -> None:
    env = {
        "LITELLM_PROXY_URL": refusing.url,
        "LITELLM_PROXY_API_KEY": "sk-write",
        "LITELLM_PROXY_READ_API_KEY": "sk-read",
    }
    for command in ("plan", "drift"):
        done = run(tmp_path, FLEET, env, command)
        assert done.code == 1, done.out
        assert "(401); check LITELLM_PROXY_READ_API_KEY:" in done.out, done.out
    # drift --fix sends the write key: its refusal names that one.
    fixed = run(tmp_path, FLEET, env, "drift", "--fix")
    assert "(401); check LITELLM_PROXY_API_KEY:" in fixed.out, fixed.out
    given = run(tmp_path, FLEET, env, "plan", "--api-key", "sk-given")
    assert "(401); check --api-key:" in given.out, given.out
    applied = run(tmp_path, FLEET, {**env, "LITELLM_PROXY_READ_API_KEY": ""}, "apply")
    assert "(401); check LITELLM_PROXY_API_KEY:" in applied.out, applied.out


def test_an_empty_target_url_variable_names_it(tmp_path: Path, refusing: Refusing) -> None:
    doc = {
        **FLEET,
        "targets": {"staging": {"proxy_url": "os.environ/T_URL", "api_key": "os.environ/T_KEY"}},
    }
    # LITELLM_PROXY_URL is set: a target that holds no URL must not be sent there.
    env = {"LITELLM_PROXY_URL": refusing.url, "T_KEY": "sk-t"}
    for value in (",", " , ", ""):
        done = run(tmp_path, doc, {**env, "T_URL": value}, "plan")
        assert done.code == 1, done.out
        assert "set LITELLM_PROXY_URL" not in done.out
        if value.strip():
            assert "error: target staging: proxy_url: T_URL holds no URL" in done.out
        else:
            assert "error: target staging: proxy_url: the variable T_URL is empty" in done.out
    assert refusing.seen == []


def test_a_target_keys_refusal_names_its_variable(tmp_path: Path, refusing: Refusing) -> None:
    doc = {
        **FLEET,
        "targets": {
            "staging": {
                "proxy_url": "os.environ/T_URL",
                "api_key": "os.environ/T_KEY",
                "read_api_key": "os.environ/T_READ",
            }
        },
    }
    env = {"T_URL": refusing.url, "T_KEY": "sk-t", "T_READ": "sk-r"}
    done = run(tmp_path, doc, env, "plan")
    assert "check T_READ (target staging's read_api_key):" in done.out, done.out
    applied = run(tmp_path, doc, env, "apply")
    assert "check T_KEY (target staging's api_key):" in applied.out, applied.out


def test_a_proxy_urls_variable_without_a_url_names_itself(
    tmp_path: Path, refusing: Refusing
) -> None:
    env = {
        "LITELLM_PROXY_URLS": " , ",
        "LITELLM_PROXY_URL": refusing.url,
        "LITELLM_PROXY_API_KEY": "k",
    }
    done = run(tmp_path, FLEET, env, "plan")
    assert done.code == 1, done.out
    assert (
        "error: LITELLM_PROXY_URLS is set but holds no URL; set it to the proxy's URL or pass "
        "--proxy-url"
    ) in done.out
    assert refusing.seen == []
