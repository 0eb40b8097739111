"""A fleet file that is no regular file of the checkout, and output that cannot be written
(outside attack c, F3 and F4): one line and exit 1, never a hang, an endless read or a
traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .support.proxyharness import fleet_sync

FLEET = "version: 1\nfleet: x\nmodels: {}\n"


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return {**base, **extra}


def test_a_link_to_dev_zero_is_refused_before_reading(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").symlink_to("/dev/zero")
    run = fleet_sync(["validate", "-f", str(tmp_path / "fleet.yaml")], env())
    assert run.code == 1
    assert "fleet.yaml:1:1: is not a regular file" in run.err + run.out


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fleet.yaml")
    run = fleet_sync(["validate", "-f", str(tmp_path / "fleet.yaml")], env())
    assert run.code == 1
    assert "is not a regular file" in run.err + run.out


def test_in_actions_a_link_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "runner"
    workspace.mkdir()
    outside.mkdir()
    (outside / "s2.json").write_text('{"version": 1, "fleet": "hunter2 password!", "models": 1}')
    (workspace / "fleet.yaml").symlink_to(outside / "s2.json")
    (workspace / "inside.yaml").write_text(FLEET)
    (workspace / "link.yaml").symlink_to(workspace / "inside.yaml")
    actions = env(GITHUB_WORKSPACE=str(workspace))
    run = fleet_sync(["validate", "-f", str(workspace / "fleet.yaml")], actions)
    assert run.code == 1
    assert "is a link to a file outside GITHUB_WORKSPACE" in run.err + run.out
    assert "hunter2" not in run.err + run.out
    # A link inside the checkout is followed; outside Actions a link anywhere is the user's.
    assert fleet_sync(["validate", "-f", str(workspace / "link.yaml")], actions).code == 0
    assert fleet_sync(["validate", "-f", str(workspace / "fleet.yaml")], env()).code == 1


def test_a_closed_stdout_is_no_traceback(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    python = f"{sys.executable} -m sync"
    for shell, code in (
        (f"{python} validate -f {fleet} >&-", 0),
        (f"{python} --version >&- 2>&-; echo $? >&2", 0),
        (f"{python} validate -f {tmp_path / 'missing.yaml'} >&-", 1),
    ):
        done = subprocess.run(
            ["bash", "-c", shell], capture_output=True, text=True, env=env(), check=False
        )
        assert "Traceback" not in done.stderr and "Exception" not in done.stderr, done.stderr
        if "echo" in shell:
            assert done.stderr.strip() == str(code)
        else:
            assert done.returncode == code, done.stderr


def test_a_full_disk_is_one_line_not_a_bug(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "sync", "validate", "-f", str(tmp_path / "fleet.yaml")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
            check=False,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr.strip() == "error: cannot write the output: No space left on device"
    out = fleet_sync(["render", "-f", str(tmp_path / "fleet.yaml"), "-o", "/dev/full"], env())
    assert out.code == 1
    assert "error: cannot write the output: No space left on device" in out.err
