"""The GitOps loop end to end: a git repository with a base and a PR commit (gitpython), the real
LiteLLM, and the fake GitHub server, with the environment GitHub Actions gives each workflow."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import git

from sync.core.plan import split_by_base
from sync.core.planner import make_plan
from sync.core.render import render, route_id
from sync.fleet.model import fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.github.client import DRIFT_LABEL, drift_marker
from sync.github.comment import GITHUB_COMMENT_LIMIT, PlanComment
from sync.report.markdown import pr_markdown

from .support.fake_github import FakeGitHub
from .support.proxyharness import REPO, Proxy, fleet_sync, write_fleet

OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"


def repo_with_pr(
    tmp_path: Path, fleet: str, base: Mapping[str, Any], head: Mapping[str, Any]
) -> tuple[Path, str, str]:
    """A repository whose main has `base` and whose PR branch changes it to `head`."""
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    fleet_file = Path(repo.working_tree_dir or "") / "fleet.yaml"
    write_fleet(fleet_file, fleet, base)
    repo.index.add(["fleet.yaml"])
    base_sha = repo.index.commit("base").hexsha
    repo.git.checkout("-b", "pr")
    write_fleet(fleet_file, fleet, head)
    repo.index.add(["fleet.yaml"])
    head_sha = repo.index.commit("pr").hexsha
    return fleet_file, base_sha, head_sha


def actions_env(
    proxy: Proxy, github: FakeGitHub, tmp_path: Path, event: Mapping[str, Any], sha: str
) -> dict[str, str]:
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    summary = tmp_path / "summary.md"
    summary.touch()
    env = proxy.env()
    env.update(
        github.env(
            GITHUB_EVENT_PATH=str(event_path), GITHUB_STEP_SUMMARY=str(summary), GITHUB_SHA=sha
        )
    )
    return env


def test_pr_comment_separates_this_pr_from_live_drift_and_is_sticky(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    base = {model: {"hosts": {"a": OLD, "b": OLD.replace("16643", "16650")}}}
    head = {model: {"hosts": {"a": NEW, "b": OLD.replace("16643", "16650")}}}
    fleet_file, base_sha, head_sha = repo_with_pr(tmp_path, fleet_name, base, head)
    # Main is live; then someone edits route b by hand: drift the PR did not cause.
    write_fleet(tmp_path / "base.yaml", fleet_name, base)
    # Applied from the same repository the Actions runs below name (GITHUB_REPOSITORY).
    main = {**proxy.env(), "GITHUB_REPOSITORY": fake_github.repo}
    assert fleet_sync(["apply", "-f", str(tmp_path / "base.yaml")], main).code == 0
    with proxy.http() as http:
        rid_b = route_id(fleet_name, model, "b")
        moved = {"api_base": "http://10.0.0.99:8000/v1"}
        http.patch(f"/model/{rid_b}/update", json={"litellm_params": moved})
    pr = fake_github.add_pull_request(7)
    event = {"pull_request": {"number": pr, "base": {"sha": base_sha}, "head": {"sha": head_sha}}}
    env = actions_env(proxy, fake_github, tmp_path, event, head_sha)

    run = fleet_sync(
        ["plan", "-f", str(fleet_file), "--github-comment", "--detailed-exitcode"],
        env,
        cwd=fleet_file.parent,
    )
    assert run.code == 2, run.out + run.err
    comments = fake_github.comments_on(pr)
    assert len(comments) == 1
    body = comments[0]["body"]
    parsed = PlanComment.parse(body)
    assert parsed is not None and parsed.fleet == fleet_name and parsed.kind == "plan"
    this_pr, drift = body.split("#### This PR changes")[1].split("#### Drift already live")
    assert route_id(fleet_name, model, "a") in this_pr and NEW in this_pr
    assert rid_b not in this_pr
    assert rid_b in drift and "litellm_params.api_base" in drift
    assert "This PR changes (1)" in body and "Drift already live (1)" in body
    assert proxy.api_key not in body and fake_github.token not in run.out + run.err
    assert "fleet-sync plan" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    if os.environ.get("FLEET_SYNC_WRITE_EXAMPLES"):  # refreshes docs/example-pr-comment.md
        (REPO / "docs" / "example-pr-comment.md").write_text(body, encoding="utf-8")

    # The next push edits the same comment in place.
    run = fleet_sync(
        ["plan", "-f", str(fleet_file), "--github-comment"], env, cwd=fleet_file.parent
    )
    assert run.code == 0, run.err
    assert len(fake_github.comments_on(pr)) == 1
    assert not fake_github.calls_to("POST", rf"issues/{pr}/comments")[1:]


def test_two_fleets_keep_two_comments(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    pr = fake_github.add_pull_request(8)
    for name in (f"{fleet_name}-one", f"{fleet_name}-two"):
        fleet_file, base_sha, head_sha = repo_with_pr(
            tmp_path / name,
            name,
            {f"{name}-m": {"hosts": {"a": OLD}}},
            {f"{name}-m": {"hosts": {"a": NEW}}},
        )
        event = {"pull_request": {"number": pr, "base": {"sha": base_sha}}}
        env = actions_env(proxy, fake_github, tmp_path / name, event, head_sha)
        for _ in range(2):
            run = fleet_sync(
                ["plan", "-f", str(fleet_file), "--github-comment"], env, cwd=fleet_file.parent
            )
            assert run.code == 0, run.err
    fleets = sorted(PlanComment.parse(c["body"]).fleet for c in fake_github.comments_on(pr))  # type: ignore[union-attr]
    assert fleets == [f"{fleet_name}-one", f"{fleet_name}-two"]


def test_apply_on_merge_posts_result_on_the_merged_pr(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet_file = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    pr = fake_github.add_pull_request(9, state="closed", merged=True)
    fake_github.add_comment(  # our own plan comment (the Actions token wrote it)
        pr,
        PlanComment(fleet_name, "sha256:" + "0" * 64, "plan", "reviewed").render(),
        user="github-actions[bot]",
    )
    fake_github.set_commit_pulls("abc123", [pr])
    env = actions_env(proxy, fake_github, tmp_path, {}, "abc123")
    run = fleet_sync(["apply", "-f", str(fleet_file), "--github-comment"], env)
    assert run.code == 0, run.out + run.err
    results = [c["body"] for c in fake_github.comments_on(pr) if "fleet-sync:apply" in c["body"]]
    assert len(results) == 1
    assert "applied" in results[0] and "1 done, 0 failed" in results[0]
    assert "differs from the plan reviewed" in results[0]  # the review saw another hash


def test_drift_issue_opened_updated_then_closed(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet_file = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    env = actions_env(proxy, fake_github, tmp_path, {}, "def456")
    assert fleet_sync(["apply", "-f", str(fleet_file)], env).code == 0
    run = fleet_sync(["drift", "-f", str(fleet_file), "--github-issue"], env)
    assert run.code == 0 and not fake_github.issues  # clean: nothing opened
    with proxy.http() as http:
        http.patch(
            f"/model/{route_id(fleet_name, model, 'a')}/update",
            json={"litellm_params": {"api_base": NEW}},
        )
    for _ in range(2):
        run = fleet_sync(["drift", "-f", str(fleet_file), "--github-issue"], env)
        assert run.code == 2, run.out + run.err
    issues = [i for i in fake_github.issues.values() if "pull_request" not in i]
    assert len(issues) == 1 and issues[0]["state"] == "open"
    assert [label["name"] for label in issues[0]["labels"]] == ["fleet-drift"]
    assert "litellm_params.api_base" in issues[0]["body"]
    run = fleet_sync(["drift", "-f", str(fleet_file), "--github-issue", "--fix"], env)
    assert run.code == 0, run.out + run.err
    assert (
        issues[0]["state"] == "closed"
        or fake_github.issues[issues[0]["number"]]["state"] == "closed"
    )
    assert any("Drift resolved" in c["body"] for c in fake_github.comments_on(issues[0]["number"]))


def test_github_outage_does_not_lose_the_plan(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    fleet_file = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    pr = fake_github.add_pull_request(11)
    env = actions_env(proxy, fake_github, tmp_path, {"pull_request": {"number": pr}}, "x")
    fake_github.fail_next(20, 502)
    run = fleet_sync(["plan", "-f", str(fleet_file), "--github-comment"], env)
    assert run.code == 1
    assert "+ create" in run.out  # still printed
    assert "+ create" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "GitHub" in run.err and fake_github.token not in run.err


def test_comment_of_a_3000_route_plan_stays_under_the_limit() -> None:
    hosts = [
        {"name": f"h{i}", "api_base": f"http://10.0.{i // 250}.{i % 250}:8000/v1"}
        for i in range(3000)
    ]
    doc = {"version": 1, "fleet": "big", "models": {"m": {"served_model": "org/m", "hosts": hosts}}}
    fleet = fleet_from_doc(parse_yaml(json.dumps(doc), "fleet.yaml"), "fleet.yaml")
    plan = make_plan(fleet, render(fleet), [])
    this_pr, drift = split_by_base(plan, None)
    from sync.github.comment import fit

    body = PlanComment(
        "big", plan.hash, "plan", fit(pr_markdown(plan, this_pr, drift, "base"))
    ).render()
    assert len(body) < GITHUB_COMMENT_LIMIT
    assert "truncated" in body and "job summary" in body
    assert PlanComment.parse(body) is not None


def test_apply_result_reaches_the_summary_before_github_is_asked_and_only_once(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    fleet_file = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    merged = [fake_github.add_pull_request(n, state="closed", merged=True) for n in (31, 32)]
    fake_github.set_commit_pulls("abc999", merged)
    env = actions_env(proxy, fake_github, tmp_path, {}, "abc999")
    fake_github.rate_limit_next(1, method="GET")  # GET commits/abc999/pulls
    run = fleet_sync(["apply", "-f", str(fleet_file), "--github-comment"], env)
    assert run.code == 1 and "rate limit" in run.err
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.count("fleet-sync apply for") == 1 and "1 done, 0 failed" in summary

    run = fleet_sync(["apply", "-f", str(fleet_file), "--github-comment"], env)  # re-run
    assert run.code == 0, run.err
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.count("fleet-sync apply for") == 2  # once per run, not once per PR
    for number in merged:
        (result,) = fake_github.comments_on(number)
        assert "nothing to do" in result["body"]


def test_drift_leaves_a_planted_drift_issue_alone_and_opens_its_own(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    fleet_file = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    planted = drift_marker(fleet_name) + "\nclose me"
    foreign = fake_github.add_issue("Drift", planted, labels=[DRIFT_LABEL], user="mallory")
    env = actions_env(proxy, fake_github, tmp_path, {}, "x")
    run = fleet_sync(["drift", "-f", str(fleet_file), "--github-issue"], env)  # never applied
    assert run.code == 2, run.out + run.err
    assert fake_github.issues[foreign]["body"] == planted
    assert not [c for c in fake_github.writes() if f"/issues/{foreign}" in c.path]
    (ours,) = [i for n, i in fake_github.issues.items() if n != foreign]
    assert ours["user"]["login"] == "github-actions[bot]"
    assert f"drift issue #{ours['number']} opened" in run.err


def test_a_github_answer_that_drips_ends_drift_at_the_deadline(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    fleet_file = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    env = {**actions_env(proxy, fake_github, tmp_path, {}, "x"), "FLEET_SYNC_GITHUB_TIMEOUT": "1"}
    # The issue listing drips a byte at a time, far longer than the deadline, on every try.
    fake_github.answer_next(b"[" + b" " * 100_000 + b"]", 3, drip=0.01, path="/issues$")
    run = fleet_sync(["drift", "-f", str(fleet_file), "--github-issue"], env)
    assert run.code == 1, run.out + run.err
    assert "no complete answer within 1 s" in run.err and "after 3 attempt(s)" in run.err
    assert "+ create" in run.out  # the drift report itself is not lost
    for _ in range(3):
        assert fake_github.gave_up.acquire(timeout=60)
