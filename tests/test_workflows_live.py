"""The GitOps loop as GitHub runs it. Each workflow's job, this repository's own (`uses: ./`) and
the example config repository's (`uses: fleet-sync-dev/fleet-sync@v1`), goes through the
action's composite steps under bash as tests/support/actionrunner.py runs them: fleet-sync installed
from the action's own checkout into a fresh virtualenv (not editable, not the caller's tree), the
real LiteLLM, the fake GitHub. The plan and drift jobs get only a read-only key made through the
proxy's key API; the write key is an environment secret only the apply job can read."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from sync.core.render import route_id

from .support.actionrunner import JobRun, Runner
from .support.fake_github import FakeGitHub
from .support.keys import read_only_key
from .support.proxyharness import Proxy, crashed, write_fleet
from .test_workflows import INSTALL, SETS, path_of

OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"
NEW_B = "http://103.196.86.106:17141/v1"


@pytest.fixture(scope="module")
def installed() -> dict[str, dict[str, str]]:
    """The install step runs for real in the first job; later jobs reuse its virtualenv."""
    return {}


@pytest.fixture(scope="module")
def read_key(proxy: Proxy) -> str:
    return read_only_key(proxy)


class Loop:
    """One config repository on GitHub: its jobs run one after another like workflow runs."""

    def __init__(
        self,
        tmp: Path,
        proxy: Proxy,
        github: FakeGitHub,
        read_key: str,
        installed: dict[str, dict[str, str]],
    ) -> None:
        self.tmp, self.proxy, self.github = tmp, proxy, github
        self.read_key, self.installed = read_key, installed
        self.runs = 0
        python = tmp / "python-bin"
        python.mkdir()
        (python / "python").symlink_to(sys.executable)  # what setup-python puts on PATH
        # No fleet-sync on PATH but the one the action installs.
        path = [
            p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "fleet-sync").exists()
        ]
        self.path = os.pathsep.join([str(python), *path])

    def job(
        self,
        workflow: Path,
        workspace: Path,
        event: dict[str, Any],
        sha: str,
        *,
        secrets: bool = True,
    ) -> JobRun:
        self.runs += 1
        temp = self.tmp / f"runner-temp-{self.runs}"
        temp.mkdir()
        (temp / "event.json").write_text(json.dumps(event), encoding="utf-8")
        drop = ("LITELLM_PROXY_", "GITHUB_", "FLEET_SYNC_", "RUNNER_", "VIRTUAL_ENV")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(
            self.github.env(GITHUB_EVENT_PATH=str(temp / "event.json"), GITHUB_SHA=sha),
            PATH=self.path,
            GITHUB_RUN_ATTEMPT="1",
            NO_COLOR="1",
        )
        env.pop("GITHUB_TOKEN")  # the action passes it only to its fleet-sync step
        contexts = {"github.token": self.github.token}
        if secrets:
            contexts |= {
                "secrets.LITELLM_PROXY_URL": self.proxy.url,
                "secrets.LITELLM_PROXY_READ_API_KEY": self.read_key,
            }
            (job,) = yaml.safe_load(workflow.read_text(encoding="utf-8"))["jobs"].values()
            if job.get("environment") == "litellm-proxy":  # environment secrets: this job only
                contexts["secrets.LITELLM_PROXY_API_KEY"] = self.proxy.api_key
        runner = Runner(workspace, temp, env, contexts, reuse=self.installed)
        run = runner.run_job(workflow)
        assert not crashed(run.stderr), run.stderr
        assert self.proxy.api_key not in run.stdout + run.stderr + run.summary
        return run


@pytest.mark.parametrize("which", SETS)
def test_plan_apply_drift_jobs_run_as_on_github(
    which: str,
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
) -> None:
    fleet_name = f"{which}-{fleet_name}"  # the two cases share a proxy
    model = f"{fleet_name}-m"
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    work = Path(repo.working_tree_dir or "")
    write_fleet(work / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    repo.index.add(["fleet.yaml"])
    base = repo.index.commit("base").hexsha
    write_fleet(work / "fleet.yaml", fleet_name, {model: {"hosts": {"a": NEW, "b": NEW_B}}})
    repo.index.add(["fleet.yaml"])
    head = repo.index.commit("move host a, add host b").hexsha
    loop = Loop(tmp_path, proxy, fake_github, read_key, installed)

    # pull_request: validate, then the plan comment with the read key only.
    pr = fake_github.add_pull_request(21)
    event = {"pull_request": {"number": pr, "base": {"sha": base}, "head": {"sha": head}}}
    plan = loop.job(path_of(which, "plan.yml"), work, event, head)
    assert plan.success, plan.stderr
    assert plan.outputs["result"] == "changes" and plan.outputs["exit-code"] == "2"
    assert (plan.outputs["create"], plan.outputs["update"], plan.outputs["prune"]) == (
        "2",
        "0",
        "0",
    )
    assert plan.outputs["plan-hash"].startswith("sha256:")
    (comment,) = fake_github.comments_on(pr)
    assert "fleet-sync:plan" in comment["body"] and "This PR changes (2)" in comment["body"]
    (upload,) = plan.uploads
    report = Path(upload["path"]) / f"{fleet_name}.plan.md"
    assert "This PR changes (2)" in report.read_text(encoding="utf-8")
    # fleet-sync came from the action's checkout, installed as a package (no editable link).
    venv = Path(installed[INSTALL]["python"]).parent.parent
    site = next(venv.glob("lib/python*/site-packages"))
    assert (site / "sync" / "fleet" / "fleet.schema.json").is_file()
    assert not list(site.glob("__editable__*")) and not list(site.glob("*fleet_sync*.pth"))

    # A fork's pull request gets no secrets: validated, plan skipped, the summary says why.
    fork = loop.job(path_of(which, "plan.yml"), work, event, head, secrets=False)
    assert fork.success and fork.outputs["result"] == "skipped"
    assert "needs to run the plan" in fork.summary

    # push to main: apply, result on the merged PR.
    fake_github.set_commit_pulls(head, [pr])
    apply = loop.job(path_of(which, "apply.yml"), work, {}, head)
    assert apply.success, apply.stderr
    assert apply.outputs["result"] == "applied" and apply.outputs["create"] == "2"
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == NEW

    # Re-running the (successful) apply job adds to the result comment, never erases it.
    again = loop.job(path_of(which, "apply.yml"), work, {}, head)
    assert again.success and again.outputs["create"] == "0"
    (result,) = [c["body"] for c in fake_github.comments_on(pr) if "fleet-sync:apply" in c["body"]]
    assert "2 done, 0 failed" in result and "nothing to do" in result
    assert result.index("nothing to do") < result.index("2 done")  # newest first

    # schedule: clean, then drift fails the job and opens the issue; read key only.
    clean = loop.job(path_of(which, "drift.yml"), work, {}, head)
    assert clean.success and clean.outputs["result"] == "no-changes", clean.stderr
    with proxy.http() as http:
        http.patch(
            f"/model/{route_id(fleet_name, model, 'a')}/update",
            json={"litellm_params": {"api_base": "http://10.0.0.98:8000/v1"}},
        )
    drift = loop.job(path_of(which, "drift.yml"), work, {}, head)
    assert not drift.success
    assert drift.outputs["result"] == "drift" and drift.outputs["exit-code"] == "2"
    issues = [i for i in fake_github.issues.values() if "pull_request" not in i]
    assert len(issues) == 1 and issues[0]["state"] == "open"
