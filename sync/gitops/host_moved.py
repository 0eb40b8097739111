"""The host-moved loop: fleet.yaml as set-host left it becomes one commit on a branch named
after the host, a pull request (opened, or the open one updated), the plan comment on it, and,
when the repository opted in and the plan does nothing but move that host, the merge.

Pull requests and pushes made with a workflow's GITHUB_TOKEN start no other workflow, so this
posts the plan comment itself (the same sticky comment plan.yml edits) and, after a merge,
starts the apply workflow through workflow_dispatch, the one event that token may trigger.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sync.core.plan import Plan, Update
from sync.core.render import TAG_DIGEST, UNSAFE_NAME_CHARACTERS
from sync.fleet.model import Fleet
from sync.github.actions import GitHubConfig
from sync.github.pulls import PullRequestClient
from sync.gitops import loops as gitops
from sync.gitops.gitref import file_at, head_commit
from sync.secrets.display import code

BRANCH_PREFIX = "fleet-sync/host-moved"
# What a plan may change for a host move to merge without review: the address, and the digest
# tag that covers it.
MOVE_PATHS = frozenset({"litellm_params.api_base", f"model_info.{TAG_DIGEST}"})


def branch_name(model: str, host: str) -> str:
    """fleet-sync/host-moved/<model>/<host>, each part reduced to characters git and URLs take
    as they are; a short hash of the real names keeps two that reduce alike apart."""
    parts = []
    for name in (model, host):
        safe = UNSAFE_NAME_CHARACTERS.sub("-", name).strip(".-").replace("..", ".")[:60] or "x"
        if safe != name or safe.endswith(".lock"):
            safe = f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        parts.append(safe)
    return f"{BRANCH_PREFIX}/{parts[0]}/{parts[1]}"


# The payload's address was asked without the host's key (sync/gitops/keytrust.py): its answer is
# all an automatic merge may trust.
NEEDS_KEY = (
    "the new address wants a key, which fleet-sync does not send to an address from a dispatch "
    "payload: a person reviews it"
)


def automerge_refusal(plan: Plan, refusals: Sequence[str], model: str, host: str) -> str | None:
    """Why this plan is more than moving one host to an address proven, without its key, to
    serve its model (so a human reviews it), or None."""
    if refusals:
        return "the plan is refused by the safety checks"
    moved = next((h for h in plan.health or () if (h.model_name, h.host) == (model, host)), None)
    if moved is not None and moved.state == "needs_key":
        return NEEDS_KEY
    if plan.withheld:
        return f"a change is withheld ({plan.withheld[0].reason})"
    others = [c for c in plan.changes if (c.model_name, c.host) != (model, host)]
    if others:
        return f"the plan changes {len(others)} other route(s) too (drift or other edits)"
    if len(plan.changes) != 1 or not isinstance(plan.changes[0], Update):
        actions = ", ".join(c.action for c in plan.changes) or "nothing"
        return f"the plan for {model}/{host} is {actions}, not one in-place update"
    extra = sorted({d.path for d in plan.changes[0].diff} - MOVE_PATHS)
    if extra:
        return f"the update changes more than the address: {', '.join(extra)}"
    health = plan.health_of(model, host)
    if health is None:
        return "the new address was not probed (--probe): nothing proves it serves the model"
    if not health.serves:
        return f"the new address does not serve the model: {health.api_base} {health.summary()}"
    return None


@dataclass(frozen=True)
class Proposal:
    branch: str
    number: int | None  # None when there was nothing to propose
    url: str
    action: str  # opened | updated | unchanged | closed | nothing
    head: str  # the commit the pull request shows ("" when none)


def propose(
    github: PullRequestClient,
    fleet_file: Path,
    model: str,
    host: str,
    api_base: str,
    base: str,
) -> Proposal:
    """Commit fleet.yaml (as set-host left it) on top of the checkout, on the host's branch, and
    open or update that branch's pull request. When fleet.yaml equals the checkout, an open pull
    request for the host is stale (the host is back where the base branch says): it is closed."""
    branch = branch_name(model, host)
    parent, path = head_commit(fleet_file)
    content = fleet_file.read_bytes()
    existing = github.open_pull(branch)
    if file_at(fleet_file, parent) == content.decode("utf-8", errors="replace"):
        if existing is None:
            return Proposal(branch, None, "", "nothing", "")
        number = int(existing["number"])
        github.post_comment(
            number,
            f"Closed: {base} already has {code(model)}/{code(host)} at {code(api_base)}.",
        )
        github.edit_pull(number, state="closed")
        return Proposal(branch, number, str(existing.get("html_url") or ""), "closed", "")
    title = f"Move {model}/{host} to {api_base}"
    commit = github.commit_file(parent, path, content, f"{title}\n\nRequested by host-moved.")
    moved = github.point_branch(branch, commit)
    body = (
        f"Host {code(host)} of model {code(model)} moved to {code(api_base)}.\n\n"
        f"Opened by the host-moved workflow from a `host-moved` dispatch: `fleet-sync set-host` "
        f"changed only this host's `api_base` in `{path}`. The plan comment below shows what "
        "apply will do after the merge."
    )
    if existing is None:
        pull = github.create_pull(branch, base, title, body)
        action = "opened"
    else:
        pull = github.edit_pull(int(existing["number"]), title=title, body=body)
        action = "unchanged" if moved == "unchanged" else "updated"
    return Proposal(branch, int(pull["number"]), str(pull.get("html_url") or ""), action, commit)


@dataclass(frozen=True)
class Section:
    """One proxy's part of a proposal: a fleet without targets has one (target None); a fleet
    with targets one per target the host goes to. plan is None when that target could not be
    planned in this job (its endpoint unresolved, its proxy unreachable): `error` says why."""

    target: str | None
    plan: Plan | None
    plan_for: Callable[[Fleet], Plan] | None  # the base fleet planned the way `plan` was
    refusals: tuple[str, ...] = ()
    error: str | None = None


def merge_refusal(sections: Sequence[Section], model: str, host: str) -> str | None:
    """Why the proposal may not merge by itself: the first section whose plan is more than the
    move, or that could not be planned (an unknown plan is not a pure move)."""
    if not sections:
        return "no target receives this host: nothing was planned"
    for section in sections:
        where = "" if section.target is None else f"target {section.target}: "
        if section.plan is None:
            return f"{where}could not be planned ({section.error})"
        why = automerge_refusal(section.plan, section.refusals, model, host)
        if why:
            return where + why
    return None


def comment_and_maybe_merge(
    github: PullRequestClient,
    proposal: Proposal,
    model: str,
    host: str,
    fleet_file: Path,
    sections: Sequence[Section],
    environ: Mapping[str, str],
    merge: tuple[str, str] | None,
) -> list[str]:
    """The plan comment on the pull request (one per target with targets); with merge=(base,
    apply workflow) and every section's plan only moving the host, the merge and the apply run.
    Returns what happened, line by line."""
    assert proposal.number is not None
    parent, _ = head_commit(fleet_file)
    report = []
    for section in sections:
        if section.plan is None or section.plan_for is None:
            report.append(f"no plan comment for target {section.target}: {section.error}")
            continue
        report.append(
            gitops.comment_plan(
                fleet_file,
                section.plan,
                section.plan_for,
                section.refusals,
                parent,
                environ,
                pr_number=proposal.number,
                target=section.target,
            )
        )
    if merge is None:
        return report
    base, workflow = merge
    refusal = merge_refusal(sections, model, host)
    if refusal:
        return [*report, f"not merged automatically: {refusal}; it waits for a review"]
    sha = github.merge_pull(proposal.number, proposal.head, f"Move {model}/{host}")
    report.append(f"merged pull request #{proposal.number} into {base} ({sha[:12]})")
    if workflow:
        github.dispatch_workflow(workflow, base)
        report.append(f"started {workflow} on {base} (a merge by the workflow token starts none)")
    return report


def client(environ: Mapping[str, str]) -> PullRequestClient:
    return PullRequestClient(GitHubConfig.from_env(environ))
