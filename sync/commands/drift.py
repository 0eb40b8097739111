"""drift: fleet.yaml against the proxy, exit 2 while they differ; --fix applies, --github-issue
keeps the drift issue."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import (
    CONCURRENCY,
    EXIT_CHANGES,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_REFUSED,
    Exit,
    bound,
    check_can_write,
    connect,
    current_plan,
    on_github,
    read_fleet,
    run_apply,
    show_plan,
    with_source,
    write_key,
)
from sync.commands.health_options import gate_plan, run_ref, run_trust
from sync.commands.options import fleet_option, format_option, read_proxy_options
from sync.commands.targets import target_option
from sync.live.state import CONFIRM_TIMEOUT
from sync.secrets import display


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
    from sync.core.ownership import Owner
    from sync.core.plan import Plan
    from sync.core.safety import refusals
    from sync.gitops import loops as gitops
    from sync.report.text import result_text

    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    if fleet.targets or target_names:
        from sync.commands import target_drift, target_plans
        from sync.commands.targets import note_unused_environment, overrides, select

        targets = select(fleet, target_names)
        reading = target_plans.Reading(
            fleet, fleet_file, fix, overrides(fleet, target_names, proxy_urls, api_key),
            timeout, False, target_plans.Health(False, False, PROBE_TIMEOUT),
            run_ref(fleet_file),
        )  # fmt: skip
        note_unused_environment(targets)
        target_drift.run_drift(reading, targets, fmt, fix, github_issue)
        return
    code = EXIT_OK
    with connect(proxy_urls, write_key(api_key) if fix else api_key, timeout) as client:
        # health: probe|require in fleet.yaml holds for drift (and --fix) as for apply.
        trust = run_trust(fleet_file)

        def gated() -> Plan:
            live = current_plan(fleet, client, fleet_file=fleet_file)
            # Bound as plan binds it, so drift and plan say one hash for one state.
            return bound(
                gate_plan(fleet, live, False, False, PROBE_TIMEOUT, trust), fleet, client.urls
            )

        the_plan = gated()
        show_plan(the_plan, fmt)
        if fix and not the_plan.empty:
            unsafe = refusals(the_plan, fleet.max_prune_percent)
            if unsafe:
                fixed = display.text(" | ".join(unsafe))  # reasons quote the proxy's names
                click.echo(f"error: --fix refused: {fixed}", err=True)
                code = EXIT_REFUSED
            else:
                check_can_write(client)
                result = run_apply(the_plan, client, Owner(fleet), CONCURRENCY, CONFIRM_TIMEOUT)
                # --format json: stdout is the one document (the drift found); the fix's
                # result is told on stderr.
                click.echo(result_text(result), nl=False, err=fmt == "json")
                code = EXIT_OK if result.complete else EXIT_INCOMPLETE
                the_plan = gated()
    if github_issue:
        on_github(lambda: gitops.report_drift(the_plan, os.environ))
    if code != EXIT_OK:
        raise Exit(code)
    if not the_plan.empty:
        raise Exit(EXIT_CHANGES)
