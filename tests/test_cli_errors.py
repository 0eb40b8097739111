"""Bad input and outages (issue 3): exit 1, one clear sentence, nothing written, no traceback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support.faultproxy import FaultProxy
from .support.proxyharness import (
    Proxy,
    fleet_sync,
    free_port,
    harness_version,
    without_database,
    write_fleet,
)

OLD = "http://216.243.220.245:16643/v1"
pytestmark = pytest.mark.litellm_matrix


@pytest.fixture(scope="module")
def proxy_without_database(
    proxy: Proxy, litellm_version: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A real LiteLLM (of the version under test) started without DATABASE_URL: it lists no
    routes and cannot write."""
    version = harness_version(litellm_version)
    with without_database(version, proxy.api_key, tmp_path_factory.mktemp("nodb")) as url:
        yield url


def test_invalid_fleet_makes_no_api_call(proxy: Proxy, tmp_path: Path) -> None:
    bad = tmp_path / "fleet.yaml"
    bad.write_text("version: 1\nfleet: x\nmodels: {m: {served_model: s, hosts: [{name: a}]}}\n")
    with FaultProxy(proxy.url) as fp:
        env = proxy.env()
        env.update(LITELLM_PROXY_URL=fp.url, LITELLM_PROXY_URLS=fp.url)
        for command in ("plan", "apply", "drift"):
            run = fleet_sync([command, "-f", str(bad)], env)
            assert run.code == 1
            assert "missing required key 'api_base'" in run.err
            assert "nothing was sent to the proxy" in run.err
        assert fp.log == []


def test_unreachable_proxy_is_one_sentence(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", "f", {"m": {"hosts": {"a": OLD}}})
    env = {**os.environ, "LITELLM_PROXY_API_KEY": "sk-x", "NO_COLOR": "1"}
    env.pop("LITELLM_PROXY_URLS", None)
    port = free_port()  # nothing listens there
    run = fleet_sync(["apply", "-f", str(fleet), "--proxy-url", f"http://127.0.0.1:{port}"], env)
    assert run.code == 1
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: proxy unreachable"), run.err


def test_wrong_key_is_refused_clearly(proxy: Proxy, tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", "f", {"m": {"hosts": {"a": OLD}}})
    env = proxy.env()
    env["LITELLM_PROXY_API_KEY"] = "sk-wrong-key-0000"
    run = fleet_sync(["apply", "-f", str(fleet)], env)
    assert run.code == 1
    assert "refused the admin key (401)" in run.err and "LITELLM_PROXY_API_KEY" in run.err
    assert "sk-wrong-key-0000" not in run.err + run.out


def test_proxy_without_database_is_refused(
    proxy_without_database: str, proxy: Proxy, tmp_path: Path
) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", "f", {"m": {"hosts": {"a": OLD}}})
    env = proxy.env()
    env.update(LITELLM_PROXY_URL=proxy_without_database, LITELLM_PROXY_URLS=proxy_without_database)
    run = fleet_sync(["apply", "-f", str(fleet)], env)
    assert run.code == 1
    assert "has no database" in run.err and "DATABASE_URL" in run.err
    assert "+ create" not in run.out  # no plan is made from a listing that cannot be true


def test_usage_errors_exit_1_not_2(tmp_path: Path) -> None:
    run = fleet_sync(["plan", "--no-such-flag"], dict(os.environ))
    assert run.code == 1 and "No such option" in run.err


def test_import_into_a_missing_directory_is_one_sentence_before_any_read(tmp_path: Path) -> None:
    """-o into a directory that is not there: said at once, nothing read (the address below
    refuses connections, so reaching it would be a different error)."""
    env = {**os.environ, "LITELLM_PROXY_URL": "http://127.0.0.1:9", "LITELLM_PROXY_API_KEY": "sk-x"}
    out = tmp_path / "missing" / "fleet.yaml"
    run = fleet_sync(["import", "-o", str(out)], env)
    assert run.code == 1
    assert (
        run.err.strip()
        == f"error: {out}: the directory {out.parent} does not exist; nothing was read"
    )
