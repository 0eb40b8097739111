"""The host-moved workflow as a file: actionlint-clean, pinned, least privilege, and the
dispatch payload reaching the shell only through env: (the classic Actions injection is a
`${{ github.event.client_payload.x }}` pasted into a run: script)."""

from __future__ import annotations

import re
import subprocess

from sync.fleet import Defaults, Fleet, Host, Model
from sync.health import HealthState, HostHealth
from sync.healthgate import gate
from sync.host_moved import automerge_refusal, branch_name
from sync.plan import make_plan
from sync.render import Route, render

from .test_workflows import PINNED, USES, WORKFLOWS, load, only_job, required_actionlint

NAME = "host-moved.yml"


def test_actionlint_passes() -> None:
    run = subprocess.run(
        [required_actionlint(), "-no-color", str(WORKFLOWS / NAME)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_actions_are_pinned_like_the_others() -> None:
    uses = [m for line in (WORKFLOWS / NAME).read_text().splitlines() if (m := USES.match(line))]
    assert {m.group(1) for m in uses} == set(PINNED)
    for match in uses:
        action, ref, comment = match.groups()
        assert (ref, comment) == PINNED[action]


def test_triggers_permissions_and_concurrency() -> None:
    workflow = load(NAME)
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
    checkout = job["steps"][0]
    assert checkout["with"]["persist-credentials"] is False  # commits go through the REST API


def test_payload_reaches_the_shell_only_through_env() -> None:
    job = only_job(load(NAME))
    scripts = [str(step.get("run", "")) for step in job["steps"]]
    assert not any("${{" in script for script in scripts)
    payload_steps = [s for s in job["steps"] if "client_payload" in str(s)]
    assert len(payload_steps) == 2
    for step in payload_steps:
        for name, value in step["env"].items():
            if "client_payload" in value:
                assert re.fullmatch(
                    r"\$\{\{ github\.event\.client_payload\.(\w+) \|\| inputs\.\1 \}\}", value
                ), name
        # Values come after `--`: a model named --help or -f/etc/passwd is a name, not an option.
        assert '-- "$MODEL" "$HOST"' in step["run"]


def test_only_one_step_sees_the_secrets() -> None:
    job = only_job(load(NAME))
    with_secrets = [s for s in job["steps"] if "secrets." in str(s.get("env", ""))]
    assert [s["name"] for s in with_secrets] == ["Open or update the pull request"]
    set_host = next(s for s in job["steps"] if "fleet-sync set-host" in str(s.get("run", "")))
    assert job["steps"].index(set_host) < job["steps"].index(with_secrets[0])


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
            Host("a", a, True, None, None, {}, {}),
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
