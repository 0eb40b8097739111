"""The GitOps loop per target (issue 17): a fleet with `targets:` gets one sticky plan comment,
one apply result and one drift issue per (fleet, target), each under a marker naming the target,
found by marker *and* author (issue 15's trust rules); the target-less marker of a fleet without
targets is neither a prefix of a targeted one nor matched by it.

The GitOps functions run for real (sync/gitops/loops.py) on plans built from plain data, against
the fake GitHub; the commands call them once per target with `target=NAME`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git
import pytest

from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import render
from sync.core.result import Outcome, Result
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.github.client import DRIFT_LABEL, drift_marker, drift_title
from sync.github.comment import (
    GITHUB_COMMENT_LIMIT,
    PlanComment,
    add_run,
    check_target,
    comment_limit,
    fit,
    marker_for,
)
from sync.gitops import loops as gitops

from .support.fake_github import ACTIONS_BOT, FakeGitHub, fake_github

__all__ = ["fake_github"]

FLEET = "gpu-fleet"
HASH = "sha256:" + "0123456789abcdef" * 4
MALLORY = "mallory"


def fleet_doc(hosts: dict[str, str]) -> dict[str, Any]:
    return {
        "version": 1,
        "fleet": FLEET,
        "models": {
            "m": {
                "served_model": "org/m",
                "hosts": [{"name": n, "api_base": a} for n, a in hosts.items()],
            }
        },
    }


def to_fleet(doc: dict[str, Any]) -> Fleet:
    return fleet_from_doc(parse_yaml(json.dumps(doc), "fleet.yaml"), "fleet.yaml")


def plan_of(hosts: dict[str, str], live_hosts: dict[str, str] | None = None) -> Plan:
    """The plan of a fleet with `hosts` against a proxy that serves `live_hosts` of it."""
    fleet = to_fleet(fleet_doc(hosts))
    live = render(to_fleet(fleet_doc(live_hosts))) if live_hosts else []
    return make_plan(fleet, render(fleet), live)


STAGING = {"a": "http://10.0.0.1:8000/v1"}
PROD = {"a": "http://10.0.0.1:8000/v1", "b": "http://10.0.0.2:8000/v1"}


def applied(plan: Plan) -> Result:
    return Result(plan, tuple(Outcome(change, "done") for change in plan.changes))


@pytest.fixture
def env(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[dict[str, str]]:
    summary = tmp_path / "summary.md"
    summary.touch()
    yield fake_github.env(
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_SHA="abc123",
        FLEET_SYNC_REPORT_DIR=str(tmp_path / "report"),
    )


def comment_plan(plan: Plan, env: dict[str, str], pr: int, target: str | None) -> str:
    return gitops.comment_plan(
        Path("fleet.yaml"), plan, lambda _: plan, [], None, env, pr, target=target
    )


def headers(fake: FakeGitHub, pr: int) -> list[tuple[str, str | None, str]]:
    """(kind, target, author) of every fleet-sync comment on the pull request, oldest first."""
    out = []
    for comment in fake.comments_on(pr):
        parsed = PlanComment.parse(comment["body"])
        if parsed is not None:
            out.append((parsed.kind, parsed.target, comment["user"]["login"]))
    return out


# ---------------------------------------------------------------------------- markers


def test_markers_of_a_fleet_its_targets_and_none_are_never_prefixes_of_each_other() -> None:
    kinds = ("plan", "apply")
    targets = (None, "staging", "prod", "prod-eu", "s")
    markers = [marker_for(FLEET, k, t) for k in kinds for t in targets]
    markers += [marker_for(FLEET + "-2", k, t) for k in kinds for t in targets]
    assert len(set(markers)) == len(markers)
    for a in markers:
        for b in markers:
            assert a == b or not b.startswith(a), (a, b)
    drift = [drift_marker(f, t) for f in (FLEET, FLEET + "-2") for t in targets]
    for a in drift:
        for b in drift:
            assert a == b or not b.startswith(a), (a, b)
    # Without a target, the marker, header and title of every fleet-sync before targets.
    assert marker_for(FLEET, "plan") == f"<!-- fleet-sync:plan fleet={FLEET} hash="
    assert drift_marker(FLEET) == f"<!-- fleet-sync:drift fleet={FLEET} -->"
    assert drift_title(FLEET) == (
        f"Drift: live LiteLLM routes differ from fleet.yaml (fleet {FLEET})"
    )
    assert comment_limit(None) == GITHUB_COMMENT_LIMIT
    rendered = PlanComment(FLEET, HASH, "plan", "b", "staging").render()
    assert rendered == f"<!-- fleet-sync:plan fleet={FLEET} target=staging hash={HASH} -->\nb"
    assert drift_marker(FLEET, "prod") == f"<!-- fleet-sync:drift fleet={FLEET} target=prod -->"


@pytest.mark.parametrize("target", [None, "staging", "a", "eu-west-1", "x" * 100])
def test_a_targeted_comment_round_trips_and_matches_only_its_own_marker(
    target: str | None,
) -> None:
    comment = PlanComment(FLEET, HASH, "apply", "body\n", target)
    rendered = comment.render()
    assert PlanComment.parse(rendered) == comment
    assert len(rendered) - len(comment.body) <= GITHUB_COMMENT_LIMIT - comment_limit(target) + 256
    others = [None, "staging", "prod"]
    for other in others:
        assert rendered.startswith(marker_for(FLEET, "apply", other)) == (other == target)


@pytest.mark.parametrize("target", [None, "s", "t" * 100])
def test_a_cut_comment_keeps_room_for_its_target_in_the_header(target: str | None) -> None:
    """fit and add_run under comment_limit(target) leave a comment of the longest fleet and hash
    under GitHub's limit whatever the target; without it a long target would push it over."""
    body = "x\n" * GITHUB_COMMENT_LIMIT  # lines of two: the cut lands right at the budget
    for cut in (fit(body, comment_limit(target)), add_run(body, "y", comment_limit(target))):
        rendered = PlanComment("f" * 100, "h" * 100, "apply", cut, target).render()
        assert len(rendered) < GITHUB_COMMENT_LIMIT, len(rendered) - GITHUB_COMMENT_LIMIT
    longest = PlanComment("f" * 100, "h" * 100, "apply", fit(body), "t" * 100).render()
    assert len(longest) > GITHUB_COMMENT_LIMIT  # what comment_limit is for


