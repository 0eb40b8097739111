"""The action runs its fleet files as one job (outside attack on main, F3).

One call of validate gets every fleet file, on every command, before anything else (a pull
request's plan too, with or without the proxy secrets): a host of one file naming a target
variable of another fails the check. Every command then learns the job's files
(FLEET_SYNC_FLEET_FILES), so the probe of one file keeps the others' target variables too
(tests/test_job_fleet_files.py proves the probe side). The action's shell runs as a runner runs
it (tests/support/actionrunner.py), with a stub for the installed virtualenv's Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_job_fleet_files import files
from .test_workflows import STUB, run_action

# The stub, but validate is the real one (this checkout's fleet-sync, isolated as the action
# runs it): the annotations are what a pull request shows.
REAL_VALIDATE = STUB.replace(
    '[ "$1" = validate ] && exit {validate}',
    '[ "$1" = validate ] && exec "{python}" -I -m sync "$@"',
)
FLAGS = {
    "plan": "plan --github-comment --detailed-exitcode",
    "apply": "apply --github-comment",
    "drift": "drift --github-issue",
}


@pytest.mark.parametrize("command", ["plan", "apply", "drift"])
def test_every_command_validates_the_files_together_and_learns_them(
    tmp_path: Path, command: str
) -> None:
    job, calls = run_action(tmp_path, command, 0, inputs={"fleet-files": "a.yaml\nb.yaml"})
    assert job.success, job.stderr
    assert calls.splitlines() == [
        "validate --format github a.yaml b.yaml",
        f"{FLAGS[command]} -f a.yaml",
        f"{FLAGS[command]} -f b.yaml",
    ]
    seen = (tmp_path / "calls.files").read_text().splitlines()
    assert seen == [
        "validate: a.yaml b.yaml",
        f"{command}: a.yaml b.yaml",
        f"{command}: a.yaml b.yaml",
    ]


@pytest.mark.parametrize("secrets", [True, False])
def test_a_pull_request_adding_a_host_with_another_files_target_key_fails(
    tmp_path: Path, secrets: bool
) -> None:
    """fleetA.yaml's staging target names STAGING_LITELLM_API_KEY; the pull request adds a host
    to fleetB.yaml with that key. Without the proxy secrets (a fork) the plan is skipped, but
    the check still fails on validate; with them, nothing is planned nor probed."""
    files(tmp_path, "http://127.0.0.1:9/v1")
    job, calls = run_action(
        tmp_path,
        "plan",
        2,
        secrets=secrets,
        inputs={"fleet-files": "fleetA.yaml fleetB.yaml"},
        stub_text=REAL_VALIDATE,
    )
    assert not job.success
    assert calls.splitlines() == ["validate --format github fleetA.yaml fleetB.yaml"]
    assert job.outputs["result"] == "error" and job.outputs["exit-code"] == "1"
    assert "::error file=fleetB.yaml,line=10,col=18" in job.stdout
    assert "in any fleet file of the job" in job.stdout
