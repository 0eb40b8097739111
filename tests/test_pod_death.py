"""The proxy fleet-sync writes to dies halfway through an apply (its process is killed): the run
exits 1 or 4 saying what was done and what was not, and apply again (through the pod that is
left) converges. Its own two-pod instance, since a pod is killed for real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.core.render import route_id

from .support.proxyharness import (
    HARNESS,
    Proxy,
    crashed,
    fleet_sync,
    harness_home,
    harness_version,
    start,
    stop,
    write_fleet,
)


@pytest.fixture
def doomed(litellm_version: str) -> Iterator[Proxy]:
    if not (HARNESS / "start").exists():
        pytest.skip(f"killing a pod needs the local harness ({HARNESS}/start)")
    started = start(
        f"fleet-sync-doomed-{os.getpid()}",
        2,
        {"PROXY_CONFIG_RELOAD_INTERVAL_SECONDS": "3"},
        harness_version(litellm_version),
    )
    try:
        yield started
    finally:
        stop(started)


def kill_pod(proxy: Proxy, pod: int) -> None:
    assert proxy.version is not None
    rundir = harness_home(proxy.version) / "run" / str(proxy.name)
    pid = int((rundir / f"proxy-{pod}.pid").read_text().split()[0])
    os.killpg(pid, signal.SIGKILL)


def test_pod_dies_halfway_then_apply_again_converges(
    doomed: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    hosts = {f"h{i:02}": f"http://216.243.220.245:{21000 + i}/v1" for i in range(40)}
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": hosts}})
    first, second = doomed.urls
    env = doomed.env()
    apply = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sync",
            "apply",
            "-f",
            str(fleet),
            "--concurrency",
            "1",
            "--timeout",
            "3",
            "--confirm-timeout",
            "5",
            "--proxy-url",
            first,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    # Let a few creates land on the pod written to (it lists them at once; the other pod only
    # after its next reload, by which time a fast apply has finished), then that pod dies.
    while time.monotonic() < deadline:
        if len(doomed.ids(model, first)) >= 5:
            break
        time.sleep(0.2)
    kill_pod(doomed, 1)
    out, err = apply.communicate(timeout=240)
    assert apply.returncode in (1, 4), out + err
    assert not crashed(err)
    # Written before the death: unconfirmed (no pod left to read them back); after: failed.
    assert "unconfirmed" in out and "failed" in out and "Connection refused" in out, out
    landed = doomed.ids(model, second)
    assert 0 < len(landed) < len(hosts)

    again = fleet_sync(["apply", "-f", str(fleet), "--proxy-url", second], env)
    assert again.code == 0, again.out + again.err
    assert doomed.ids(model, second) == sorted(route_id(fleet_name, model, h) for h in hosts)
