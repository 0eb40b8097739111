"""propose: fleet.yaml as set-host left it, as a pull request with its plan comment (and
an automatic merge when asked and the plan only moves the host)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import head_ref, proxy_options
from sync.commands.options import fleet_option, health_options, read_proxy_options
from sync.run.console import fail
from sync.secrets import display


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
    "then start the apply workflow. A new address that needs a key waits for a review. With "
    "targets: in fleet.yaml, every target the host goes to must plan so, and be planned.",
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

    Run after `fleet-sync set-host MODEL HOST --api-base URL` in a checkout of BRANCH. With
    targets: in fleet.yaml, every target the host goes to is planned on its own proxy (its
    read key), one plan comment each.
    """
    from sync.github.actions import GitHubError
    from sync.gitops import host_moved
    from sync.gitops.gitref import GitRefError
    from sync.run.endpoint import check_overrides
    from sync.run.propose import sections
    from sync.run.reading import Clients, Health, Reading, read_fleet, with_source

    if not base:
        fail("no base branch: pass --base BRANCH (GitHub Actions sets GITHUB_REF_NAME)")
    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    hosts = {h.name: h for m in fleet.models if m.name == model for h in m.hosts}
    if host not in hosts:
        fail(f"{fleet_file}: no host {host!r} in model {model!r}; run set-host first")
    # With targets, --proxy-url / --api-key are refused here, before GitHub is asked.
    proxy = proxy_options(proxy_urls, api_key)
    if fleet.targets:
        proxy = check_overrides((), proxy)
    try:
        with host_moved.client(os.environ) as github, Clients(timeout) as clients:
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
            health = Health(probe or automerge, require_healthy, probe_timeout)
            reading = Reading(
                fleet, fleet_file, False, proxy, clients, False, health, head_ref(fleet_file)
            )
            merge = (base, apply_workflow) if automerge else None
            for line in host_moved.comment_and_maybe_merge(
                github, proposal, model, host, fleet_file, sections(reading, model, host),
                os.environ, merge,
            ):  # fmt: skip
                click.echo(display.text(line))  # may quote a probed upstream's answer
    except (GitHubError, GitRefError) as exc:
        fail(f"GitHub: {exc}" if isinstance(exc, GitHubError) else str(exc))
