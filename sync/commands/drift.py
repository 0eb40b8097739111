"""drift: fleet.yaml against the proxy, exit 2 while they differ; --fix applies, --github-issue
keeps the drift issue."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import proxy_options, trusted_ref
from sync.commands.options import fleet_option, format_option, read_proxy_options, target_option
from sync.run.console import EXIT_OK, Exit


@click.command()
@fleet_option
@read_proxy_options
@format_option("text", "markdown", "json")
@click.option(
    "--github-issue",
    is_flag=True,
    help="Open or update one drift issue per fleet (label fleet-drift); close it once clean.",
)
@click.option(
    "--fix",
    is_flag=True,
    help="Self-heal: apply when there is drift (safety applies; needs LITELLM_PROXY_API_KEY).",
)
@target_option
def drift(
    fleet_file: Path,
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    fmt: str,
    github_issue: bool,
    fix: bool,
    target_names: tuple[str, ...],
) -> None:
    """Report drift between fleet.yaml and the proxy; exit 2 while there is any."""
    from sync.core.health import PROBE_TIMEOUT
    from sync.run.drift import DriftOptions, run_drift
    from sync.run.interrupt import handled
    from sync.run.reading import Clients, Health, Reading, read_fleet, selected, with_source

    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    # --fix without targets writes with the write key; with them each target's entry says.
    given = proxy_options(proxy_urls, api_key, write_key=fix and not fleet.targets)
    targets, proxy = selected(fleet, target_names, given)
    with Clients(timeout) as clients, handled() as signals:
        # health: probe|require in fleet.yaml holds for drift (and --fix) as for apply.
        reading = Reading(
            fleet, fleet_file, fix, proxy, clients, False, Health(False, False, PROBE_TIMEOUT),
            trusted_ref(fleet_file),
        )  # fmt: skip
        code = run_drift(reading, targets, DriftOptions(fmt, fix, github_issue), signals)
    if code != EXIT_OK:
        raise Exit(code)
