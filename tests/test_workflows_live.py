"""Each workflow's own `run:` scripts, executed verbatim under bash with the environment GitHub
Actions would give them (event payload file, GITHUB_* variables, the step's env with secrets
filled in), against the real LiteLLM and the fake GitHub."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import yaml

from sync.render import route_id

from .fake_github import FakeGitHub
from .proxyharness import REPO, Proxy, write_fleet

OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"


def fleet_sync_steps(workflow: str) -> list[dict[str, Any]]:
    doc = yaml.safe_load((REPO / ".github" / "workflows" / workflow).read_text(encoding="utf-8"))
    (job,) = doc["jobs"].values()
    return [s for s in job["steps"] if "fleet-sync " in str(s.get("run", ""))]


def run_step(step: dict[str, Any], values: dict[str, str], env: dict[str, str], cwd: Path) -> int:
    """Fill `${{ … }}` from values (as GitHub would), then run the script with bash -e."""

    def fill(text: str) -> str:
        return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: values.get(m.group(1), ""), text)

    step_env = {k: fill(str(v)) for k, v in (step.get("env") or {}).items()}
    done = subprocess.run(
        ["bash", "-e", "-c", fill(step["run"])],
        env={**env, **step_env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode


def github_env(
    proxy: Proxy, github: FakeGitHub, tmp: Path, event: dict[str, Any], sha: str
) -> tuple[dict[str, str], dict[str, str]]:
    (tmp / "event.json").write_text(json.dumps(event), encoding="utf-8")
    (tmp / "summary.md").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM_PROXY_", "GITHUB_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # fleet-sync
    env.update(
        github.env(
            GITHUB_EVENT_PATH=str(tmp / "event.json"),
            GITHUB_SHA=sha,
            GITHUB_STEP_SUMMARY=str(tmp / "summary.md"),
        ),
        NO_COLOR="1",
    )
    env.pop("GITHUB_TOKEN")  # workflows pass it only to the steps that need it
    values = {
        "secrets.LITELLM_PROXY_URL": proxy.url,
        "secrets.LITELLM_PROXY_API_KEY": proxy.api_key,
        "github.token": github.token,
    }
    return env, values


def test_plan_apply_drift_workflows_run_as_on_github(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    work = Path(repo.working_tree_dir or "")
    write_fleet(work / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    repo.index.add(["fleet.yaml"])
    base = repo.index.commit("base").hexsha
    write_fleet(work / "fleet.yaml", fleet_name, {model: {"hosts": {"a": NEW}}})
    repo.index.add(["fleet.yaml"])
    head = repo.index.commit("move host a").hexsha

    # pull_request: validate, then the plan comment (exit 2 = changes is not a failure).
    pr = fake_github.add_pull_request(21)
    event = {"pull_request": {"number": pr, "base": {"sha": base}, "head": {"sha": head}}}
    env, values = github_env(proxy, fake_github, tmp_path, event, head)
    for step in fleet_sync_steps("plan.yml"):
        assert run_step(step, values, env, work) == 0, step["name"]
    (comment,) = fake_github.comments_on(pr)
    assert "fleet-sync:plan" in comment["body"] and "This PR changes (1)" in comment["body"]

    # A fork's pull request gets no secrets: validated, plan skipped, the summary says why.
    fork_values = {k: v for k, v in values.items() if not k.startswith("secrets.")}
    for step in fleet_sync_steps("plan.yml"):
        assert run_step(step, fork_values, env, work) == 0
    assert "needs to run the plan" in (tmp_path / "summary.md").read_text(encoding="utf-8")

    # push to main: apply, result on the merged PR.
    fake_github.set_commit_pulls(head, [pr])
    for step in fleet_sync_steps("apply.yml"):
        assert run_step(step, values, env, work) == 0, step["name"]
    assert any("fleet-sync:apply" in c["body"] for c in fake_github.comments_on(pr))
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == NEW

    # schedule: clean, then drift fails the job and opens the issue.
    (drift_step,) = fleet_sync_steps("drift.yml")
    assert run_step(drift_step, values, env, work) == 0
    with proxy.http() as http:
        http.patch(
            f"/model/{route_id(fleet_name, model, 'a')}/update",
            json={"litellm_params": {"api_base": "http://10.0.0.98:8000/v1"}},
        )
    assert run_step(drift_step, values, env, work) == 2
    issues = [i for i in fake_github.issues.values() if "pull_request" not in i]
    assert len(issues) == 1 and issues[0]["state"] == "open"
