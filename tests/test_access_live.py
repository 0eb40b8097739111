"""Least privilege and the audit trail, against the real LiteLLM (through the fault proxy, which
records every request): a read-only key made through the proxy's own key API plans and checks
drift, and apply with it stops before its first write; every write names fleet-sync and the
commit in LiteLLM's `litellm-changed-by` header."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sync import __version__
from sync.core.render import route_id

from .support.faultproxy import Fault, FaultProxy
from .support.keys import key_for_role, read_only_key
from .support.proxyharness import Proxy, fleet_sync, write_fleet

OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"
READ_ONLY = "this key can read but not write routes"


@pytest.fixture
def recorded(proxy: Proxy) -> Iterator[FaultProxy]:
    with FaultProxy(proxy.url) as fp:
        yield fp


def env_with(proxy: Proxy, fp: FaultProxy, **keys: str) -> dict[str, str]:
    """The proxy through the recorder; only the keys given (no master key unless asked)."""
    env = {k: v for k, v in proxy.env().items() if k != "LITELLM_PROXY_API_KEY"}
    env.update(LITELLM_PROXY_URL=fp.url, LITELLM_PROXY_URLS=fp.url, **keys)
    return env


def test_read_only_key_plans_and_checks_drift_but_never_writes(
    proxy: Proxy, recorded: FaultProxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    reader = read_only_key(proxy)
    read_env = env_with(proxy, recorded, LITELLM_PROXY_READ_API_KEY=reader)

    for command in (["plan", "--detailed-exitcode"], ["drift"]):
        run = fleet_sync([*command, "-f", str(fleet)], read_env)
        assert run.code == 0, run.err
        assert "No changes" in run.out

    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": NEW}}})  # host a moved
    for command in (["plan", "--detailed-exitcode"], ["drift"]):
        run = fleet_sync([*command, "-f", str(fleet)], read_env)
        assert run.code == 2, run.err
        assert NEW in run.out

    # apply takes only LITELLM_PROXY_API_KEY: with the read key there, it stops before writing.
    run = fleet_sync(
        ["apply", "-f", str(fleet)], env_with(proxy, recorded, LITELLM_PROXY_API_KEY=reader)
    )
    assert run.code == 1
    assert f"error: {READ_ONLY} (its user role is proxy_admin_viewer)" in run.err
    assert "nothing was written" in run.err and "LITELLM_PROXY_API_KEY" in run.err
    assert reader not in run.out + run.err
    assert [r for r in recorded.log if r.is_write] == []  # not one write was sent
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == OLD

    # drift --fix writes: it also stops, and the read key alone never reaches a write (it
    # writes with LITELLM_PROXY_API_KEY or --api-key only, and says so before any request).
    run = fleet_sync(
        ["drift", "--fix", "-f", str(fleet)],
        env_with(proxy, recorded, LITELLM_PROXY_READ_API_KEY=reader),
    )
    assert run.code == 1 and "no write key given: drift --fix writes with" in run.err
    # Given as --api-key, the read key is refused by its role before any write.
    run = fleet_sync(["drift", "--fix", "-f", str(fleet), "--api-key", reader],
                     env_with(proxy, recorded))  # fmt: skip
    assert run.code == 1 and READ_ONLY in run.err
    assert [r for r in recorded.log if r.is_write] == []


def test_a_refused_write_says_the_key_cannot_write(
    proxy: Proxy, recorded: FaultProxy, tmp_path: Path, fleet_name: str
) -> None:
    """When the proxy will not say the key's role, the first write's 403 says it instead, and
    apply stops there (exit 1) with the route unchanged."""
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": NEW}}})
    recorded.add_rule("GET", "/key/info", Fault.status(404), times=None)
    run = fleet_sync(
        ["apply", "-f", str(fleet)],
        env_with(proxy, recorded, LITELLM_PROXY_API_KEY=read_only_key(proxy)),
    )
    assert run.code == 1
    assert f"{READ_ONLY}: the proxy at" in run.err and "answered 403 to PATCH" in run.err
    writes = [r for r in recorded.log if r.is_write]
    assert writes and all(r.upstream_status == 403 for r in writes)
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == OLD


def test_every_write_names_fleet_sync_and_the_commit(
    proxy: Proxy, recorded: FaultProxy, tmp_path: Path, fleet_name: str
) -> None:
    """With the write key the README recommends: a proxy_admin user's key, not the master key."""
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    sha = "4f2a9c0d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"
    env = env_with(
        proxy,
        recorded,
        LITELLM_PROXY_API_KEY=key_for_role(proxy, "proxy_admin"),
        GITHUB_REPOSITORY="acme/fleet",
        GITHUB_SHA=sha,
    )
    assert fleet_sync(["apply", "-f", str(fleet)], env).code == 0  # create
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": NEW, "b": OLD}}})
    assert fleet_sync(["apply", "-f", str(fleet)], env).code == 0  # update + create
    write_fleet(fleet, fleet_name, {model: {"hosts": {"b": OLD}}})
    assert fleet_sync(["apply", "-f", str(fleet)], env).code == 0  # delete
    writes = [r for r in recorded.log if r.is_write]
    assert {(r.method, r.path.rsplit("/", 1)[-1]) for r in writes} == {
        ("POST", "new"),
        ("PATCH", "update"),
        ("POST", "delete"),
    }
    expected = f"fleet-sync/{__version__} acme/fleet@{sha}"
    assert {r.headers.get("litellm-changed-by") for r in writes} == {expected}
    reads = [r for r in recorded.log if not r.is_write]
    assert reads and not any("litellm-changed-by" in r.headers for r in reads)