@pytest.mark.parametrize(
    "target", ["", "Staging", "a b", "a>b", "-->", "prod\n", "prod\nx", "a_b", "é", "x" * 101]
)
def test_a_target_that_cannot_be_a_marker_is_refused(target: str) -> None:
    with pytest.raises(ValueError):
        check_target(target)
    with pytest.raises(ValueError):
        marker_for(FLEET, "plan", target)
    with pytest.raises(ValueError):
        drift_marker(FLEET, target)
    with pytest.raises(ValueError):
        PlanComment(FLEET, HASH, "plan", "", target)


@pytest.mark.parametrize(
    "header",
    [
        f"<!-- fleet-sync:plan fleet={FLEET} target=Staging hash={HASH} -->\n",
        f"<!-- fleet-sync:plan fleet={FLEET} target= hash={HASH} -->\n",
        f"<!-- fleet-sync:plan fleet={FLEET} target=a_b hash={HASH} -->\n",
        f"<!-- fleet-sync:plan target=staging fleet={FLEET} hash={HASH} -->\n",
        f"<!-- fleet-sync:plan fleet={FLEET} hash={HASH} target=staging -->\n",
        f"<!-- fleet-sync:plan fleet={FLEET} target={'x' * 101} hash={HASH} -->\n",
    ],
)
def test_a_header_with_a_malformed_target_is_no_comment_of_ours(header: str) -> None:
    assert PlanComment.parse(header + "body") is None


# ---------------------------------------------------------------------------- plan comments


