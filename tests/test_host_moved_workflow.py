"""The host-moved workflows, this repository's own (.github/workflows, `uses: ./`) and the example
config repository's (`uses: fleet-sync-dev/fleet-sync@v1`): actionlint-clean, pinned, least
privilege (the read key only), and the dispatch payload reaching the action only as inputs, which
it hands to its shell only through env: (the classic Actions injection is a
`${{ github.event.client_payload.x }}` pasted into a run: script). The action's propose mode
runs as a runner runs it, with a stub fleet-sync that records what it was given."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sync.core.health import HealthState, HostHealth
from sync.core.healthgate import gate
from sync.core.planner import make_plan
from sync.core.render import Route, render
from sync.fleet.model import Defaults, Fleet, Host, Model
from sync.gitops.host_moved import automerge_refusal, branch_name

from .support.actionrunner import JobRun, Runner
from .test_workflows import (
    INSTALL,
    PINNED,
    SETS,
    USES,
    action_step,
    actionlint,
    load,
    only_job,
    path_of,
)

NAME = "host-moved.yml"
PAYLOAD = {"model": "qwen3-8b", "host": "runpod-a", "api_base": "http://10.0.0.9:8000/v1"}
CREDENTIALS = ("GITHUB_TOKEN", "LITELLM_PROXY_API_KEY", "LITELLM_PROXY_READ_API_KEY")
READ = ["GITHUB_TOKEN", "LITELLM_PROXY_READ_API_KEY"]  # what a step that reads holds


@pytest.mark.parametrize("which", SETS)
def test_actionlint_passes(which: str) -> None:
    """For `uses: ./` actionlint also checks the inputs given against action.yml."""
    run = actionlint(str(path_of(which, NAME)))
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("which", SETS)
def test_actions_are_pinned_like_the_others(which: str) -> None:
    text = path_of(which, NAME).read_text()
    uses = [m for line in text.splitlines() if (m := USES.match(line))]
    for match in uses:
        action, ref, comment = match.groups()
        if action == "fleet-sync-dev/fleet-sync":
            assert ref == "v1"
            continue
        assert (ref, comment) == PINNED[action]
    assert {m.group(1) for m in uses} >= {"actions/checkout"}
    assert "setup-python" not in text and "pip install" not in text  # the action installs


@pytest.mark.parametrize("which", SETS)
def test_triggers_permissions_and_concurrency(which: str) -> None:
    workflow = load(path_of(which, NAME))
    assert workflow["on"]["repository_dispatch"] == {"types": ["host-moved"]}
    inputs = workflow["on"]["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"model", "host", "api_base"}
    assert all(i["required"] is True and i["type"] == "string" for i in inputs.values())
    assert workflow["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "actions": "write",
    }
    job = only_job(workflow)
    assert job["concurrency"]["cancel-in-progress"] is False
    assert "client_payload.host || inputs.host" in job["concurrency"]["group"]
    checkout = job["steps"][0]
    assert checkout["with"]["persist-credentials"] is False  # commits go through the REST API


@pytest.mark.parametrize("which", SETS)
def test_payload_reaches_the_action_only_as_inputs(which: str) -> None:
    job = only_job(load(path_of(which, NAME)))
    assert not [s for s in job["steps"] if "run" in s]  # no script of the workflow's own
    assert job["steps"][1:] == [action_step(job, which)]
    step = job["steps"][1]
    given = step["with"]
    assert given["command"] == "propose"
    for name, field in (("model", "model"), ("host", "host"), ("api-base", "api_base")):
        assert given[name] == f"${{{{ github.event.client_payload.{field} || inputs.{field} }}}}"
    assert given["automerge"] == "${{ vars.FLEET_SYNC_AUTOMERGE_HOST_MOVES }}"


@pytest.mark.parametrize("which", SETS)
def test_the_job_holds_the_read_key_only(which: str) -> None:
    """propose only reads the proxy; the write key stays in the apply job's environment."""
    job = only_job(load(path_of(which, NAME)))
    with_secrets = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
    assert with_secrets == [action_step(job, which)]
    env = with_secrets[0]["env"]
    assert set(env) - {"LITELLM_PROXY_URLS"} == {"LITELLM_PROXY_URL", "LITELLM_PROXY_READ_API_KEY"}
    assert "LITELLM_PROXY_API_KEY" not in path_of(which, NAME).read_text()
    assert "environment" not in job


