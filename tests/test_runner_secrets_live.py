"""No runner secret leaves for a host, as a user runs it (issue 23, deliver 4): `plan` and
`drift` under `health: probe`, against a real LiteLLM, with GITHUB_TOKEN and the proxy's
admin key LITELLM_PROXY_API_KEY in their environment, send neither to a host at a recorder on
127.0.0.1 — not when a host's api_key names them (validate refuses the fleet, nothing is
asked), and not when a host's own variable holds one of their values (the host is asked
without a key, and the plan says why)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .support.proxyharness import Proxy, fleet_sync, remove_fleet, write_fleet
from .support.upstream import Upstream

TOKEN = "ghs_runnerToken0123456789abcdefghijklm"


@pytest.fixture
def recorder() -> Iterator[Upstream]:
    up = Upstream("recorder", []).start()
    try:
        yield up
    finally:
        up.stop()


def runner_env(proxy: Proxy, **extra: str) -> dict[str, str]:
    # GITHUB_API_URL at a closed loopback port: nothing of this run may leave 127.0.0.1.
    return {
        **proxy.env(),
        "GITHUB_TOKEN": TOKEN,
        "GH_TOKEN": TOKEN,
        "GITHUB_API_URL": "http://127.0.0.1:9",
        **extra,
    }


def keyed_hosts(model: str, url: str, keys: dict[str, str]) -> dict[str, object]:
    """One host per key reference, all at the recorder (distinct paths: distinct addresses)."""
    origin = url.removesuffix("/v1")
    hosts = {
        name: {"name": name, "api_base": f"{origin}/{name}/v1", "api_key": ref}
        for name, ref in keys.items()
    }
    return {model: {"hosts": hosts}}


@pytest.mark.parametrize(
    "variable", ["GITHUB_TOKEN", "GH_TOKEN", "LITELLM_PROXY_API_KEY", "LITELLM_PROXY_URL"]
)
@pytest.mark.parametrize("command", ["plan", "drift"])
def test_a_host_naming_a_runner_variable_is_refused_before_any_request(
    proxy: Proxy, recorder: Upstream, tmp_path: Path, fleet_name: str, variable: str, command: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        keyed_hosts(model, recorder.url, {"h": f"os.environ/{variable}"}),
        health="probe",
    )
    run = fleet_sync([command, "-f", str(fleet)], runner_env(proxy))
    assert run.code == 1, run.out + run.err
    assert f"'os.environ/{variable}' names a variable the run holds" in run.out + run.err
    assert recorder.authorizations == []
    assert TOKEN not in run.out + run.err and proxy.api_key not in run.out + run.err


def test_a_runner_secret_under_a_hosts_own_name_is_never_sent(
    proxy: Proxy, recorder: Upstream, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        keyed_hosts(
            model,
            recorder.url,
            {"a": "os.environ/HOST_A_KEY", "b": "os.environ/HOST_B_KEY", "c": "os.environ/HOST_C"},
        ),
        health="probe",
    )
    own = "sk-host-c-own-key-0123456789abcdef"
    env = runner_env(proxy, HOST_A_KEY=TOKEN, HOST_B_KEY=proxy.api_key, HOST_C=own)
    try:
        for command in ("plan", "drift"):
            run = fleet_sync([command, "-f", str(fleet)], env)
            assert run.code in (0, 2), run.out + run.err
            out = run.out + run.err
            assert "key not sent: HOST_A_KEY holds the value of GH_TOKEN" in out
            assert "key not sent: HOST_B_KEY holds the value of LITELLM_PROXY_API_KEY" in out
            assert TOKEN not in out and proxy.api_key not in out and own not in out
        # Each host asked once per run; only the host's own key was ever sent.
        assert len(recorder.authorizations) == 6, recorder.authorizations
        sent = {a for a in recorder.authorizations if a is not None}
        assert sent == {f"Bearer {own}"}, recorder.authorizations
    finally:
        remove_fleet(proxy, fleet_name)


def test_another_fleet_files_target_key_is_never_sent(
    proxy: Proxy, recorder: Upstream, tmp_path: Path, fleet_name: str
) -> None:
    """Outside attack F3: the job runs fleetA.yaml (its staging target's key in
    STAGING_LITELLM_API_KEY) and fleetB.yaml, whose host names that variable; `plan -f
    fleetB.yaml` in that job (FLEET_SYNC_FLEET_FILES, as the action sets it) asks the host
    without it, and validate over both refuses fleetB.yaml before any request."""
    staging = "sk-staging-write-key-777"
    fleet_a = write_fleet(
        tmp_path / "fleetA.yaml",
        f"{fleet_name}-a",
        {f"{fleet_name}-a": {"hosts": {"a": "http://10.1.0.1:8000/v1"}}},
        targets={
            "staging": {
                "proxy_url": "os.environ/STAGING_URL",
                "api_key": "os.environ/STAGING_LITELLM_API_KEY",
            }
        },
    )
    model = f"{fleet_name}-m"
    fleet_b = write_fleet(
        tmp_path / "fleetB.yaml",
        fleet_name,
        keyed_hosts(model, recorder.url, {"h": "os.environ/STAGING_LITELLM_API_KEY"}),
        health="probe",
    )
    env = runner_env(
        proxy,
        STAGING_LITELLM_API_KEY=staging,
        FLEET_SYNC_FLEET_FILES=f"{fleet_a}\n{fleet_b}",
    )
    try:
        checked = fleet_sync(["validate", str(fleet_a), str(fleet_b)], env)
        assert checked.code == 1 and "in any fleet file of the job" in checked.out, checked.out
        run = fleet_sync(["plan", "-f", str(fleet_b)], env)
        assert run.code in (0, 2), run.out + run.err
        assert "key not sent: os.environ/STAGING_LITELLM_API_KEY names a variable" in run.out
        assert recorder.authorizations == [None]
        assert staging not in run.out + run.err
    finally:
        remove_fleet(proxy, fleet_name)
