"""Refused means red, and a reviewed force (issue 24, items 1 and 2), on plain data and the fake
GitHub: `plan` exits on apply's own verdict (sync/core/verdict.py: 3 while apply would refuse,
2 for changes apply would run with --detailed-exitcode); the sticky comment leads with what is
refused and how to proceed; a `fleet-sync:force` label added by someone with write access
accepts exactly the refusals the comment showed, a label by anyone else is ignored (said so),
and apply on merge forces only what the reviewed plan accepted — a new refusal still refuses.

The GitOps functions run for real (sync/gitops/loops.py, force.py) against the fake GitHub;
the refusals are plain strings, as sync/core/safety.py words them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.core.plan import Plan
from sync.core.verdict import FORCE, Acceptance, Verdict, decide, judge, refusal_key
from sync.github.comment import PlanComment
from sync.gitops import loops as gitops
from sync.gitops.force import Record
from sync.run.console import EXIT_CHANGES, EXIT_OK, EXIT_REFUSED
from sync.run.verdicts import plan_code

from .support.fake_github import FakeGitHub
from .test_targets_gitops import PROD, STAGING, plan_of

LABEL = "fleet-sync:force"
PRUNE = "the plan prunes 5 of the 10 routes the fleet owns (50% > safety.max_prune_percent 30%)"
CONFLICT = "m host b: id x is held by a route this fleet does not own"
SHA = "abc123"


@pytest.fixture
def env(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[dict[str, str]]:
    summary = tmp_path / "summary.md"
    summary.touch()
    fake_github.set_permission("alice", "write")
    fake_github.set_permission("mallory", "read")
    fake_github.set_permission("maia", "maintain")
    yield fake_github.env(
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_SHA=SHA,
        FLEET_SYNC_REPORT_DIR=str(tmp_path / "report"),
    )


def plan() -> Plan:
    return plan_of(PROD, STAGING)  # one create: a change apply would run


def comment(env: dict[str, str], pr: int, reasons: list[str]) -> tuple[str, Verdict]:
    the_plan = plan()
    return gitops.comment_reviewed_plan(
        Path("fleet.yaml"), the_plan, lambda _: the_plan, reasons, None, env, pr
    )


def body(fake: FakeGitHub, pr: int) -> str:
    (ours,) = [c for c in fake.comments_on(pr) if PlanComment.parse(c["body"])]
    return str(ours["body"])


# ---------------------------------------------------------------------------- the verdict


def test_plan_exits_on_applys_verdict() -> None:
    refused, safe = Verdict((PRUNE,)), Verdict(())
    assert plan_code(refused, True, True) == EXIT_REFUSED  # not 2: apply would not run it
    assert plan_code(refused, True, False) == EXIT_REFUSED  # without --detailed-exitcode too
    assert plan_code(safe, True, True) == EXIT_CHANGES  # changes, apply would run
    assert plan_code(safe, True, False) == EXIT_OK
    assert plan_code(Verdict((), (PRUNE,), "x"), True, True) == EXIT_CHANGES  # accepted


def test_an_acceptance_overrides_exactly_the_refusals_it_names() -> None:
    assert judge([PRUNE, CONFLICT]) == Verdict((PRUNE, CONFLICT))
    assert judge([PRUNE, CONFLICT], FORCE) == Verdict((), (PRUNE, CONFLICT), "--force")
    reviewed = Acceptance("@alice's label", frozenset({refusal_key(PRUNE)}))
    assert judge([PRUNE, CONFLICT], reviewed) == Verdict((CONFLICT,), (PRUNE,), "@alice's label")
    # The same rail with other numbers is another refusal.
    other = PRUNE.replace("5 of the 10", "6 of the 10")
    assert judge([other], reviewed).refused == (other,)
    assert judge([], reviewed) == Verdict(())


def test_decide_is_safety_refusals_under_the_acceptance() -> None:
    from sync.core.safety import refusals

    the_plan = plan()
    assert decide(the_plan, 0.0).refused == tuple(refusals(the_plan, 0.0))


# ---------------------------------------------------------------------------- the comment


def test_a_refused_plan_comment_leads_with_the_refusals_and_how_to_proceed(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request()
    _, verdict = comment(env, pr, [PRUNE])
    assert verdict.refused == (PRUNE,)
    text = body(fake_github, pr)
    record = Record.parse(text.split("\n", 1)[1])
    assert record == Record(frozenset({refusal_key(PRUNE)}))
    caution = text.index("apply would refuse this plan")
    assert caution < text.index("+1 create")  # before the summary
    assert "`fleet-sync:force` label" in text and "someone with write access" in text
    assert "apply would refuse this plan" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()


def test_a_writers_label_accepts_what_the_comment_showed_and_apply_forces_it(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request()
    comment(env, pr, [PRUNE])  # the plan reviewed: refused
    fake_github.add_label(pr, LABEL, by="alice")
    line, verdict = comment(env, pr, [PRUNE])  # the plan run on `labeled`
    assert verdict == Verdict((), (PRUNE,), "@alice's fleet-sync:force label")
    assert "1 refusal(s) accepted by @alice's fleet-sync:force label" in line
    text = body(fake_github, pr)
    assert "apply would refuse" not in text
    assert "Accepted by @alice's fleet-sync:force label (1)" in text
    # Merged: apply reads the label and our comment, and forces exactly that refusal.
    fake_github.issues[pr]["merged_at"] = "2026-01-02T00:00:00Z"
    fake_github.set_commit_pulls(SHA, [pr])
    review = gitops.reviewed_force(env, plan().fleet)
    assert judge([PRUNE], review.acceptance) == Verdict(
        (), (PRUNE,), f"@alice's fleet-sync:force label on #{pr}"
    )
    # A refusal the reviewed plan did not have still refuses.
    assert judge([PRUNE, CONFLICT], review.acceptance).refused == (CONFLICT,)


def test_a_maintainers_label_counts(fake_github: FakeGitHub, env: dict[str, str]) -> None:
    pr = fake_github.add_pull_request()
    comment(env, pr, [PRUNE])
    fake_github.add_label(pr, LABEL, by="maia")
    assert comment(env, pr, [PRUNE])[1].accepted == (PRUNE,)


@pytest.mark.parametrize(("who", "access"), [("mallory", "read"), ("stranger", "none")])
def test_a_label_by_someone_without_write_access_is_ignored_and_said(
    fake_github: FakeGitHub, env: dict[str, str], who: str, access: str
) -> None:
    pr = fake_github.add_pull_request()
    comment(env, pr, [PRUNE])
    fake_github.add_label(pr, LABEL, by=who)
    line, verdict = comment(env, pr, [PRUNE])
    assert verdict == Verdict((PRUNE,))
    said = f"@{who} added the {LABEL} label but has {access} access to the repository, not write"
    assert said in line and said in body(fake_github, pr)
    fake_github.issues[pr]["merged_at"] = "2026-01-02T00:00:00Z"
    fake_github.set_commit_pulls(SHA, [pr])
    review = gitops.reviewed_force(env, plan().fleet)
    assert review.acceptance is None and said in review.notes[0]


def test_a_refusal_new_since_the_label_is_not_accepted(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request()
    comment(env, pr, [PRUNE])
    fake_github.add_label(pr, LABEL, by="alice")
    comment(env, pr, [PRUNE])
    # A push after the label adds a conflict: the label never saw it.
    line, verdict = comment(env, pr, [PRUNE, CONFLICT])
    assert verdict == Verdict((CONFLICT,), (PRUNE,), "@alice's fleet-sync:force label")
    assert "1 refusal(s) were not in this comment when @alice added" in line
    # Merged like that: apply forces the prune only, and still refuses the conflict.
    fake_github.issues[pr]["merged_at"] = "2026-01-02T00:00:00Z"
    fake_github.set_commit_pulls(SHA, [pr])
    review = gitops.reviewed_force(env, plan().fleet)
    assert judge([PRUNE, CONFLICT], review.acceptance).refused == (CONFLICT,)
    # The label added again after review accepts it.
    fake_github.remove_label(pr, LABEL, by="alice")
    fake_github.add_label(pr, LABEL, by="alice")
    assert comment(env, pr, [PRUNE, CONFLICT])[1].refused == ()


def test_a_label_added_before_any_plan_was_shown_accepts_nothing(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request()
    fake_github.add_label(pr, LABEL, by="alice")
    assert comment(env, pr, [PRUNE])[1].refused == (PRUNE,)


def test_apply_ignores_a_label_added_after_the_last_plan(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request(merged=True)
    comment(env, pr, [PRUNE])  # refused, and never planned again
    fake_github.add_label(pr, LABEL, by="alice")
    fake_github.set_commit_pulls(SHA, [pr])
    review = gitops.reviewed_force(env, plan().fleet)
    assert review.acceptance is None
    assert "added after its plan was last made" in review.notes[0]


def test_a_label_on_an_open_pull_request_of_the_commit_is_not_the_merged_one(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    pr = fake_github.add_pull_request()
    comment(env, pr, [PRUNE])
    fake_github.add_label(pr, LABEL, by="alice")
    comment(env, pr, [PRUNE])
    fake_github.set_commit_pulls(SHA, [pr])  # open, not merged
    assert gitops.reviewed_force(env, plan().fleet).acceptance is None


def test_the_apply_result_names_the_labeller(fake_github: FakeGitHub, env: dict[str, str]) -> None:
    from .test_targets_gitops import applied

    pr = fake_github.add_pull_request(merged=True)
    fake_github.set_commit_pulls(SHA, [pr])
    forced = Verdict((), (PRUNE,), f"@alice's fleet-sync:force label on #{pr}")
    gitops.comment_result(applied(plan()), env, forced=forced)
    (result,) = [c["body"] for c in fake_github.comments_on(pr)]
    assert f"Forced, accepted by @alice's fleet-sync:force label on #{pr} (1)" in result
    assert PRUNE in result


def test_over_targets_each_exits_on_its_own_verdict_and_the_run_on_the_worst() -> None:
    from sync.core.promotion import worst
    from sync.run.plan import target_code
    from sync.run.reading import TargetPlan

    changed = plan()
    # Only the plan and its refusals decide a target's code.
    staging = TargetPlan("staging", None, None, None, changed, (PRUNE,))  # type: ignore[arg-type]
    prod = TargetPlan("prod", None, None, None, changed, ())  # type: ignore[arg-type]
    assert target_code(staging, {}, True) == EXIT_REFUSED
    assert target_code(staging, {}, False) == EXIT_REFUSED
    assert target_code(prod, {}, True) == EXIT_CHANGES
    accepted: dict[str | None, Verdict] = {
        "staging": Verdict((), (PRUNE,), "@alice's fleet-sync:force label")
    }
    assert target_code(staging, accepted, True) == EXIT_CHANGES
    codes = [target_code(staging, {}, True), target_code(prod, {}, True)]
    assert worst(codes) == EXIT_REFUSED
    assert worst([*codes, 4]) == 4 and worst([*codes, 4, 1]) == 1  # 1 > 4 > 3 > 2 > 0
