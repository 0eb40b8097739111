"""plan: what apply would do, read from the proxy; writes nothing to it."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.collector import held as collector_held
from sync.commands.common import proxy_options, trusted_ref
from sync.commands.options import (
    fleet_option,
    format_option,
    health_options,
    read_proxy_options,
    take_over_option,
    target_option,
)
from sync.run.console import EXIT_OK, Exit


@click.command()
@fleet_option
@read_proxy_options
@format_option("text", "markdown", "json")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Save the plan as JSON; apply --plan refuses it once live state moved.",
)
@click.option("--detailed-exitcode", is_flag=True, help="Exit 2 when there are changes.")
@click.option(
    "--github-comment",
    is_flag=True,
    help="Post the plan as the pull request's sticky comment (GITHUB_TOKEN, GITHUB_REPOSITORY, "
    "GITHUB_EVENT_PATH) and to $GITHUB_STEP_SUMMARY, split into this PR's changes and drift.",
)
@click.option(
    "--base-ref",
    metavar="REF",
    help="What 'this PR changes' is measured against (default: the event's base sha; the "
    "merge base with HEAD is used). Given, the run is a pull request's: fleet.yaml at that "
    "merge base is trusted (hosts' keys for --probe; with targets:, each target's proxy_url "
    "and keys).",
)
@health_options
@take_over_option
@target_option
def plan(
    fleet_file: Path,
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    github_comment: bool,
    base_ref: str | None,
    take_over: bool,
    probe: bool,
    require_healthy: bool,
    probe_timeout: float,
    target_names: tuple[str, ...],
) -> None:
    """Show what apply would create, update and prune (reads the proxy, writes nothing).

    Exits 3 when apply would refuse the plan (after printing it and posting the comment)."""
    from sync.run.plan import PlanOptions, run_plan
    from sync.run.reading import Clients, Health, Reading, read_fleet, selected, with_source

    # sync/collector.py, for the whole command: between its phases (load, read, plan, output)
    # the collector would walk everything the earlier phases built (~0.15 s at 10,000 routes).
    with collector_held():
        fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
        targets, proxy = selected(fleet, target_names, proxy_options(proxy_urls, api_key))
        options = PlanOptions(fmt, out, detailed_exitcode, github_comment, base_ref)
        with Clients(timeout) as clients:
            reading = Reading(
                fleet, fleet_file, False, proxy, clients, take_over,
                Health(probe, require_healthy, probe_timeout), trusted_ref(fleet_file, base_ref),
            )  # fmt: skip
            code = run_plan(reading, targets, options)
    if code != EXIT_OK:
        raise Exit(code)
