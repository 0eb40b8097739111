"""apply: converge the proxy to fleet.yaml (create, update, prune), confirmed by read-back."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import (
    CONCURRENCY,
    EXIT_INCOMPLETE,
    EXIT_REFUSED,
    MAX_CONCURRENCY,
    Exit,
    apply_verdict,
    bound,
    check_can_write,
    connect,
    current_plan,
    fail,
    on_github,
    read_fleet,
    run_apply,
    show_plan,
    with_source,
)
from sync.commands.health_options import gate_plan, health_options, run_ref, run_trust
from sync.commands.options import (
    Seconds,
    fleet_option,
    format_option,
    proxy_options,
    take_over_option,
)
from sync.commands.targets import target_option
from sync.live.state import CONFIRM_TIMEOUT


@click.command()
@fleet_option
@proxy_options
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
    run did not converge is held (not written to)."""
    from sync.commands.health_options import verify_result
    from sync.commands.saved_plan import check_saved, read_saved
    from sync.core.ownership import Owner
    from sync.core.result import Result
    from sync.gitops import loops as gitops
    from sync.report.formats import format_named

    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    if fleet.targets or target_names:
        from sync.commands import target_apply, target_plans
        from sync.commands.targets import note_unused_environment, overrides, select

        targets = select(fleet, target_names)
        reading = target_plans.Reading(
            fleet, fleet_file, True, overrides(fleet, target_names, proxy_urls, api_key),
            timeout, take_over, target_plans.Health(probe, require_healthy, probe_timeout),
            run_ref(fleet_file), confirm_timeout,
        )  # fmt: skip
        options = target_apply.ApplyOptions(
            fmt, force, dry_run, concurrency, write_to == "spread", verify, github_comment
        )
        note_unused_environment(targets)
        target_apply.run_apply_targets(reading, targets, options, saved)
        return
    reviewed = read_saved(saved) if saved is not None else None  # before the proxy is asked
    with connect(proxy_urls, api_key, timeout, spread_writes=write_to == "spread") as client:
        live = current_plan(fleet, client, confirm_timeout, take_over, fleet_file)
        health = (probe, require_healthy, probe_timeout)
        the_plan = bound(gate_plan(fleet, live, *health, run_trust(fleet_file)), fleet, client.urls)
        if reviewed is not None:
            check_saved(reviewed, the_plan)  # a dry run previews exactly what apply would do
        verdict = apply_verdict(the_plan, fleet, force, github_comment)
        if dry_run or verdict.refused:
            show_plan(the_plan, fmt, verdict.refused)
            if verdict.refused:
                fail("refused: " + " | ".join(verdict.refused), EXIT_REFUSED)
            return
        if the_plan.empty:
            result = Result(the_plan, ())
        else:
            check_can_write(client)
            if format_named(fmt).plan_before_apply:
                show_plan(the_plan, fmt)
            result = run_apply(
                the_plan, client, Owner(fleet, take_over), concurrency, confirm_timeout
            )
    # api_key is set: connect() refuses to run without it.
    verified = (
        verify_result(result, fleet, client.write_url, api_key or "", timeout) if verify else ()
    )
    shown = format_named(fmt).show_result(result, verified if verify else None, client.write_url)
    click.echo(shown, nl=False)
    if github_comment:
        on_github(lambda: gitops.comment_result(result, os.environ, verified, forced=verdict))
    if the_plan.conflicts:
        say_conflicts(len(the_plan.conflicts))
    if not result.complete or not all(v.ok for v in verified):
        raise Exit(EXIT_INCOMPLETE)


def say_conflicts(count: int) -> None:
    click.echo(
        f"error: {count} host(s) have no route: their ids are held by routes this fleet does "
        "not own (left alone; see the plan's conflicts)",
        err=True,
    )
