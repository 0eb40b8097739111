"""The two-target example config repository (examples/config-repo/two-targets) as GitHub runs
it: each job of its workflows through the action's composite steps (tests/support/actionrunner.py:
fleet-sync installed from the action's own checkout, `bash -eo pipefail`), against two real
LiteLLM proxies standing for staging (the suite's proxy) and prod (the suite's
second one, prod_proxy), and the fake GitHub.

Secrets as the example's README places them: the addresses and read keys are repository
secrets every job may name; a target's write key is a secret of the GitHub environment named like
the target, which only a job in that environment gets. The jobs run in the order GitHub would
start them (`needs:`)."""

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
from sync.github.comment import PlanComment

from .support.actionrunner import JobRun, Runner
from .support.fake_github import FakeGitHub
from .support.keys import read_only_key
from .support.proxyharness import Proxy, crashed, remove_fleet
from .test_workflows_targets import TWO, WORKFLOWS

A = "http://216.243.220.245:16643/v1"  # addresses as data: LiteLLM never calls them here
B = "http://103.196.86.105:17140/v1"


@pytest.fixture(scope="module")
def installed() -> dict[str, dict[str, str]]:
    """The install step runs for real in the first job; later jobs reuse its virtualenv."""
    return {}


class Repository:
    """The config repository on GitHub: its secrets, and its jobs run like workflow runs."""

    def __init__(
        self,
        tmp: Path,
        staging: Proxy,
        prod: Proxy,
        github: FakeGitHub,
        installed: dict[str, dict[str, str]],
    ) -> None:
        self.tmp, self.github, self.installed = tmp, github, installed
        self.keys = (staging.api_key, prod.api_key)
        self.secrets = {
            "STAGING_LITELLM_URL": staging.url,
            "STAGING_LITELLM_READ_KEY": read_only_key(staging),
            "PROD_LITELLM_URLS": ",".join(prod.urls),
            "PROD_LITELLM_READ_KEY": read_only_key(prod),
        }
        self.environments = {
            "staging": {"STAGING_LITELLM_API_KEY": staging.api_key},
            "prod": {"PROD_LITELLM_API_KEY": prod.api_key},
        }
        self.runs = 0
        python = tmp / "python-bin"
        python.mkdir()
        (python / "python").symlink_to(sys.executable)
        path = [
            p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "fleet-sync").exists()
        ]
        self.path = os.pathsep.join([str(python), *path])

    def job(
        self,
        name: str,
        job_id: str,
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
            job = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))["jobs"][job_id]
            given = {**self.secrets, **self.environments.get(job.get("environment", ""), {})}
            contexts |= {f"secrets.{k}": v for k, v in given.items()}
        runner = Runner(workspace, temp, env, contexts, reuse=self.installed)
        run = runner.run_job(WORKFLOWS / name, job_id)
        assert not crashed(run.stderr), run.stderr
        for key in self.keys:
            assert key not in run.stdout + run.stderr + run.summary
        return run


