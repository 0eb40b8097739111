"""The two-target example config repository (examples/config-repo/two-targets: staging and prod
in one fleet.yaml) and the action's `target` input.

The workflows' shape is checked against the example's fleet.yaml: one job per command and
target, named `<command>-<target>`, whose action step selects that target; each job holds only
its own target's variables, the read key for plan and drift, the write key only for apply and
only inside the GitHub environment named like the target; apply's jobs `needs:` what the target
is `after:`; a target's apply and drift share one concurrency group. The action's shell runs
with a stub for fleet-sync (as in tests/test_workflows.py): the target reaches fleet-sync as
`--target=NAME` and nothing else does."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .support.actionrunner import JobRun, Runner
from .test_workflows import (
    EXAMPLE,
    INSTALL,
    PINNED_IN_ACTION,
    STUB,
    USES,
    action_step,
    actionlint,
    load,
)

TWO = EXAMPLE / "two-targets"
WORKFLOWS = TWO / ".github" / "workflows"
NAMES = ("plan.yml", "apply.yml", "drift.yml")
REFERENCE = "os.environ/"


def fleet_targets() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((TWO / "fleet.yaml").read_text(encoding="utf-8"))
    targets: dict[str, dict[str, Any]] = doc["targets"]
    return targets


def variable(reference: str) -> str:
    assert reference.startswith(REFERENCE)
    return reference.removeprefix(REFERENCE)


def jobs(name: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = load(WORKFLOWS / name)["jobs"]
    return found


# ---------------------------------------------------------------------------------- the shape


def test_actionlint_passes_on_the_two_target_workflows() -> None:
    run = actionlint(*(str(WORKFLOWS / name) for name in NAMES))
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_example_has_the_three_workflows_and_a_fleet_with_two_targets() -> None:
    assert sorted(p.name for p in WORKFLOWS.iterdir()) == sorted(NAMES)
    targets = fleet_targets()
    assert list(targets) == ["staging", "prod"]
    assert targets["prod"]["after"] == ["staging"]
    for spec in targets.values():  # references only, never a value
        assert {variable(spec[k]) for k in ("proxy_url", "api_key", "read_api_key")}


@pytest.mark.parametrize("name", NAMES)
def test_every_action_is_pinned(name: str) -> None:
    uses = [m for line in (WORKFLOWS / name).read_text().splitlines() if (m := USES.match(line))]
    assert uses
    for match in uses:
        action_name, ref, comment = match.groups()
        if action_name == "fleet-sync-dev/fleet-sync":
            assert ref == "v1"
            continue
        assert (ref, comment) == PINNED_IN_ACTION[action_name]


@pytest.mark.parametrize("name", NAMES)
def test_one_job_per_target_selecting_its_target(name: str) -> None:
    command = name.removesuffix(".yml")
    found = jobs(name)
    assert list(found) == [f"{command}-{target}" for target in fleet_targets()]
    for job_id, job in found.items():
        target = job_id.removeprefix(f"{command}-")
        checkout, step = job["steps"]
        assert checkout["uses"].startswith("actions/checkout@")
        assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
        assert step == action_step(job, "example")
        assert step["with"] == {"command": command, "target": target}


@pytest.mark.parametrize("name", NAMES)
def test_each_job_holds_only_its_own_targets_least_key(name: str) -> None:
    """plan and drift: the target's address and read key, no environment, no write key named
    anywhere in the file (a pull request can change the workflow it runs). apply: the address
    and the write key, inside the environment named like the target, which alone holds it."""
    workflow = load(WORKFLOWS / name)
    text = (WORKFLOWS / name).read_text(encoding="utf-8")
    command = name.removesuffix(".yml")
    targets = fleet_targets()
    assert "env" not in workflow
    for job_id, job in jobs(name).items():
        spec = targets[job_id.removeprefix(f"{command}-")]
        assert "env" not in job
        step = action_step(job, "example")
        assert [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)] == [step]
        key = spec["api_key"] if command == "apply" else spec["read_api_key"]
        expected = {variable(spec["proxy_url"]), variable(key)}
        assert set(step["env"]) == expected
        for var in step["env"]:
            assert step["env"][var] == f"${{{{ secrets.{var} }}}}"
        if command == "apply":
            assert job["environment"] == job_id.removeprefix("apply-")
        else:
            assert "environment" not in job
    if command != "apply":
        for spec in targets.values():
            assert variable(spec["api_key"]) not in text


def test_apply_follows_the_promotion_order_of_fleet_yaml() -> None:
    workflow = load(WORKFLOWS / "apply.yml")
    assert workflow["on"] == {
        "push": {"branches": ["main"], "paths": ["fleet.yaml"]},
        "workflow_dispatch": None,
    }
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    for target, spec in fleet_targets().items():
        job = jobs("apply.yml")[f"apply-{target}"]
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        assert needs == [f"apply-{before}" for before in spec.get("after", [])]
        assert job["concurrency"] == {
            "group": f"fleet-sync-proxy-{target}",
            "cancel-in-progress": False,
        }
    assert jobs("apply.yml")["apply-prod"]["needs"] == "apply-staging"


def test_plan_and_drift_run_per_target() -> None:
    plan = load(WORKFLOWS / "plan.yml")
    # labeled/unlabeled: a reviewed fleet-sync:force label re-runs the plan (issue 24)
    events = ["opened", "synchronize", "reopened", "labeled", "unlabeled"]
    assert plan["on"] == {"pull_request": {"types": events, "paths": ["fleet.yaml"]}}
    assert plan["permissions"] == {"contents": "read", "pull-requests": "write"}
    drift = load(WORKFLOWS / "drift.yml")
    assert set(drift["on"]) == {"schedule", "workflow_dispatch"}
    assert drift["permissions"] == {"contents": "read", "issues": "write"}
    for target in fleet_targets():
        assert jobs("plan.yml")[f"plan-{target}"]["concurrency"] == {
            "group": f"fleet-sync-plan-{target}-${{{{ github.event.pull_request.number }}}}",
            "cancel-in-progress": True,
        }
        # Never while an apply writes to the same proxy.
        assert jobs("drift.yml")[f"drift-{target}"]["concurrency"] == {
            "group": f"fleet-sync-proxy-{target}",
            "cancel-in-progress": False,
        }
        assert "needs" not in jobs("drift.yml")[f"drift-{target}"]


def test_the_example_fleet_validates() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sync", "validate", "-f", str(TWO / "fleet.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------------------------- the action


def run_target_job(
    tmp_path: Path,
    name: str,
    job_id: str,
    *,
    secrets: bool = True,
    inputs: dict[str, str] | None = None,
) -> tuple[JobRun, str]:
    """One job of the two-target example through the action, with a stub for fleet-sync."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    calls.touch()
    stub = bin_dir / "python"
    stub.write_text(STUB.format(python=sys.executable, calls=calls, code=0, validate=0))
    stub.chmod(0o755)
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "python").symlink_to(sys.executable)
    (tmp_path / "fleet.yaml").write_bytes((TWO / "fleet.yaml").read_bytes())
    workflow = load(WORKFLOWS / name)
    action_step(workflow["jobs"][job_id], "example")["with"].update(inputs or {})
    path = tmp_path / "workflow.yml"
    path.write_text(yaml.safe_dump({**workflow, "on": "push"}))
    values = {
        "STAGING_LITELLM_URL": "http://127.0.0.1:1",
        "PROD_LITELLM_URLS": "http://127.0.0.1:2,http://127.0.0.1:3",
        "STAGING_LITELLM_READ_KEY": "r1",
        "PROD_LITELLM_READ_KEY": "r2",
        "STAGING_LITELLM_API_KEY": "w1",
        "PROD_LITELLM_API_KEY": "w2",
    }
    runner = Runner(
        workspace=tmp_path,
        temp=tmp_path,
        env={
            "PATH": f"{tmp_path / 'python'}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "GITHUB_RUN_ATTEMPT": "1",
        },
        contexts={
            "github.token": "t",
            "github.event.pull_request.number": "1",
            **({f"secrets.{k}": v for k, v in values.items()} if secrets else {}),
        },
        reuse={INSTALL: {"python": str(stub)}},
    )
    return runner.run_job(path, job_id), calls.read_text()


