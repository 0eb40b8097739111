"""plan: what apply would do, read from the proxy; writes nothing to it."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import (
    EXIT_OK,
    Exit,
    bound,
    connect,
    github_value,
    plan_code,
    read_fleet,
    read_live,
    show_plan,
    with_source,
)
from sync.commands.health_options import gate_plan, health_options, run_ref, run_trust
from sync.commands.options import fleet_option, format_option, read_proxy_options, take_over_option
from sync.commands.targets import target_option
from sync.secrets import scrub


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
    from sync.core.verdict import decide
    from sync.gitops import loops as gitops
    from sync.report.json_format import to_json
    from sync.report.redaction import plan_json

    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    if fleet.targets or target_names:
        from sync.commands import target_plans as targeted
        from sync.commands.targets import note_unused_environment, overrides, select

        targets = select(fleet, target_names)
        reading = targeted.Reading(
            fleet, fleet_file, False, overrides(fleet, target_names, proxy_urls, api_key),
            timeout, take_over, targeted.Health(probe, require_healthy, probe_timeout),
            run_ref(fleet_file, base_ref),
        )  # fmt: skip
        note_unused_environment(targets)
        targeted.run_plan(reading, targets, fmt, out, detailed_exitcode, github_comment, base_ref)
        return
    with connect(proxy_urls, api_key, timeout) as client:
        live = read_live(client, fleet, take_over, fleet_file=fleet_file)
    the_plan = gate_plan(
        fleet,
        live.plan(fleet, take_over),
        probe,
        require_healthy,
        probe_timeout,
        run_trust(fleet_file, base_ref),
    )
    the_plan = bound(the_plan, fleet, client.urls)
    verdict = decide(the_plan, fleet.max_prune_percent)  # apply's own verdict
    show_plan(the_plan, fmt, verdict.refused)
    if out:
        scrub.write_text(out, to_json(plan_json(the_plan)))
    if github_comment:  # the pull request's reviewed force may accept some refusals
        verdict = github_value(
            lambda: gitops.comment_reviewed_plan(
                fleet_file,
                the_plan,
                lambda base: live.plan(with_source(base, fleet_file, os.environ), take_over),
                verdict.refused,
                base_ref,
                os.environ,
            )
        )
    code = plan_code(verdict, not the_plan.empty, detailed_exitcode)
    if code != EXIT_OK:
        raise Exit(code)
