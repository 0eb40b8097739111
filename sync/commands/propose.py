"""propose: fleet.yaml as set-host left it, as a pull request with its plan comment (and
an automatic merge when asked and the plan only moves the host)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import head_ref, proxy_options
from sync.commands.options import fleet_option, health_options, read_proxy_options
from sync.run.console import fail


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
    from sync.run.endpoint import check_overrides
    from sync.run.propose import run_propose
    from sync.run.reading import Clients, Health, Reading, read_fleet, with_source

    if not base:
        fail("no base branch: pass --base BRANCH (GitHub Actions sets GITHUB_REF_NAME)")
    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    # With targets, --proxy-url / --api-key are refused here, before GitHub is asked.
    proxy = proxy_options(proxy_urls, api_key)
    if fleet.targets:
        proxy = check_overrides((), proxy)
    # An automatic merge needs proof the new address serves: it always probes.
    health = Health(probe or automerge, require_healthy, probe_timeout)
    with Clients(timeout) as clients:
        reading = Reading(
            fleet, fleet_file, False, proxy, clients, False, health, head_ref(fleet_file)
        )
        run_propose(reading, model, host, base, apply_workflow if automerge else None)