@pytest.mark.parametrize(
    ("name", "job_id", "flags"),
    [
        ("plan.yml", "plan-staging", "plan --github-comment --detailed-exitcode"),
        ("plan.yml", "plan-prod", "plan --github-comment --detailed-exitcode"),
        ("apply.yml", "apply-prod", "apply --github-comment"),
        ("drift.yml", "drift-staging", "drift --github-issue"),
    ],
)
def test_the_target_input_reaches_fleet_sync_as_one_flag(
    tmp_path: Path, name: str, job_id: str, flags: str
) -> None:
    job, calls = run_target_job(tmp_path, name, job_id)
    target = job_id.split("-", 1)[1]
    assert job.success, job.stderr
    assert calls.splitlines() == [
        "validate --format github fleet.yaml",
        f"{flags} -f fleet.yaml --target={target}",
    ]
    (upload,) = job.uploads
    assert upload["name"] == f"fleet-sync-{name.removesuffix('.yml')}-{job_id}-1"


@pytest.mark.parametrize(
    ("job_id", "secret"),
    [("plan-staging", "STAGING_LITELLM_URL"), ("plan-prod", "PROD_LITELLM_URLS")],
)
def test_a_fork_pull_request_skips_the_targets_plan_naming_its_secret(
    tmp_path: Path, job_id: str, secret: str
) -> None:
    """The proxy of a target is the variable its proxy_url names, not LITELLM_PROXY_URL."""
    job, calls = run_target_job(tmp_path, "plan.yml", job_id, secrets=False)
    assert job.success, job.stderr
    assert calls.splitlines() == ["validate --format github fleet.yaml"]
    assert job.outputs["result"] == "skipped"
    assert f"cannot read the `{secret}` secret" in job.summary and "fork" in job.summary
    assert f"plan skipped: no {secret} secret" in job.stdout