def write(path: Path, fleet: str, model: str, hosts: list[dict[str, Any]]) -> None:
    """The example's fleet.yaml (its `targets:`, so its secrets' names) with a model of ours."""
    doc = yaml.safe_load((TWO / "fleet.yaml").read_text(encoding="utf-8"))
    doc["fleet"] = fleet
    doc["models"] = {
        model: {
            "served_model": "org/m",
            "targets": {"staging": {}, "prod": {"litellm_params": {"rpm": 600}}},
            "hosts": hosts,
        }
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def params_on(proxy: Proxy, fleet: str) -> dict[str, dict[str, Any]]:
    """host -> litellm_params of the fleet's routes the proxy lists."""
    return {
        r["model_info"]["fleet_sync_host"]: r["litellm_params"]
        for r in proxy.routes()
        if r["model_info"].get("fleet_sync_fleet") == fleet
    }


def by_target(github: FakeGitHub, pr: int, kind: str) -> dict[str | None, str]:
    bodies = [(PlanComment.parse(c["body"]), c["body"]) for c in github.comments_on(pr)]
    return {p.target: body for p, body in bodies if p is not None and p.kind == kind}


def test_staging_then_prod_each_job_with_its_own_key(
    proxy: Proxy,
    prod_proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    installed: dict[str, dict[str, str]],
) -> None:
    model = f"{fleet_name}-m"
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    work = Path(repo.working_tree_dir or "")
    write(work / "fleet.yaml", fleet_name, model, [{"name": "a", "api_base": A}])
    repo.index.add(["fleet.yaml"])
    base = repo.index.commit("base").hexsha
    canary = {"name": "canary", "api_base": B, "targets": ["staging"]}
    write(work / "fleet.yaml", fleet_name, model, [{"name": "a", "api_base": A}, canary])
    repo.index.add(["fleet.yaml"])
    head = repo.index.commit("a canary on staging").hexsha
    github = Repository(tmp_path, proxy, prod_proxy, fake_github, installed)
    try:
        run_the_loop(github, fake_github, proxy, prod_proxy, work, base, head, fleet_name, model)
    finally:
        for side in (proxy, prod_proxy):
            remove_fleet(side, fleet_name)


def run_the_loop(
    github: Repository,
    fake: FakeGitHub,
    staging: Proxy,
    prod: Proxy,
    work: Path,
    base: str,
    head: str,
    fleet: str,
    model: str,
) -> None:
    # pull_request: one plan job per target, one sticky comment per target.
    pr = fake.add_pull_request(31)
    event = {"pull_request": {"number": pr, "base": {"sha": base}, "head": {"sha": head}}}
    for target in ("staging", "prod"):
        plan = github.job("plan.yml", f"plan-{target}", work, event, head)
        assert plan.success, plan.stderr
        assert plan.outputs["result"] == "changes", plan.stdout + plan.stderr
    plans = by_target(fake, pr, "plan")
    assert set(plans) == {"staging", "prod"}
    canary_id = route_id(fleet, model, "canary")
    assert canary_id in plans["staging"] and canary_id not in plans["prod"]
    assert f"plan for `{fleet}` on `prod`" in plans["prod"]
    fork = github.job("plan.yml", "plan-prod", work, event, head, secrets=False)
    assert fork.success and fork.outputs["result"] == "skipped"
    assert "`PROD_LITELLM_URLS`" in fork.summary

    # push to main: staging first, then prod (its job needs staging's).
    fake.set_commit_pulls(head, [pr])
    first = github.job("apply.yml", "apply-staging", work, {}, head)
    assert first.success and first.outputs["result"] == "applied", first.stderr
    assert set(params_on(staging, fleet)) == {"a", "canary"}
    assert params_on(prod, fleet) == {}  # nothing on prod before its own job
    second = github.job("apply.yml", "apply-prod", work, {}, head)
    assert second.success and second.outputs["result"] == "applied", second.stderr
    on_prod = params_on(prod, fleet)
    assert set(on_prod) == {"a"} and on_prod["a"]["rpm"] == 600
    assert "rpm" not in params_on(staging, fleet)["a"]
    assert set(by_target(fake, pr, "apply")) == {"staging", "prod"}

    # schedule: both clean; a hand edit on prod is prod's drift issue only.
    for target in ("staging", "prod"):
        clean = github.job("drift.yml", f"drift-{target}", work, {}, head)
        assert clean.success and clean.outputs["result"] == "no-changes", clean.stderr
    with prod.http() as http:
        http.patch(
            f"/model/{route_id(fleet, model, 'a')}/update",
            json={"litellm_params": {"api_base": "http://10.0.0.98:8000/v1"}},
        )
    drifted = github.job("drift.yml", "drift-prod", work, {}, head)
    assert not drifted.success and drifted.outputs["result"] == "drift"
    assert github.job("drift.yml", "drift-staging", work, {}, head).success
    issues = [i for i in fake.issues.values() if "pull_request" not in i]
    assert [i["title"] for i in issues] == [
        f"Drift: live LiteLLM routes differ from fleet.yaml (fleet {fleet}, target prod)"
    ]
