"""set-host: edit one host of fleet.yaml in place (a host that moved, drained or came back)."""

from __future__ import annotations

from pathlib import Path

import click

from sync.commands.options import fleet_option
from sync.fleet.problems import FleetError
from sync.run.console import fail


@click.command(name="set-host")
@click.argument("model")
@click.argument("host")
@click.option(
    "--api-base", metavar="URL", help="The host's new address, http(s)://host[:port][/path]."
)
@click.option(
    "--enable/--disable",
    "enabled",
    default=None,
    help="Put the host back in service, or drain it (enabled: false; the entry stays).",
)
@click.option("--add", is_flag=True, help="Add the host when MODEL has none of that name.")
@fleet_option
def set_host(
    model: str,
    host: str,
    api_base: str | None,
    enabled: bool | None,
    add: bool,
    fleet_file: Path,
) -> None:
    """Change one host in fleet.yaml in place (comments and layout kept) and print the diff.

    The result must pass validate before anything is written; exit 1 (nothing written) for an
    unknown model or host, an invalid address, or an edit that would change other values.
    """
    from sync.edit.fleet_file import read_text, unified_diff, write_atomically
    from sync.edit.writer import HostEdit, edit_host
    from sync.report.text import problems_text

    if api_base is None and enabled is None:
        fail("nothing to change: give --api-base URL, --enable or --disable")
    file = str(fleet_file)
    try:
        text, bom = read_text(fleet_file, file)
        edited = edit_host(text, HostEdit(model, host, api_base, enabled, add), file)
    except FleetError as exc:
        click.echo(problems_text(exc.problems), err=True, nl=False)
        fail(f"{file} was not changed")
    except ValueError as exc:
        fail(f"{exc}; {file} was not changed")
    if edited.text == text:
        click.echo(f"{file}: no change, host {host!r} of model {model!r} already says so")
        return
    try:
        write_atomically(fleet_file, edited.text, bom)
    except OSError as exc:
        fail(f"cannot write {file}: {exc.strerror}; it was not changed")
    click.echo(unified_diff(text, edited.text, file), nl=False)
    click.echo("".join(f"{line}\n" for line in edited.summary), err=True, nl=False)
