"""propose's plans: fleet.yaml as set-host left it, planned on every proxy the moved host goes
to (without targets: the one), each shown and made a section of the pull request's comment."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sync.run.console import Exit, err, fail, out
from sync.run.reading import Reading, base_plan, plan_all, select
from sync.run.show import header
from sync.secrets import display

if TYPE_CHECKING:
    from sync.fleet.targets import Target
    from sync.gitops.host_moved import Section


def receiving(reading: Reading, model: str, host: str) -> tuple[Target, ...]:
    """The targets the host goes to (with a note for each it does not); none without targets."""
    from sync.fleet.targets import for_target
    from sync.run.endpoint import note_unused_environment

    receives = []
    for target in select(reading.fleet, ()):
        projected = for_target(reading.fleet, target.name)
        if any(h.name == host for m in projected.models if m.name == model for h in m.hosts):
            receives.append(target)
        else:
            note = f"note: {model}/{host} does not go to target {target.name}: not planned"
            err(display.text(note))
    if reading.fleet.targets:
        note_unused_environment(receives)
    return tuple(receives)


def sections(reading: Reading, model: str, host: str) -> list[Section]:
    """The plan of every proxy the host goes to, one section each in promotion order, shown as
    text. A target that cannot be planned here is a section without a plan (it blocks
    --automerge); without targets, a proxy that cannot be read stops propose."""
    from sync.gitops.host_moved import Section
    from sync.report.text import plan_text

    targets = receiving(reading, model, host)
    found = []
    for outcome in plan_all(reading, targets):
        value = outcome.value
        if outcome.target is not None:
            out(header("text", outcome.target))
        if value is None:
            if outcome.target is None:
                raise Exit(outcome.code, outcome.error)
            out(f"target {outcome.target} could not be planned (exit {outcome.code}): "
                f"{outcome.error}\n")  # fmt: skip
            found.append(Section(outcome.target, None, None, error=outcome.error))
            continue
        out(plan_text(value.plan, False, value.unsafe))
        found.append(Section(value.name, value.plan, base_plan(reading, value), value.unsafe))
    return found


def run_propose(
    reading: Reading, model: str, host: str, base: str, apply_workflow: str | None
) -> None:
    """fleet.yaml as set-host left it: one commit on the host's branch, its pull request opened
    or updated, the plan comment on it; `apply_workflow` (not None: --automerge) merges when
    the plan only moves the host, then starts that workflow ('' for none)."""
    from sync.github.actions import GitHubError
    from sync.gitops import host_moved
    from sync.gitops.gitref import GitRefError

    fleet, fleet_file = reading.fleet, reading.fleet_file
    hosts = {h.name: h for m in fleet.models if m.name == model for h in m.hosts}
    if host not in hosts:
        fail(f"{fleet_file}: no host {host!r} in model {model!r}; run set-host first")
    try:
        with host_moved.client(os.environ) as github:
            proposal = host_moved.propose(
                github, fleet_file, model, host, hosts[host].api_base, base
            )
            if proposal.number is None:
                out(f"nothing to propose: {base} already says this; no open pull request\n")
                return
            out(f"pull request #{proposal.number} {proposal.action}: {proposal.url}\n")
            if proposal.action == "closed":
                return
            merge = None if apply_workflow is None else (base, apply_workflow)
            for line in host_moved.comment_and_maybe_merge(
                github, proposal, model, host, fleet_file, sections(reading, model, host),
                os.environ, merge,
            ):  # fmt: skip
                out(display.text(line) + "\n")  # may quote a probed upstream's answer
    except (GitHubError, GitRefError) as exc:
        fail(f"GitHub: {exc}" if isinstance(exc, GitHubError) else str(exc))
