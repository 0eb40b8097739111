"""apply: converge the proxy (each target in promotion order), confirm by reading back."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import proxy_options, trusted_ref
from sync.commands.options import (
    Seconds,
    fleet_option,
    format_option,
    health_options,
    take_over_option,
    target_option,
)
from sync.commands.options import (
    proxy_options as proxy_option_flags,
)
from sync.live.state import CONFIRM_TIMEOUT
from sync.run.console import EXIT_OK, Exit
from sync.run.writes import CONCURRENCY, MAX_CONCURRENCY


@click.command()
@fleet_option
@proxy_option_flags
@click.option(
    "--plan",
    "saved",
    type=click.Path(exists=False, dir_okay=False, path_type=Path),
    help="Apply only if the live plan still equals this saved one (same hash).",
)
@click.option("--force", is_flag=True, help="Apply a plan the safety guards refuse.")
@click.option("--dry-run", is_flag=True, help="Print the plan, write nothing.")
@format_option("text", "json")
@click.option(
    "--concurrency",
    default=CONCURRENCY,
    show_default=True,
    type=click.IntRange(1, MAX_CONCURRENCY),
    help="Parallel writes per stage, on each pod.",
)
@click.option(
    "--write-to",
    type=click.Choice(["spread", "first"]),
    default="spread",
    show_default=True,
    help="With several pods: spread writes over them (each route always to the same pod), or "
    "send every write to the first.",
)
@click.option(
    "--confirm-timeout",
    default=CONFIRM_TIMEOUT,
    show_default=True,
    type=Seconds(),
    metavar="SECONDS",
    help="How long read-back waits for every pod to show the changes (LiteLLM pods "
    "reload from the database every 30 s by default).",
)
@click.option(
    "--github-comment",
    is_flag=True,
    help="Post the result on the pull request merged as GITHUB_SHA.",
)
@health_options
@click.option(
    "--verify",
    is_flag=True,
    help="After apply, send one max_tokens=1 chat request per changed model group through the "
    "proxy and report which host answered; a failed one exits 4.",
)
@take_over_option
@target_option
def apply(
    fleet_file: Path,
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    saved: Path | None,
    force: bool,
    dry_run: bool,
    fmt: str,
    concurrency: int,
    write_to: str,
    confirm_timeout: float,
    github_comment: bool,
    take_over: bool,
    probe: bool,
    require_healthy: bool,
    probe_timeout: float,
    verify: bool,
    target_names: tuple[str, ...],
) -> None:
    """Converge the proxy: create, then update, then prune; confirm by reading back.

    With targets: in fleet.yaml, each target in promotion order; one whose predecessors in this
    run did not converge is held (not written to). SIGINT or SIGTERM: no new write starts, the
    writes in flight settle, the result is printed (and posted), exit 130 or 143."""
    from sync.run.apply import ApplyOptions, run_apply
    from sync.run.interrupt import handled
    from sync.run.reading import Clients, Health, Reading, read_fleet, selected, with_source

    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    targets, proxy = selected(fleet, target_names, proxy_options(proxy_urls, api_key))
    options = ApplyOptions(fmt, force, dry_run, concurrency, verify, github_comment, saved)
    with Clients(timeout, write_to == "spread") as clients, handled() as signals:
        reading = Reading(
            fleet, fleet_file, True, proxy, clients, take_over,
            Health(probe, require_healthy, probe_timeout), trusted_ref(fleet_file),
            confirm_timeout,
        )  # fmt: skip
        code = run_apply(reading, targets, options, signals)
    if code != EXIT_OK:
        raise Exit(code)
