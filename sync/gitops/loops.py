"""The GitOps loop on GitHub: the sticky plan comment, the apply result on the merged PR, the
drift issue. Each returns a one-line report. For a fleet with `targets:` the commands call each
once per target (`target=NAME`): every (fleet, target) has its own comment, result and issue,
under a marker that names the target (sync/github/comment.py); `target=None` is a fleet without
targets, exactly as before targets existed. Before GitHub is asked anything, the full report is
saved as files for the job's artifact and added to the step summary (capped under GitHub's
1 MiB), so a GitHub failure (rate limit, 5xx) raises GitHubError having lost nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sync.core.health import Verified
from sync.core.plan import Plan, split_by_base
from sync.core.result import Result
from sync.core.verdict import Verdict, judge
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import parse_yaml
from sync.github.actions import GitHubConfig, GitHubError, read_event, write_step_summary
from sync.github.artifact import WHAT, ReportFiles
from sync.github.client import GitHubClient
from sync.github.comment import PlanComment, add_run, check_target, comment_limit, fit, marker_for
from sync.github.identity import AUTHOR_VARIABLE
from sync.gitops import force
from sync.gitops.gitref import GitRefError, file_at, merge_base
from sync.report.json_format import result_json
from sync.report.markdown import on_target, plan_markdown, pr_markdown, result_markdown
from sync.report.redaction import plan_json
from sync.secrets.display import code, text
from sync.secrets.scrub import scrub


def _keep(
    config: GitHubConfig,
    environ: Mapping[str, str],
    kind: str,
    plan: Plan,
    markdown: str,
    extra: Mapping[str, Any] | None = None,
    target: str | None = None,
) -> str:
    """Save the full report as files, then add it to the step summary. Returns where the full
    text is, for the note of a comment that has to be cut."""
    named = {} if target is None else {"target": target}
    where = ReportFiles.from_env(environ).save(
        plan.fleet, kind, markdown, {**plan_json(plan), **named, **(extra or {})}, target
    )
    if write_step_summary(config, markdown, note=where):
        return f"the full {WHAT[kind]} is in the job summary"
    return where


def _base_sha(config: GitHubConfig) -> str | None:
    if not config.event_path:
        return None
    try:
        event = read_event(config.event_path)
        sha = event["pull_request"]["base"]["sha"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return sha if isinstance(sha, str) else None


def base_plan(
    fleet_file: Path, ref: str, plan_for: Callable[[Fleet], Plan]
) -> tuple[Plan | None, str]:
    """The plan fleet.yaml at the merge base would make against today's live routes
    (`plan_for` plans a fleet against them the way the head's plan was made; for one target,
    the base fleet as that target sees it), and a note on it in markdown (git's message, which
    quotes the ref, in a code span)."""
    try:
        base = merge_base(fleet_file.resolve().parent, ref)
        text = file_at(fleet_file, base)
    except GitRefError as exc:
        return None, f"no merge base ({code(str(exc))}): every change is counted as this PR's"
    if text is None:
        return None, f"fleet.yaml is new at {base[:12]}: every change is this PR's"
    try:
        fleet: Fleet = fleet_from_doc(parse_yaml(text, str(fleet_file)), str(fleet_file))
    except FleetError:
        return (
            None,
            f"fleet.yaml at the merge base {base[:12]} is invalid: every change is this PR's",
        )
    return plan_for(fleet), f"compared with fleet.yaml at the merge base {base[:12]}"


def comment_plan(
    fleet_file: Path,
    plan: Plan,
    plan_for: Callable[[Fleet], Plan],
    refusals: Sequence[str],
    base_ref: str | None,
    environ: Mapping[str, str],
    pr_number: int | None = None,
    *,
    target: str | None = None,
) -> str:
    """pr_number: the pull request to comment on when the event is not a pull_request one
    (the host-moved workflow opens the PR itself); default: the event's. target: the plan is
    that target's (`plan_for` plans the base fleet for it): its own sticky comment. No label
    is read: every refusal is refused."""
    line, _ = comment_reviewed_plan(
        fleet_file, plan, plan_for, refusals, base_ref, environ, pr_number,
        target=target, read_label=False,
    )  # fmt: skip
    return line


def comment_reviewed_plan(
    fleet_file: Path,
    plan: Plan,
    plan_for: Callable[[Fleet], Plan],
    refusals: Sequence[str],
    base_ref: str | None,
    environ: Mapping[str, str],
    pr_number: int | None = None,
    *,
    target: str | None = None,
    read_label: bool = True,
) -> tuple[str, Verdict]:
    """The sticky plan comment, led by apply's verdict on `refusals` under the pull request's
    reviewed force (`read_label`: its fleet-sync:force label, sync/gitops/force.py); returns
    the log line and that verdict (the plan's exit code: 3 while anything stays refused)."""
    marker = marker_for(plan.fleet, "plan", target)  # a bad target fails before anything
    config = GitHubConfig.from_env(environ)
    ref = base_ref or _base_sha(config)
    base, note = base_plan(fleet_file, ref, plan_for) if ref else (None, "no base ref given")
    this_pr, drift = split_by_base(plan, base)
    with GitHubClient(config) as github:
        number = pr_number or github.pull_request_number()
        review = force.Review()
        try:
            if number is not None and read_label and refusals:
                review = force.at_plan(github, number, plan.fleet, target, refusals)
        finally:  # a failed look at the label still leaves the report (all refused)
            verdict = judge(refusals, review.acceptance)
            notes = review.notes
            body = scrub(pr_markdown(plan, this_pr, drift, note, (), target, verdict, notes))
            where = _keep(config, environ, "plan", plan, body, target=target)
        if number is None:
            raise GitHubError(
                "GITHUB_EVENT_PATH holds no pull_request: run this on pull_request events"
            )
        record = review.record(refusals).line()
        fitted = fit(f"{record}\n{body}", comment_limit(target), note=where)
        comment = PlanComment(plan.fleet, plan.hash, "plan", fitted, target)
        ref_ = github.upsert_sticky_comment(number, marker, comment.render())
        note = github.identity_note("posted a new comment, edited none")
    said = "".join(f"; {n}" for n in notes)
    if verdict.accepted:
        said += f"; {len(verdict.accepted)} refusal(s) accepted by {verdict.by}"
    line = f"plan comment{_for(target)} {ref_.action} on pull request #{number}: {ref_.url}{note}"
    return line + said, verdict


def _for(target: str | None) -> str:
    """What a one-line report adds for a target ("" without one)."""
    return "" if target is None else f" for target {text(target)}"


def comment_result(
    result: Result,
    environ: Mapping[str, str],
    verified: Sequence[Verified] = (),
    *,
    target: str | None = None,
    forced: Verdict | None = None,
) -> str:
    """`forced`: the verdict apply ran under when it overrode refusals (named in the result).
    The result in the job summary (once, first), then on each pull request merged as
    GITHUB_SHA, on top of what earlier runs of the job reported there (in our own result
    comment: a comment by anyone else is never edited nor copied). target: the result is that
    target's, in its own result comment, checked against its own plan comment."""
    marker = marker_for(result.plan.fleet, "apply", target)  # a bad target fails first
    config = GitHubConfig.from_env(environ)
    outcomes = {"complete": result.complete, "outcomes": result_json(result)["outcomes"]}
    summary = scrub(_result_body(result, "", verified, target, forced))
    where = _keep(config, environ, "apply", result.plan, summary, outcomes, target)
    if not config.sha:
        raise GitHubError("GITHUB_SHA is not set: cannot find the merged pull request")
    with GitHubClient(config) as github:
        numbers = github.pull_requests_for_commit(config.sha)
        posted = []
        for number in numbers:
            note = _reviewed_note(github, number, result.plan, target)
            run = scrub(_result_body(result, note, verified, target, forced))
            existing = github.find_comment(number, marker)
            earlier = PlanComment.parse(str(existing.get("body") or "")) if existing else None
            body = add_run(
                run, earlier.body if earlier else None, comment_limit(target), note=where
            )
            comment = PlanComment(result.plan.fleet, result.plan.hash, "apply", body, target)
            posted.append(github.upsert_sticky_comment(number, marker, comment.render()))
        note = github.identity_note("posted new comments, edited and copied none")
    if not numbers:
        return (
            f"no pull request is associated with {config.sha[:12]}; result{_for(target)} in "
            "the job summary"
        )
    return "; ".join(f"apply result{_for(target)} {c.action}: {c.url}" for c in posted) + note


def _result_body(
    result: Result,
    note: str,
    verified: Sequence[Verified],
    target: str | None,
    forced: Verdict | None = None,
) -> str:
    if result.outcomes or result.plan.withheld or verified or (forced and forced.accepted):
        return result_markdown(result, note, verified, target, forced)
    # A re-run after a successful apply: say so, and add_run keeps what the first run did.
    return (
        f"### fleet-sync apply for {code(result.plan.fleet)}{on_target(target)}: nothing to do"
        "\n\n"
        "The proxy already matched fleet.yaml when this job ran (again).\n\n"
        f"<sub>plan hash `{result.plan.hash}`</sub>\n"
    )


def _reviewed_note(github: GitHubClient, number: int, applied: Plan, target: str | None) -> str:
    """Whether the plan applied is the one our plan comment (of the same target) showed; a plan
    comment by anyone else is not the review, whatever hash it carries."""
    ours = github.find_comment(number, marker_for(applied.fleet, "plan", target))
    reviewed = PlanComment.parse(str(ours.get("body") or "")) if ours else None
    if (
        reviewed is None
        or reviewed.kind != "plan"
        or reviewed.fleet != applied.fleet
        or reviewed.target != target
    ):
        if not github.identity_unknown:
            return ""
        return (
            "The plan reviewed in this pull request could not be checked: the token's identity "
            f"is unknown, so no plan comment is trusted (set {AUTHOR_VARIABLE})."
        )
    if reviewed.plan_hash != applied.hash:
        return (
            f"The plan applied ({applied.hash[:19]}…) differs from the plan reviewed in this "
            f"pull request ({code(reviewed.plan_hash[:19] + '…')}): live state moved after the "
            "review."
        )
    return ""


def report_drift(plan: Plan, environ: Mapping[str, str], *, target: str | None = None) -> str:
    """Open, update or close the drift issue of the fleet, or of its `target`: each (fleet,
    target) has its own, and closing one never touches another's."""
    check_target(target)
    config = GitHubConfig.from_env(environ)
    title = f"Drift in fleet {code(plan.fleet)}{on_target(target)}"
    report = scrub(plan_markdown(plan, title=title))
    where = _keep(config, environ, "drift", plan, report, target=target)
    body = None if plan.empty else fit(report, note=where)
    with GitHubClient(config) as github:
        action = github.sync_drift_issue(plan.fleet, body, target)
        note = github.identity_note("closed none" if body is None else "opened a new issue")
    if action.action == "none":
        return "no drift" + _for(target) + (note or " and no open drift issue")
    return f"drift issue{_for(target)} #{action.number} {action.action}{note}"


def report_held(fleet: str, target: str, why: str, environ: Mapping[str, str]) -> str:
    """A target apply held behind its gate (`why`: "held: staging did not converge") gets no
    result comment (nothing was done), but the job summary and the report files say so: the
    reader of either learns why the job is exit 4."""
    check_target(target)
    config = GitHubConfig.from_env(environ)
    markdown = scrub(
        f"### fleet-sync apply for {code(fleet)}{on_target(target)}: **held**\n\n"
        f"{text(target)}: {text(why)}; nothing was sent to it.\n"
    )
    data = {"fleet": fleet, "target": target, "exit": 4, "held": why}
    where = ReportFiles.from_env(environ).save(fleet, "apply", markdown, data, target)
    write_step_summary(config, markdown, note=where)
    return f"held target {text(target)}: said in the job summary"


DRIFT_PER_TARGET = (
    "Closed: fleet.yaml now declares `targets:`, so drift is reported per target, each in its "
    "own issue (`Drift: … (fleet F, target T)`). This issue, for the fleet without targets, "
    "would never be updated again."
)


def retire_drift_issue(fleet: str, environ: Mapping[str, str]) -> str | None:
    """drift over targets: close fleet-sync's own drift issue of the fleet without targets (its
    marker, and the token's author), left open when the repository added `targets:`. Returns
    a line when one was closed."""
    config = GitHubConfig.from_env(environ)
    with GitHubClient(config) as github:
        action = github.close_drift_issues(fleet, None, DRIFT_PER_TARGET)
    if action.action == "none":
        return None
    return (
        f"drift issue #{action.number} of the fleet without targets closed: drift is now per target"
    )


def reviewed_force(
    environ: Mapping[str, str], fleet: str, target: str | None = None
) -> force.Review:
    """apply on a push: the reviewed force of the pull request merged as GITHUB_SHA (its
    fleet-sync:force label and our plan comment there, sync/gitops/force.py)."""
    config = GitHubConfig.from_env(environ)
    if not config.sha:
        raise GitHubError("GITHUB_SHA is not set: cannot find the merged pull request")
    with GitHubClient(config) as github:
        return force.at_apply(github, config.sha, fleet, target)
