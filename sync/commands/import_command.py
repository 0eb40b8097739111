"""import: the fleet.yaml a live proxy's database routes mean."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from sync.commands.common import proxy_options, trusted_ref
from sync.commands.options import fleet_option, read_proxy_options, target_option
from sync.fleet.problems import FleetError
from sync.live.state import read_routes
from sync.run.console import fail
from sync.secrets import scrub

if TYPE_CHECKING:
    from sync.run.endpoint import Endpoint, ProxyOptions


@click.command(name="import")
@read_proxy_options
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write fleet.yaml here (refused if it exists) instead of stdout.",
)
@click.option("--fleet", "fleet_name", default="imported", show_default=True, help="Fleet name.")
@click.option(
    "--model",
    "only",
    multiple=True,
    metavar="NAME",
    help="Import only this model group (repeatable; default: every group).",
)
@target_option
@fleet_option
def import_command(
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    output: Path | None,
    fleet_name: str,
    only: tuple[str, ...],
    target_names: tuple[str, ...],
    fleet_file: Path,
) -> None:
    """Write the fleet.yaml a live proxy's database routes mean (owns: model_groups).

    Then `fleet-sync plan` adopts each route in place: it adds fleet-sync's tags by PATCH,
    keeping the route's id, api_key and every value the file leaves out. With --target (or
    -f naming a fleet.yaml with targets:), the proxy is that one target's (-f's fleet is read
    for its targets only).
    """
    from sync.edit.importer import ADOPTION, API_KEY_NOTE, import_fleet, kept_warning
    from sync.fleet.model import fleet_from_doc
    from sync.fleet.yamlmarks import parse_yaml
    from sync.report.text import problems_text

    if output is not None and output.exists():
        fail(f"{output} exists; choose another path or remove it first")
    if output is not None and not output.parent.is_dir():
        fail(f"{output}: the directory {output.parent} does not exist; nothing was read")
    from sync.run.endpoint import connect

    endpoint = proxy_of(fleet_file, target_names, proxy_options(proxy_urls, api_key))
    with connect(endpoint, timeout) as client:
        live = read_routes(client)
    imported = import_fleet(live, fleet_name, only)
    for line in imported.left_out:
        click.echo(f"left out: {line}", err=True)
    if not imported.routes:
        fail("no database route to import (see what was left out above)")
    file = str(output or "fleet.yaml")
    try:
        fleet_from_doc(parse_yaml(imported.text, file), file)
    except FleetError as exc:
        click.echo(problems_text(exc.problems), err=True, nl=False)
        fail("the imported fleet does not validate (is --fleet a valid fleet name?)")
    if output is None:
        click.echo(imported.text, nl=False)
    else:
        try:
            scrub.write_text(output, imported.text)  # a file bound for git: the final scrub
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}; nothing was written")
    for model, kept in imported.kept.items():
        click.echo(f"kept: {kept_warning(model, kept)}", err=True)
    click.echo(f"note: {API_KEY_NOTE}", err=True)
    click.echo(
        f"imported {imported.routes} route(s) in {imported.models} model group(s)"
        + (f" into {output}" if output else "")
        + f"; {ADOPTION}",
        err=True,
    )


def proxy_of(fleet_file: Path, names: tuple[str, ...], proxy: ProxyOptions) -> Endpoint:
    """The proxy and key import reads: one target's when --target is given or -f names a fleet
    with targets: (exactly one target: --target is required when it declares several); else
    --proxy-url / LITELLM_PROXY_* as ever, fleet.yaml not read."""
    import os

    import click

    from sync.run.endpoint import TargetUnresolved, check_overrides, implicit_endpoint, pinned
    from sync.run.reading import read_fleet, select

    ctx = click.get_current_context()
    file_given = ctx.get_parameter_source("fleet_file") is click.core.ParameterSource.COMMANDLINE
    if not names and not file_given:
        return implicit_endpoint(proxy)
    fleet = read_fleet(fleet_file)
    if not fleet.targets and not names:
        return implicit_endpoint(proxy)
    if len(set(names)) > 1:
        fail("import reads exactly one target: give --target once")
    targets = select(fleet, names)
    if len(targets) != 1:
        declared = ", ".join(t.name for t in targets)
        fail(f"import reads exactly one target: give --target NAME (declared: {declared})")
    override = check_overrides(names, proxy)
    try:
        return pinned(targets[0], trusted_ref(fleet_file)(), os.environ, False, override)
    except TargetUnresolved as exc:
        fail(str(exc))
