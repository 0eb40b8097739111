"""Refused means red, and a reviewed force, end to end on a real LiteLLM (issue 24, items 1-2):
the example config repository's plan and apply jobs through the action's composite steps as a
runner runs them (tests/support/actionrunner.py), the fake GitHub for the pull request.

A pull request that prunes 5 of the fleet's 10 routes (over max_prune_percent 30): its plan
exits 3 and the action's plan step fails (a required check blocks the merge), the comment
leading with the refusal; `fleet-sync:force` added by a reader changes nothing (said so); added
by a writer, the plan is made again and passes, the refusal listed as accepted; merged, apply
forces exactly that refusal and its result names who labelled."""

from __future__ import annotations

from pathlib import Path

import git

from .support.fake_github import FakeGitHub
from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .test_workflows import path_of
from .test_workflows_live import Loop, installed, read_key

__all__ = ["installed", "read_key"]

LABEL = "fleet-sync:force"
HOSTS = {f"h{i}": f"http://10.1.0.{i}:8000/v1" for i in range(10)}


def test_a_refused_plan_fails_its_check_until_a_writer_labels_it_then_apply_forces_it(
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
) -> None:
    model = f"{fleet_name}-m"
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    work = Path(repo.working_tree_dir or "")
    fleet = work / "fleet.yaml"
    env = {**proxy.env(), "GITHUB_REPOSITORY": fake_github.repo}  # the routes' source tag

    # A safe change: --detailed-exitcode is 2, "changes, apply would run"; then applied.
    write_fleet(fleet, fleet_name, {model: {"hosts": HOSTS}})
    safe = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode"], env)
    assert safe.code == 2, safe.out + safe.err
    assert fleet_sync(["apply", "-f", str(fleet)], env).code == 0
    repo.index.add(["fleet.yaml"])
    base = repo.index.commit("ten hosts").hexsha

    # The pull request prunes half of them: apply would refuse, so plan exits 3.
    kept = dict(list(HOSTS.items())[:5])
    write_fleet(fleet, fleet_name, {model: {"hosts": kept}})
    repo.index.add(["fleet.yaml"])
    head = repo.index.commit("drop five hosts").hexsha
    for flags in ([], ["--detailed-exitcode"]):
        refused = fleet_sync(["plan", "-f", str(fleet), *flags], env)
        assert refused.code == 3, refused.out + refused.err
        assert "REFUSED: the plan prunes 5 of the 10 routes" in refused.out

    loop = Loop(tmp_path, proxy, fake_github, read_key, installed)
    fake_github.set_permission("alice", "write")
    fake_github.set_permission("mallory", "read")
    pr = fake_github.add_pull_request(31)
    event = {"pull_request": {"number": pr, "base": {"sha": base}, "head": {"sha": head}}}
    plan = loop.job(path_of("example", "plan.yml"), work, event, head)
    assert not plan.success, plan.stdout + plan.stderr  # the check fails: merge is blocked
    assert (plan.outputs["exit-code"], plan.outputs["result"]) == ("3", "refused")
    assert plan.outputs["prune"] == "5"
    (comment,) = fake_github.comments_on(pr)
    body = comment["body"]
    assert body.index("apply would refuse this plan") < body.index("-5 prune")
    assert "prunes 5 of the 10 routes" in body and f"`{LABEL}` label" in body
    assert "apply would refuse this plan" in plan.summary

    # A reader's label is not counted.
    fake_github.add_label(pr, LABEL, by="mallory")
    plan = loop.job(path_of("example", "plan.yml"), work, event, head)
    assert not plan.success and plan.outputs["result"] == "refused"
    assert (
        "@mallory added the fleet-sync:force label but has read access"
        in (fake_github.comments_on(pr)[0]["body"])
    )

    # A writer's label: the plan is made again and passes, the refusal accepted.
    fake_github.remove_label(pr, LABEL, by="alice")
    fake_github.add_label(pr, LABEL, by="alice")
    plan = loop.job(path_of("example", "plan.yml"), work, event, head)
    assert plan.success, plan.stdout + plan.stderr
    assert (plan.outputs["exit-code"], plan.outputs["result"]) == ("2", "changes")
    body = fake_github.comments_on(pr)[0]["body"]
    assert "Accepted by @alice's fleet-sync:force label (1)" in body
    assert "apply would refuse this plan" not in body

    # Merged: apply on the push forces exactly that refusal, and says who accepted it.
    fake_github.issues[pr]["merged_at"] = "2026-01-02T00:00:00Z"
    fake_github.set_commit_pulls(head, [pr])
    apply = loop.job(path_of("example", "apply.yml"), work, {}, head)
    assert apply.success, apply.stdout + apply.stderr
    assert (apply.outputs["result"], apply.outputs["prune"]) == ("applied", "5")
    assert len(proxy.ids(model)) == 5
    (result,) = [c["body"] for c in fake_github.comments_on(pr) if "fleet-sync:apply" in c["body"]]
    assert f"Forced, accepted by @alice's fleet-sync:force label on #{pr} (1)" in result
    assert "forcing 1 refusal(s) accepted by @alice's" in apply.stderr