# ------------------------------------------------------- the action's propose mode, stubbed

# The installed virtualenv's Python, standing in: `-I -m sync ARGS` (fleet-sync) records ARGS;
# anything else (the action's outputs script) runs on the real Python.
STUB = """#!{python}
import json, os, sys
if sys.argv[1:4] != ["-I", "-m", "sync"]:
    os.execv({python!r}, [{python!r}, *sys.argv[1:]])
argv = sys.argv[4:]
keys = sorted(k for k in {credentials!r} if os.environ.get(k))
with open({calls!r}, "a", encoding="utf-8") as out:
    out.write(json.dumps({{"argv": argv, "keys": keys}}) + "\\n")
sys.exit({code} if argv[:1] == ["propose"] else 0)
"""


def run_propose(
    tmp_path: Path,
    which: str,
    contexts: dict[str, str],
    *,
    code: int = 0,
    write_key: bool = False,
) -> tuple[JobRun, list[dict[str, Any]]]:
    """The workflow's job with a stub for the venv's Python; what each fleet-sync call was
    given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.jsonl"
    calls.touch()
    stub = bin_dir / "python"
    stub.write_text(
        STUB.format(python=sys.executable, credentials=CREDENTIALS, calls=str(calls), code=code)
    )
    stub.chmod(0o755)
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "python").symlink_to(sys.executable)
    workflow = load(path_of(which, NAME))
    if write_key:
        action_step(only_job(workflow), which)["env"]["LITELLM_PROXY_API_KEY"] = "w"
    path = tmp_path / "workflow.yml"
    path.write_text(yaml.safe_dump({**workflow, "on": "repository_dispatch"}))
    runner = Runner(
        workspace=tmp_path,
        temp=tmp_path,
        env={
            "PATH": f"{tmp_path / 'python'}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "GITHUB_RUN_ATTEMPT": "1",
        },
        contexts={
            "github.token": "t",
            "secrets.LITELLM_PROXY_URL": "http://127.0.0.1:9",
            "secrets.LITELLM_PROXY_READ_API_KEY": "r",
            "secrets.LITELLM_PROXY_API_KEY": "w",
            **contexts,
        },
        reuse={INSTALL: {"python": str(stub)}},  # the stub stands in for the installed venv
    )
    job = runner.run_job(path)
    return job, [json.loads(line) for line in calls.read_text().splitlines()]


def dispatched(payload: dict[str, str]) -> dict[str, str]:
    return {f"github.event.client_payload.{k}": v for k, v in payload.items()}


def expected_calls(payload: dict[str, str], *flags: str) -> list[dict[str, Any]]:
    names = ["--", payload["model"], payload["host"]]
    return [
        {"argv": ["validate", "--format", "github", "fleet.yaml"], "keys": READ},
        {  # set-host edits the checkout: no key at all
            "argv": ["set-host", "-f", "fleet.yaml", "--api-base", payload["api_base"], *names],
            "keys": [],
        },
        {  # propose reads the proxy with the read key and writes to GitHub
            "argv": ["propose", "--probe", *flags, "-f", "fleet.yaml", *names],
            "keys": READ,
        },
    ]


@pytest.mark.parametrize("which", SETS)
def test_a_dispatch_runs_set_host_then_propose_with_the_read_key(
    tmp_path: Path, which: str
) -> None:
    job, calls = run_propose(tmp_path, which, dispatched(PAYLOAD))
    assert job.success, job.stderr
    assert calls == expected_calls(PAYLOAD)
    assert job.outputs["result"] == "proposed" and job.outputs["exit-code"] == "0"


def test_workflow_dispatch_inputs_and_the_automerge_variable(tmp_path: Path) -> None:
    contexts = {f"inputs.{k}": v for k, v in PAYLOAD.items()}
    contexts["vars.FLEET_SYNC_AUTOMERGE_HOST_MOVES"] = "true"
    job, calls = run_propose(tmp_path, "example", contexts)
    assert job.success, job.stderr
    assert calls == expected_calls(PAYLOAD, "--automerge")


def test_hostile_payload_values_are_arguments_never_shell(tmp_path: Path) -> None:
    """Whatever the payload holds reaches fleet-sync as one argument each, after `--` (where
    set-host refuses it: tests/test_host_moved_live.py); the shell never runs any of it."""
    pwned = tmp_path / "pwned"
    hostile = {
        "model": f"$(touch {pwned})",
        "host": f'a"; touch {pwned}; echo "',
        "api_base": f"http://x/`touch {pwned}`${{{{ github.token }}}}",
    }
    _, calls = run_propose(tmp_path, "project", dispatched(hostile))
    assert calls == expected_calls(hostile)
    assert not pwned.exists()


def test_a_job_holding_the_write_key_is_refused_before_anything_runs(tmp_path: Path) -> None:
    job, calls = run_propose(tmp_path, "example", dispatched(PAYLOAD), write_key=True)
    assert not job.success and calls == []
    assert "propose only reads the proxy" in job.stdout
    assert job.outputs["result"] == "error"


@pytest.mark.parametrize("missing", ["model", "host", "api_base"])
def test_a_payload_without_a_field_is_refused(tmp_path: Path, missing: str) -> None:
    payload = {k: v for k, v in PAYLOAD.items() if k != missing}
    job, calls = run_propose(tmp_path, "project", dispatched(payload))
    assert not job.success and calls == []
    assert "the inputs model, host and api-base" in job.stdout


def test_a_failed_propose_fails_the_job(tmp_path: Path) -> None:
    job, calls = run_propose(tmp_path, "project", dispatched(PAYLOAD), code=1)
    assert not job.success and len(calls) == 3
    assert job.outputs["result"] == "error" and job.outputs["exit-code"] == "1"


def test_branch_names_are_readable_safe_and_distinct() -> None:
    assert branch_name("qwen3.8-27b", "runpod-a") == "fleet-sync/host-moved/qwen3.8-27b/runpod-a"
    odd = branch_name("org/model:v1", "a")
    assert re.fullmatch(r"fleet-sync/host-moved/org-model-v1-[0-9a-f]{8}/a", odd)
    assert branch_name("org/model:v1", "a") != branch_name("org-model-v1", "a")
    assert ".." not in branch_name("a..b", "c")
    assert not branch_name("m", "x.lock").endswith(".lock")


def test_automerge_needs_a_plan_that_only_moves_that_host() -> None:
    def fleet(a: str, rpm_b: int = 1) -> Fleet:
        hosts = (
            Host("a", a, True, None, None, {"rpm": 1}, {}),  # rpm: edited by hand below
            Host("b", "http://10.0.0.2:1/v1", True, None, None, {"rpm": rpm_b}, {}),
        )
        model = Model("m", "org/m", None, None, {}, {}, hosts)
        return Fleet("f", "tagged", Defaults("hosted_vllm", None, {}, {}), 30.0, (model,))

    def refusal(
        desired: Fleet,
        live: list[Route],
        unsafe: tuple[str, ...] = (),
        state: HealthState = "serves",
    ) -> str | None:
        plan = make_plan(desired, render(desired), live)
        health = [
            HostHealth(r.id, "m", r.host or "", str(r.api_base), "org/m", state)
            for r in render(desired)
        ]
        return automerge_refusal(gate(plan, health, False), unsafe, "m", "a")

    live = list(render(fleet("http://10.0.0.1:1/v1")))
    moved = fleet("http://10.0.0.9:1/v1")
    assert refusal(moved, live) is None
    unprobed = automerge_refusal(make_plan(moved, render(moved), live), (), "m", "a")
    assert "not probed" in str(unprobed)
    assert "does not serve the model" in str(refusal(moved, live, state="other_model"))
    assert "refused by the safety checks" in str(refusal(moved, live, ("prunes too much",)))
    without_a = [r for r in live if r.host != "a"]
    assert "is create, not one in-place update" in str(refusal(moved, without_a))
    assert "1 other route(s)" in str(refusal(fleet("http://10.0.0.9:1/v1", rpm_b=2), live))
    hand_edited = [
        Route(r.id, r.model_name, {**r.litellm_params, "rpm": 5}, r.model_info)
        if r.host == "a"
        else r
        for r in live
    ]
    assert "more than the address: litellm_params.rpm" in str(refusal(moved, hand_edited))