def test_every_target_of_one_job_needs_every_targets_secret(tmp_path: Path) -> None:
    """A job without the target input plans every target: it needs each address."""
    job, calls = run_target_job(tmp_path, "plan.yml", "plan-prod", inputs={"target": ""})
    assert job.outputs["result"] == "skipped"
    assert "`STAGING_LITELLM_URL` secret" in job.summary  # the prod job holds prod's only
    assert calls.splitlines() == ["validate --format github fleet.yaml"]


@pytest.mark.parametrize(
    "bad",
    ["Prod", "prod staging", "prod;id", "$(id)", "prod\n--force", "--force prod", "é", "a_b"],
)
def test_a_target_input_that_is_not_one_name_stops_the_step(tmp_path: Path, bad: str) -> None:
    job, calls = run_target_job(tmp_path, "apply.yml", "apply-staging", inputs={"target": bad})
    assert not job.success
    assert calls == ""  # nothing ran, not even validate
    assert job.outputs["result"] == "error" and job.outputs["exit-code"] == "1"
    assert "the input 'target' must be one target name" in job.stdout


def test_a_name_that_looks_like_a_flag_stays_the_targets_value(tmp_path: Path) -> None:
    job, calls = run_target_job(tmp_path, "apply.yml", "apply-staging", inputs={"target": "--help"})
    assert calls.splitlines()[1] == "apply --github-comment -f fleet.yaml --target=--help"
    assert job.success, job.stderr


def test_propose_takes_no_target(tmp_path: Path) -> None:
    job, calls = run_target_job(
        tmp_path,
        "plan.yml",
        "plan-staging",
        inputs={"command": "propose", "model": "m", "host": "h", "api-base": "http://x:1/v1"},
    )
    assert not job.success and calls == ""
    assert "the input 'target' is for plan, apply and drift, not propose" in job.stdout


def missing_secrets() -> Any:
    """action/missing_secrets.py, which the action runs as a script."""
    path = Path(__file__).resolve().parent.parent / "action" / "missing_secrets.py"
    spec = importlib.util.spec_from_file_location("missing_secrets", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("doc", "target", "environ", "missing"),
    [
        ({"fleet": "f"}, "", {}, ["LITELLM_PROXY_URL"]),
        ({"fleet": "f"}, "", {"LITELLM_PROXY_URLS": "http://a,http://b"}, []),
        (None, "", {}, ["LITELLM_PROXY_URL"]),  # unreadable: as before targets
        ({"targets": {"s": {"proxy_url": "os.environ/S_URL"}}}, "s", {}, ["S_URL"]),
        ({"targets": {"s": {"proxy_url": "os.environ/S_URL"}}}, "s", {"S_URL": "x"}, []),
        ({"targets": {"s": {"proxy_url": "os.environ/S_URL"}}}, "t", {}, []),  # fleet-sync says
        (
            {"targets": {"p": {"proxy_url": ["os.environ/P1", "os.environ/P2"]}}},
            "p",
            {"P1": "x"},
            ["P2"],
        ),
        (  # an address written out: the key the plan reads with tells
            {"targets": {"s": {"proxy_url": "http://10.0.0.1:4000", "api_key": "os.environ/W"}}},
            "s",
            {},
            ["W"],
        ),
        (
            {
                "targets": {
                    "s": {
                        "proxy_url": "http://10.0.0.1:4000",
                        "api_key": "os.environ/W",
                        "read_api_key": "os.environ/R",
                    }
                }
            },
            "s",
            {"W": "x"},
            ["R"],
        ),
        (  # GitHub's own variables are never a proxy secret: a fork naming one is skipped
            {
                "targets": {
                    "s": {
                        "proxy_url": "http://10.0.0.1:4000",
                        "read_api_key": "os.environ/GITHUB_TOKEN",
                    }
                }
            },
            "s",
            {"GITHUB_TOKEN": "ghs_readonly"},
            ["GITHUB_TOKEN"],
        ),
        (
            {"targets": {"s": {"proxy_url": "os.environ/runner_temp"}}},
            "s",
            {"runner_temp": "/tmp"},
            ["runner_temp"],
        ),
        (  # a name that is no variable name never reaches the log or the summary
            {"targets": {"s": {"proxy_url": "os.environ/A`B\n::error::x"}}},
            "s",
            {},
            [],
        ),
    ],
)
def test_the_secrets_a_plan_job_lacks(
    tmp_path: Path, doc: Any, target: str, environ: dict[str, str], missing: list[str]
) -> None:
    path = tmp_path / "fleet.yaml"
    if doc is not None:
        path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert missing_secrets().missing(target, [str(path)], environ) == missing
