"""The GitOps loop on GitHub: the sticky plan comment, the apply result on the merged PR, the
drift issue. Each returns a one-line report. Before GitHub is asked anything, the full report is
saved as files for the job's artifact and added to the step summary (capped under GitHub's
1 MiB), so a GitHub failure (rate limit, 5xx) raises GitHubError having lost nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sync.core.health import Verified
from sync.core.plan import Plan, split_by_base
from sync.core.result import Result
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import parse_yaml
from sync.github.actions import GitHubConfig, GitHubError, read_event, write_step_summary
from sync.github.artifact import WHAT, ReportFiles
from sync.github.client import GitHubClient
from sync.github.comment import PlanComment, add_run, fit, marker_for
from sync.github.identity import AUTHOR_VARIABLE
from sync.gitops.gitref import GitRefError, file_at, merge_base
from sync.report.json_format import result_json
from sync.report.markdown import plan_markdown, pr_markdown, result_markdown
from sync.report.redaction import plan_json
from sync.secrets.display import code
from sync.secrets.scrub import scrub


def _keep(
    config: GitHubConfig,
    environ: Mapping[str, str],
    kind: str,
    plan: Plan,
    markdown: str,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """Save the full report as files, then add it to the step summary. Returns where the full
    text is, for the note of a comment that has to be cut."""
    where = ReportFiles.from_env(environ).save(
        plan.fleet, kind, markdown, {**plan_json(plan), **(extra or {})}
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
    (`plan_for` plans a fleet against them the way the head's plan was made), and a note on it
    in markdown (git's message, which quotes the ref, in a code span)."""
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
) -> str:
    """pr_number: the pull request to comment on when the event is not a pull_request one
    (the host-moved workflow opens the PR itself); default: the event's."""
    config = GitHubConfig.from_env(environ)
    ref = base_ref or _base_sha(config)
    base, note = base_plan(fleet_file, ref, plan_for) if ref else (None, "no base ref given")
    this_pr, drift = split_by_base(plan, base)
    body = scrub(pr_markdown(plan, this_pr, drift, note, refusals))
    where = _keep(config, environ, "plan", plan, body)
    with GitHubClient(config) as github:
        number = pr_number or github.pull_request_number()
        if number is None:
            raise GitHubError(
                "GITHUB_EVENT_PATH holds no pull_request: run this on pull_request events"
            )
        comment = PlanComment(plan.fleet, plan.hash, "plan", fit(body, note=where))
        ref_ = github.upsert_sticky_comment(number, comment.marker, comment.render())
        note = github.identity_note("posted a new comment, edited none")
    return f"plan comment {ref_.action} on pull request #{number}: {ref_.url}{note}"


def comment_result(
    result: Result, environ: Mapping[str, str], verified: Sequence[Verified] = ()
) -> str:
    """The result in the job summary (once, first), then on each pull request merged as
    GITHUB_SHA, on top of what earlier runs of the job reported there (in our own result
    comment: a comment by anyone else is never edited nor copied)."""
    config = GitHubConfig.from_env(environ)
    outcomes = {"complete": result.complete, "outcomes": result_json(result)["outcomes"]}
    summary = scrub(_result_body(result, "", verified))
    where = _keep(config, environ, "apply", result.plan, summary, outcomes)
    if not config.sha:
        raise GitHubError("GITHUB_SHA is not set: cannot find the merged pull request")
    marker = marker_for(result.plan.fleet, "apply")
    with GitHubClient(config) as github:
        numbers = github.pull_requests_for_commit(config.sha)
        posted = []
        for number in numbers:
            note = _reviewed_note(github, number, result.plan)
            run = scrub(_result_body(result, note, verified))
            existing = github.find_comment(number, marker)
            earlier = PlanComment.parse(str(existing.get("body") or "")) if existing else None
            body = add_run(run, earlier.body if earlier else None, note=where)
            comment = PlanComment(result.plan.fleet, result.plan.hash, "apply", body)
            posted.append(github.upsert_sticky_comment(number, marker, comment.render()))
        note = github.identity_note("posted new comments, edited and copied none")
    if not numbers:
        return f"no pull request is associated with {config.sha[:12]}; result in the job summary"
    return "; ".join(f"apply result {c.action}: {c.url}" for c in posted) + note


def _result_body(result: Result, note: str, verified: Sequence[Verified]) -> str:
    if result.outcomes or result.plan.withheld or verified:
        return result_markdown(result, note, verified)
    # A re-run after a successful apply: say so, and add_run keeps what the first run did.
    return (
        f"### fleet-sync apply for {code(result.plan.fleet)}: nothing to do\n\n"
        "The proxy already matched fleet.yaml when this job ran (again).\n\n"
        f"<sub>plan hash `{result.plan.hash}`</sub>\n"
    )


def _reviewed_note(github: GitHubClient, number: int, applied: Plan) -> str:
    """Whether the plan applied is the one our plan comment showed; a plan comment by anyone
    else is not the review, whatever hash it carries."""
    ours = github.find_comment(number, marker_for(applied.fleet, "plan"))
    reviewed = PlanComment.parse(str(ours.get("body") or "")) if ours else None
    if reviewed is None or reviewed.kind != "plan" or reviewed.fleet != applied.fleet:
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


def report_drift(plan: Plan, environ: Mapping[str, str]) -> str:
    config = GitHubConfig.from_env(environ)
    report = scrub(plan_markdown(plan, title=f"Drift in fleet {code(plan.fleet)}"))
    where = _keep(config, environ, "drift", plan, report)
    body = None if plan.empty else fit(report, note=where)
    with GitHubClient(config) as github:
        action = github.sync_drift_issue(plan.fleet, body)
        note = github.identity_note("closed none" if body is None else "opened a new issue")
    if action.action == "none":
        return "no drift" + (note or " and no open drift issue")
    return f"drift issue #{action.number} {action.action}{note}"