def test_two_targets_keep_two_sticky_comments_each_updated_in_place(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    pr = fake_github.add_pull_request()
    staging, prod = plan_of(STAGING), plan_of(PROD)
    first = [comment_plan(staging, env, pr, "staging"), comment_plan(prod, env, pr, "prod")]
    ids = [c["id"] for c in fake_github.comments_on(pr)]
    # The next push: staging's plan moves, prod's does not.
    moved = plan_of({"a": "http://10.0.0.9:8000/v1"})
    second = [comment_plan(moved, env, pr, "staging"), comment_plan(prod, env, pr, "prod")]

    assert "created" in first[0] and "for target staging" in first[0]
    assert "created" in first[1] and "for target prod" in first[1]
    assert "updated" in second[0] and "unchanged" in second[1]
    comments = fake_github.comments_on(pr)
    assert [c["id"] for c in comments] == ids  # edited in place, none added
    assert headers(fake_github, pr) == [
        ("plan", "staging", ACTIONS_BOT),
        ("plan", "prod", ACTIONS_BOT),
    ]
    bodies = [PlanComment.parse(c["body"]) for c in comments]
    assert bodies[0] is not None and bodies[0].plan_hash == moved.hash
    assert bodies[1] is not None and bodies[1].plan_hash == prod.hash
    assert f"### fleet-sync plan for `{FLEET}` on `staging`" in comments[0]["body"]
    assert f"### fleet-sync plan for `{FLEET}` on `prod`" in comments[1]["body"]
    assert "This PR changes (2)" in comments[1]["body"]
    # The full reports are one file per (fleet, target), the JSON naming its target.
    report = tmp_path / "report"
    assert sorted(p.name for p in report.iterdir()) == [
        f"{FLEET}.prod.plan.json",
        f"{FLEET}.prod.plan.md",
        f"{FLEET}.staging.plan.json",
        f"{FLEET}.staging.plan.md",
    ]
    saved = json.loads((report / f"{FLEET}.staging.plan.json").read_text(encoding="utf-8"))
    assert saved["target"] == "staging" and saved["hash"] == moved.hash


def test_the_target_less_comment_and_a_targeted_one_never_take_each_other(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    """A repository that adds `targets:` keeps its old comment; the old one is not edited as
    staging's, nor staging's as the target-less one."""
    pr = fake_github.add_pull_request()
    plan = plan_of(STAGING)
    none_first = comment_plan(plan, env, pr, None)
    staging_first = comment_plan(plan, env, pr, "staging")
    none_again = comment_plan(plan_of(PROD), env, pr, None)
    staging_again = comment_plan(plan, env, pr, "staging")

    assert "created" in none_first and "for target" not in none_first
    assert "created" in staging_first and "updated" in none_again
    assert "unchanged" in staging_again
    assert headers(fake_github, pr) == [
        ("plan", None, ACTIONS_BOT),
        ("plan", "staging", ACTIONS_BOT),
    ]
    target_less, staging = fake_github.comments_on(pr)
    assert target_less["body"].startswith(marker_for(FLEET, "plan", None) + plan_of(PROD).hash)
    assert f"### fleet-sync plan for `{FLEET}`\n" in target_less["body"]
    assert staging["body"].startswith(marker_for(FLEET, "plan", "staging") + plan.hash)
    assert sorted(p.name for p in (tmp_path / "report").glob("*.md")) == [
        f"{FLEET}.plan.md",
        f"{FLEET}.staging.plan.md",
    ]


def test_a_foreign_comment_with_a_target_marker_is_never_edited_nor_trusted(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request(state="closed", merged=True)
    evil = "sha256:" + "e" * 64
    planted = {
        t: PlanComment(FLEET, evil, "plan", "looks reviewed", t).render()
        for t in ("staging", "prod")
    }
    planted_result = PlanComment(FLEET, evil, "apply", "### 99 done\n", "prod").render()
    foreign = [fake_github.add_comment(pr, body, user=MALLORY) for body in planted.values()]
    foreign.append(fake_github.add_comment(pr, planted_result, user=MALLORY))
    staging, prod = plan_of(STAGING), plan_of(PROD)

    for _ in range(2):
        comment_plan(staging, env, pr, "staging")
        comment_plan(prod, env, pr, "prod")
    fake_github.set_commit_pulls("abc123", [pr])
    gitops.comment_result(applied(prod), env, target="prod")

    for number, body in zip(foreign, [*planted.values(), planted_result], strict=True):
        assert fake_github.comments[number]["body"] == body
        assert [c for c in fake_github.writes() if c.path.endswith(f"/comments/{number}")] == []
    ours = [c for c in fake_github.comments_on(pr) if c["id"] not in foreign]
    assert [PlanComment.parse(c["body"]) is not None for c in ours] == [True, True, True]
    assert {c["user"]["login"] for c in ours} == {ACTIONS_BOT}
    posted = json.dumps([c.json for c in fake_github.writes()])
    assert evil[:19] not in posted and "99 done" not in posted
    (result,) = [c for c in ours if c["body"].startswith(marker_for(FLEET, "apply", "prod"))]
    assert "differs from the plan reviewed" not in result["body"]


# ---------------------------------------------------------------------------- apply results


def test_each_target_has_its_own_result_checked_against_its_own_plan_comment(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request(state="closed", merged=True)
    staging, prod = plan_of(STAGING), plan_of(PROD)
    comment_plan(staging, env, pr, "staging")
    comment_plan(plan_of({"c": "http://10.0.0.3:8000/v1"}), env, pr, "prod")  # reviewed
    fake_github.set_commit_pulls("abc123", [pr])

    lines = [
        gitops.comment_result(applied(staging), env, target="staging"),
        gitops.comment_result(applied(prod), env, target="prod"),  # live moved since review
        gitops.comment_result(applied(plan_of(STAGING, STAGING)), env, target="staging"),
    ]

    assert "apply result for target staging created" in lines[0]
    assert "apply result for target prod created" in lines[1]
    assert "apply result for target staging updated" in lines[2]
    assert headers(fake_github, pr) == [
        ("plan", "staging", ACTIONS_BOT),
        ("plan", "prod", ACTIONS_BOT),
        ("apply", "staging", ACTIONS_BOT),
        ("apply", "prod", ACTIONS_BOT),
    ]
    *_, staging_result, prod_result = fake_github.comments_on(pr)
    # staging: the plan reviewed is the plan applied; the re-run sits on top of the first run.
    assert "differs from the plan reviewed" not in staging_result["body"]
    assert f"fleet-sync apply for `{FLEET}` on `staging`: nothing to do" in staging_result["body"]
    assert f"fleet-sync apply for `{FLEET}` on `staging`: applied" in staging_result["body"]
    assert "1 done, 0 failed" in staging_result["body"]
    # prod: compared with prod's plan comment, not staging's (whose hash is another).
    assert "differs from the plan reviewed" in prod_result["body"]
    assert f"fleet-sync apply for `{FLEET}` on `prod`: applied" in prod_result["body"]
    assert "2 done, 0 failed" in prod_result["body"]


def test_a_staging_plan_comment_is_not_the_review_of_the_target_less_apply(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request(state="closed", merged=True)
    plan = plan_of(STAGING)
    comment_plan(plan_of(PROD), env, pr, None)  # the fleet's own review: another plan
    comment_plan(plan, env, pr, "staging")  # same hash as the apply, but staging's
    fake_github.set_commit_pulls("abc123", [pr])
    gitops.comment_result(applied(plan), env)
    (result,) = [c for c in fake_github.comments_on(pr) if "fleet-sync:apply" in c["body"]]
    assert result["body"].startswith(marker_for(FLEET, "apply") + plan.hash)
    assert "differs from the plan reviewed" in result["body"]


# ---------------------------------------------------------------------------- drift issues


def drift_issues(fake: FakeGitHub) -> dict[str | None, dict[str, Any]]:
    """Our drift issues by target, from their marker line."""
    out: dict[str | None, dict[str, Any]] = {}
    for issue in fake.issues.values():
        first = str(issue.get("body") or "").split("\n", 1)[0]
        for target in (None, "staging", "prod"):
            if first == drift_marker(FLEET, target) and issue["user"]["login"] == ACTIONS_BOT:
                assert target not in out, "one issue per (fleet, target)"
                out[target] = issue
    return out


def test_drift_opens_one_issue_per_target_and_closes_only_its_own(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    drifted, clean = plan_of(STAGING), plan_of(STAGING, STAGING)
    assert gitops.report_drift(drifted, env) == "drift issue #1 opened"
    staging = gitops.report_drift(drifted, env, target="staging")
    prod = gitops.report_drift(plan_of(PROD), env, target="prod")
    again = gitops.report_drift(plan_of(PROD), env, target="prod")
    assert (staging, prod, again) == (
        "drift issue for target staging #2 opened",
        "drift issue for target prod #3 opened",
        "drift issue for target prod #3 updated",
    )
    issues = drift_issues(fake_github)
    assert set(issues) == {None, "staging", "prod"}
    assert issues["prod"]["title"] == (
        f"Drift: live LiteLLM routes differ from fleet.yaml (fleet {FLEET}, target prod)"
    )
    assert issues[None]["title"] == drift_title(FLEET)
    assert f"### Drift in fleet `{FLEET}` on `staging`" in issues["staging"]["body"]
    assert f"### Drift in fleet `{FLEET}`\n" in issues[None]["body"]

    before = len(fake_github.writes())
    closed = gitops.report_drift(clean, env, target="staging")

    assert closed == "drift issue for target staging #2 closed"
    states = {t: i["state"] for t, i in drift_issues(fake_github).items()}
    assert states == {None: "open", "staging": "closed", "prod": "open"}
    touched = {c.path.split("/")[5] for c in fake_github.writes()[before:]}
    assert touched == {"2"}  # the comment saying it is resolved, and the close
    assert gitops.report_drift(clean, env, target="staging") == (
        "no drift for target staging and no open drift issue"
    )
    assert gitops.report_drift(clean, env) == "drift issue #1 closed"
    assert drift_issues(fake_github)["prod"]["state"] == "open"


def test_a_foreign_drift_issue_with_a_target_marker_is_left_alone(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    planted = drift_marker(FLEET, "prod") + "\nplanted"
    foreign = fake_github.add_issue("Drift", planted, labels=[DRIFT_LABEL], user=MALLORY)
    gitops.report_drift(plan_of(PROD), env, target="prod")
    gitops.report_drift(plan_of(PROD, PROD), env, target="prod")
    assert fake_github.issues[foreign]["body"] == planted
    assert fake_github.issues[foreign]["state"] == "open"
    assert [c for c in fake_github.writes() if f"/issues/{foreign}" in c.path] == []
    assert drift_issues(fake_github)["prod"]["state"] == "closed"


def test_a_bad_target_fails_before_anything_is_written(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    pr = fake_github.add_pull_request(state="closed", merged=True)
    fake_github.set_commit_pulls("abc123", [pr])
    plan = plan_of(STAGING)
    calls: list[Callable[[], str]] = [
        lambda: comment_plan(plan, env, pr, "../prod"),
        lambda: gitops.comment_result(applied(plan), env, target="Prod"),
        lambda: gitops.report_drift(plan, env, target="prod -->"),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="target must be"):
            call()
    assert fake_github.calls == [] and not (tmp_path / "report").exists()
    assert (tmp_path / "summary.md").read_text(encoding="utf-8") == ""


# ---------------------------------------------------------------------------- merge base


def test_a_targets_comment_splits_this_prs_changes_from_drift_by_its_base_plan(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    """The commands hand each target's comment the base plan of that target (`plan_for`)."""
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    fleet_file = Path(repo.working_tree_dir or "") / "fleet.yaml"
    fleet_file.write_text(json.dumps(fleet_doc(STAGING)), encoding="utf-8")
    repo.index.add(["fleet.yaml"])
    base = repo.index.commit("base").hexsha
    pr = fake_github.add_pull_request()
    plan = plan_of(PROD)
    asked: list[Fleet] = []

    def staging_at_base(fleet: Fleet) -> Plan:
        asked.append(fleet)
        return plan_of(STAGING)

    gitops.comment_plan(fleet_file, plan, staging_at_base, [], base, env, pr, target="staging")
    gitops.comment_plan(fleet_file, plan, lambda _: plan, [], base, env, pr, target="prod")

    assert [f.name for f in asked] == [FLEET]
    staging, prod = (c["body"] for c in fake_github.comments_on(pr))
    assert f"plan for `{FLEET}` on `staging`" in staging
    assert "This PR changes (1)" in staging and "Drift already live (1)" in staging
    assert f"compared with fleet.yaml at the merge base {base[:12]}" in staging
    assert "This PR changes (0)" in prod and "Drift already live (2)" in prod
