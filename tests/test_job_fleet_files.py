"""No fleet file's target key goes to a host of another (outside attack on main, F3).

One job runs several fleet files (the action's `fleet-files`) and holds every target variable of
every one. fleetA.yaml's staging target names STAGING_LITELLM_API_KEY; fleetB.yaml, valid on its
own, gives a host `api_key: os.environ/STAGING_LITELLM_API_KEY` and probes its hosts. validate
over both refuses fleetB's host; the probe of fleetB alone, told the job's files
(FLEET_SYNC_FLEET_FILES, as the action tells every command), asks the host without the key.
The host is an upstream on 127.0.0.1 that records every Authorization header it gets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.core.keytrust import FLEET_ITSELF
from sync.fleet.model import load_fleet
from sync.live.probe import probe_fleet

from .support.upstream import Upstream
from .test_validate_corpus import cli_in_process

STAGING = "sk-staging-write-key-777"
HOST_KEY = "sk-host-own-key-0123456789abcdef"
ENV = {"STAGING_LITELLM_API_KEY": STAGING, "HOST_KEY": HOST_KEY, "STAGING_URL": "http://x"}

FLEET_A = """\
version: 1
fleet: fleet-a
targets:
  staging:
    proxy_url: os.environ/STAGING_URL
    api_key: os.environ/STAGING_LITELLM_API_KEY
models:
  m:
    served_model: org/m
    hosts:
      - name: a
        api_base: http://10.1.0.1:8000/v1
"""

FLEET_B = """\
version: 1
fleet: fleet-b
health: probe
models:
  m:
    served_model: org/m
    hosts:
      - name: recorder
        api_base: {api_base}
        api_key: os.environ/{variable}
"""


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream("host", ["org/m"]).start()
    try:
        yield up
    finally:
        up.stop()


def files(tmp: Path, api_base: str, variable: str = "STAGING_LITELLM_API_KEY") -> list[Path]:
    a, b = tmp / "fleetA.yaml", tmp / "fleetB.yaml"
    a.write_text(FLEET_A, encoding="utf-8")
    b.write_text(FLEET_B.format(api_base=api_base, variable=variable), encoding="utf-8")
    return [a, b]


def test_validate_over_the_job_refuses_another_files_target_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = files(tmp_path, "http://10.1.0.9:8000/v1")
    alone = cli_in_process(["validate", str(b)], capsys)
    assert alone.code == 0, alone.err  # alone, fleetB names no target of its own
    for order in ([a, b], [b, a]):
        run = cli_in_process(["validate", *map(str, order)], capsys)
        assert run.code == 1
        assert f"{a}: valid" in run.out and f"{b}: valid" not in run.out
        assert (
            f"{b}:10:18: models.m.hosts[0].api_key: 'os.environ/STAGING_LITELLM_API_KEY' names "
            "a variable the run holds for another purpose (a target's proxy_url, api_key or "
            "read_api_key, in any fleet file of the job)"
        ) in run.out
    own = files(tmp_path, "http://10.1.0.9:8000/v1", variable="HOST_KEY")
    assert cli_in_process(["validate", *map(str, own)], capsys).code == 0


def test_validate_reads_the_targets_of_a_file_that_is_itself_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = files(tmp_path, "http://10.1.0.9:8000/v1")
    a.write_text(FLEET_A.replace("version: 1", "version: 9"), encoding="utf-8")
    run = cli_in_process(["validate", str(a), str(b)], capsys)
    assert run.code == 1 and f"{b}: valid" not in run.out
    assert f"{b}:10:18: models.m.hosts[0].api_key" in run.out


def test_the_probe_keeps_the_other_files_target_key(upstream: Upstream, tmp_path: Path) -> None:
    a, b = files(tmp_path, upstream.url)
    fleet = load_fleet(b)  # valid alone: a base ref, a plan -f fleetB.yaml
    job = {**ENV, "FLEET_SYNC_FLEET_FILES": f"{a}\n{b}"}
    [health] = probe_fleet(fleet, FLEET_ITSELF, environ=job)
    assert health.state == "serves" and not health.key_sent
    assert health.key_note.startswith(
        "key not sent: os.environ/STAGING_LITELLM_API_KEY names a variable the run holds"
    )
    assert "in any fleet file of the job" in health.key_note
    assert upstream.authorizations == [None]


def test_the_probe_keeps_a_key_whose_value_is_another_files_target_key(
    upstream: Upstream, tmp_path: Path
) -> None:
    a, b = files(tmp_path, upstream.url, variable="HOST_KEY")
    job = {**ENV, "HOST_KEY": STAGING, "FLEET_SYNC_FLEET_FILES": f"{a} {b}"}
    [health] = probe_fleet(load_fleet(b), FLEET_ITSELF, environ=job)
    assert health.key_note == (
        "key not sent: HOST_KEY holds the value of STAGING_LITELLM_API_KEY, a variable the run "
        "holds for another purpose"
    )
    assert upstream.authorizations == [None]


def test_a_job_file_that_cannot_be_read_withholds_every_key(
    upstream: Upstream, tmp_path: Path
) -> None:
    _, b = files(tmp_path, upstream.url, variable="HOST_KEY")
    job = {**ENV, "FLEET_SYNC_FLEET_FILES": f"{tmp_path / 'gone.yaml'} {b}"}
    [health] = probe_fleet(load_fleet(b), FLEET_ITSELF, environ=job)
    assert not health.key_sent and "gone.yaml, a fleet file of this job" in health.key_note
    assert upstream.authorizations == [None]


def test_the_hosts_own_key_still_goes(upstream: Upstream, tmp_path: Path) -> None:
    a, b = files(tmp_path, upstream.url, variable="HOST_KEY")
    job = {**ENV, "FLEET_SYNC_FLEET_FILES": f"{a}\n{b}"}
    [health] = probe_fleet(load_fleet(b), FLEET_ITSELF, environ=job)
    assert health.key_sent and health.key_note == ""
    assert upstream.authorizations == [f"Bearer {HOST_KEY}"]
