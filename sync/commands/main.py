"""The fleet-sync command. Exit codes: 0 ok / no changes, 1 error, 2 changes or drift present,
3 refused (unsafe without --force, stale saved plan), 4 apply incomplete."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sync import __version__
from sync.commands.common import (
    CONCURRENCY,
    CONFIRM_TIMEOUT,
    EXIT_CHANGES,
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_REFUSED,
    MAX_CONCURRENCY,
    Exit,
    Seconds,
    check_can_write,
    connect,
    current_plan,
    fail,
    fleet_option,
    format_option,
    internal_error,
    on_github,
    proxy_options,
    read_fleet,
    read_live,
    read_proxy_options,
    take_over_option,
    with_source,
    write_key,
)
from sync.commands.fleet_commands import render_command, validate
from sync.commands.health_options import gate_plan, health_options, run_trust
from sync.commands.host_commands import import_command, propose, set_host
from sync.errors import FleetSyncError
from sync.secrets import display, scrub

if TYPE_CHECKING:
    # Each command imports what it uses when it runs: `--version` and `validate` stay clear of
    # httpx and git (tests/test_startup.py).
    from sync.core.plan import Plan
    from sync.core.result import Result
    from sync.live.client import LiteLLMClient


def colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def show_plan(plan: Plan, fmt: str, unsafe: tuple[str, ...] = ()) -> None:
    from sync.report.formats import format_named

    click.echo(format_named(fmt).show_plan(plan, unsafe, colour()), nl=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="fleet-sync")
def cli() -> None:
    """Keep a LiteLLM proxy's routes equal to fleet.yaml: validate, render, plan, apply, drift.

    Exit codes: 0 ok, 1 error, 2 changes/drift (plan --detailed-exitcode, drift),
    3 refused (unsafe without --force, stale plan), 4 apply incomplete.
    """


@cli.command()
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
    "merge base with HEAD is used).",
)
@health_options
@take_over_option
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
) -> None:
    """Show what apply would create, update and prune (reads the proxy, writes nothing)."""
    from sync.core.safety import refusals
    from sync.gitops import loops as gitops
    from sync.report.json_format import to_json
    from sync.report.redaction import plan_json

    fleet = with_source(read_fleet(fleet_file), fleet_file, os.environ)
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
    unsafe = refusals(the_plan, fleet.max_prune_percent)
    show_plan(the_plan, fmt, unsafe)
    if out:
        scrub.write_text(out, to_json(plan_json(the_plan)))
    if github_comment:
        on_github(
            lambda: gitops.comment_plan(
                fleet_file,
                the_plan,
                lambda base: live.plan(with_source(base, fleet_file, os.environ), take_over),
                unsafe,
                base_ref,
                os.environ,
            )
        )
    if detailed_exitcode and not the_plan.empty:
        raise Exit(EXIT_CHANGES)


@cli.command()
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
) -> None:
    """Converge the proxy: create, then update, then prune; confirm by reading back."""
    from sync.commands.health_options import verify_result
    from sync.commands.saved_plan import check_saved, read_saved
    from sync.core.result import Result
    from sync.core.safety import refusals
    from sync.gitops import loops as gitops
    from sync.report.formats import format_named

    fleet = with_source(read_fleet(fleet_file), fleet_file, os.environ)
    reviewed = read_saved(saved) if saved is not None else None  # before the proxy is asked
    with connect(proxy_urls, api_key, timeout, spread_writes=write_to == "spread") as client:
        the_plan = gate_plan(
            fleet,
            current_plan(fleet, client, confirm_timeout, take_over, fleet_file),
            probe,
            require_healthy,
            probe_timeout,
            run_trust(fleet_file),
        )
        unsafe = refusals(the_plan, fleet.max_prune_percent)
        if reviewed is not None:
            check_saved(reviewed, the_plan)  # a dry run previews exactly what apply would do
        if dry_run:
            show_plan(the_plan, fmt, () if force else unsafe)
            if unsafe and not force:
                fail("refused: " + " | ".join(unsafe), EXIT_REFUSED)
            return
        if unsafe and not force:
            show_plan(the_plan, fmt, unsafe)
            fail("refused: " + " | ".join(unsafe), EXIT_REFUSED)
        if the_plan.empty:
            result = Result(the_plan, ())
        else:
            check_can_write(client)
            if format_named(fmt).plan_before_apply:
                show_plan(the_plan, fmt)
            result = run_apply(the_plan, client, concurrency, confirm_timeout)
    # api_key is set: connect() refuses to run without it.
    verified = (
        verify_result(result, fleet, client.write_url, api_key or "", timeout) if verify else ()
    )
    shown = format_named(fmt).show_result(result, verified if verify else None, client.write_url)
    click.echo(shown, nl=False)
    if github_comment:
        on_github(lambda: gitops.comment_result(result, os.environ, verified))
    if the_plan.conflicts:
        click.echo(
            f"error: {len(the_plan.conflicts)} host(s) have no route: their ids are held by "
            "routes this fleet does not own (left alone; see the plan's conflicts)",
            err=True,
        )
    if not result.complete or not all(v.ok for v in verified):
        raise Exit(EXIT_INCOMPLETE)


def run_apply(
    plan: Plan, client: LiteLLMClient, concurrency: int, confirm_timeout: float
) -> Result:
    from sync.core.result import Result
    from sync.live.apply import ApplyAborted, apply_plan
    from sync.live.progress import progress_for
    from sync.report.text import result_text

    progress = progress_for(sys.stderr)
    try:
        return apply_plan(
            plan,
            client,
            concurrency=concurrency,
            confirm_timeout=confirm_timeout,
            progress=progress,
        )
    except ApplyAborted as exc:
        progress.finish()  # end the live line before the partial result
        click.echo(result_text(Result(plan, exc.outcomes)), nl=False)
        fail(f"apply stopped: {exc.error}")
    finally:
        progress.finish()


@cli.command()
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
def drift(
    fleet_file: Path,
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    fmt: str,
    github_issue: bool,
    fix: bool,
) -> None:
    """Report drift between fleet.yaml and the proxy; exit 2 while there is any."""
    from sync.core.health import PROBE_TIMEOUT
    from sync.core.safety import refusals
    from sync.gitops import loops as gitops
    from sync.report.text import result_text

    fleet = with_source(read_fleet(fleet_file), fleet_file, os.environ)
    code = EXIT_OK
    with connect(proxy_urls, write_key(api_key) if fix else api_key, timeout) as client:
        # health: probe|require in fleet.yaml holds for drift (and --fix) as for apply.
        trust = run_trust(fleet_file)
        the_plan = gate_plan(
            fleet,
            current_plan(fleet, client, fleet_file=fleet_file),
            False,
            False,
            PROBE_TIMEOUT,
            trust,
        )
        show_plan(the_plan, fmt)
        if fix and not the_plan.empty:
            unsafe = refusals(the_plan, fleet.max_prune_percent)
            if unsafe:
                fixed = display.text(" | ".join(unsafe))  # reasons quote the proxy's names
                click.echo(f"error: --fix refused: {fixed}", err=True)
                code = EXIT_REFUSED
            else:
                check_can_write(client)
                result = run_apply(the_plan, client, CONCURRENCY, CONFIRM_TIMEOUT)
                click.echo(result_text(result), nl=False)
                code = EXIT_OK if result.complete else EXIT_INCOMPLETE
                the_plan = gate_plan(
                    fleet,
                    current_plan(fleet, client, fleet_file=fleet_file),
                    False,
                    False,
                    PROBE_TIMEOUT,
                    trust,
                )
    if github_issue:
        on_github(lambda: gitops.report_drift(the_plan, os.environ))
    if code != EXIT_OK:
        raise Exit(code)
    if not the_plan.empty:
        raise Exit(EXIT_CHANGES)


for _command in (validate, render_command, set_host, propose, import_command):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    # Every byte written to stdout and stderr, usage errors and internal errors included, goes
    # through the scrub: run() never lets an exception out to Python's own traceback printer,
    # which would write after the session ended.
    try:
        with scrub.session():
            code = run(argv)
    except OSError as exc:  # the session's last output could not be written
        code = _unwritable(exc)
    sys.exit(code)


# The machine's, not fleet-sync's: a full disk, a closed pipe or stream, a read-only file system.
OUTPUT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EBADF, errno.EDQUOT, errno.EROFS, errno.EFBIG}
)


def _unwritable(exc: OSError) -> int:
    """One line for output that could not be written, on stderr if stderr still takes it."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"error: cannot write the output: {exc.strerror}\n")
        sys.stderr.flush()
    return EXIT_ERROR


def run(argv: list[str] | None) -> int:
    try:
        cli.main(args=argv, prog_name="fleet-sync", standalone_mode=False)
    except Exit as exc:
        return exc.code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_ERROR
    except click.ClickException as exc:
        exc.show()
        return EXIT_ERROR  # usage errors are errors (1), not "changes present" (2)
    except FleetSyncError as exc:
        click.echo(f"error: {display.text(str(exc))}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRNOS:
            internal_error(exc)
            return EXIT_ERROR
        return _unwritable(exc)
    except Exception as exc:  # a bug: one scrubbed line, the traceback only when asked for
        internal_error(exc)
        return EXIT_ERROR
    return EXIT_OK
