"""propose: fleet.yaml as set-host left it, as a pull request with its plan comment (and
an automatic merge when asked and the plan only moves the host)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sync.commands.common import connect, fail, read_fleet, read_live, with_source
from sync.commands.health_options import gate_plan, head_trust, health_options
from sync.commands.options import fleet_option, read_proxy_options
from sync.secrets import display

if TYPE_CHECKING:
    from sync.core.plan import Plan
    from sync.fleet.model import Fleet
    from sync.live.state import LiveState


@click.command()
@click.argument("model")
@click.argument("host")
@fleet_option
@read_proxy_options
@click.option(
    "--base",
    envvar="GITHUB_REF_NAME",
    show_envvar=True,
    metavar="BRANCH",
    help="The branch the pull request goes into (the checked-out one).",
)
@click.option(
    "--automerge",
    is_flag=True,
    help="Merge when the plan only moves this host (one in-place update, no prune, nothing "
    "else) to an address the probe, sent without the host's key, shows serving the model; "
    "then start the apply workflow. A new address that needs a key waits for a review.",
)
@health_options
@click.option(
    "--apply-workflow",
    default="apply.yml",
    show_default=True,
    metavar="FILE",
    help="Workflow started after an automatic merge ('' for none).",
)
def propose(
    model: str,
    host: str,
    fleet_file: Path,
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    base: str | None,
    automerge: bool,
    probe: bool,
    require_healthy: bool,
    probe_timeout: float,
    apply_workflow: str,
) -> None:
    """Propose fleet.yaml as set-host left it: one commit on the host's branch, its pull
    request opened or updated, and the plan comment on it (GITHUB_TOKEN, GITHUB_REPOSITORY).

    Run after `fleet-sync set-host MODEL HOST --api-base URL` in a checkout of BRANCH.
    """
    from sync.core.safety import refusals
    from sync.github.actions import GitHubError
    from sync.gitops import host_moved
    from sync.gitops.gitref import GitRefError
    from sync.report.text import plan_text

    if not base:
        fail("no base branch: pass --base BRANCH (GitHub Actions sets GITHUB_REF_NAME)")
    fleet = with_source(read_fleet(fleet_file), fleet_file, os.environ)
    hosts = {h.name: h for m in fleet.models if m.name == model for h in m.hosts}
    if host not in hosts:
        fail(f"{fleet_file}: no host {host!r} in model {model!r}; run set-host first")
    try:
        with host_moved.client(os.environ) as github:
            proposal = host_moved.propose(
                github, fleet_file, model, host, hosts[host].api_base, base
            )
            if proposal.number is None:
                click.echo(f"nothing to propose: {base} already says this; no open pull request")
                return
            click.echo(f"pull request #{proposal.number} {proposal.action}: {proposal.url}")
            if proposal.action == "closed":
                return
            # An automatic merge needs proof the new address serves: it always probes.
            health = (probe or automerge, require_healthy, probe_timeout)
            live, the_plan = host_plan(fleet, fleet_file, (proxy_urls, api_key, timeout), health)
            unsafe = refusals(the_plan, fleet.max_prune_percent)
            click.echo(plan_text(the_plan, False, unsafe), nl=False)
            merge = (base, apply_workflow) if automerge else None
            for line in host_moved.comment_and_maybe_merge(
                github,
                proposal,
                model,
                host,
                fleet_file,
                the_plan,
                lambda base: live.plan(with_source(base, fleet_file, os.environ), False),
                unsafe,
                os.environ,
                merge,
            ):
                click.echo(display.text(line))  # may quote a probed upstream's answer
    except (GitHubError, GitRefError) as exc:
        fail(f"GitHub: {exc}" if isinstance(exc, GitHubError) else str(exc))


def host_plan(
    fleet: Fleet,
    fleet_file: Path,
    proxy: tuple[tuple[str, ...], str | None, float],
    health: tuple[bool, bool, float],
) -> tuple[LiveState, Plan]:
    """The live state and the plan of the proposed fleet.yaml, probed as `health` asks. Keys go
    only to addresses the checkout has: the payload's address is asked without one."""
    with connect(*proxy) as client:
        live = read_live(client, fleet, fleet_file=fleet_file)
    return live, gate_plan(fleet, live.plan(fleet, False), *health, head_trust(fleet_file))
