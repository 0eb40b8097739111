"""set-host, propose and import: editing fleet.yaml for a host that moved, proposing the edit
as a pull request, and writing a fleet.yaml from a live proxy. Each imports what it needs when
it runs, so `fleet-sync --help` stays cheap."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.common import (
    connect,
    fail,
    fleet_option,
    read_fleet,
    read_live,
    read_proxy_options,
    read_routes,
    with_source,
)
from sync.commands.health_options import gate_plan, head_trust, health_options
from sync.fleet.problems import FleetError
from sync.secrets import display, scrub


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
    "then start the apply workflow. A new address that needs a key waits for a review.",
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

    Run after `fleet-sync set-host MODEL HOST --api-base URL` in a checkout of BRANCH.
    """
    from sync.core.safety import refusals
    from sync.github.actions import GitHubError
    from sync.gitops import host_moved
    from sync.gitops.gitref import GitRefError
    from sync.report.text import plan_text

    if not base:
        fail("no base branch: pass --base BRANCH (GitHub Actions sets GITHUB_REF_NAME)")
    fleet = with_source(read_fleet(fleet_file), fleet_file, os.environ)
    hosts = {h.name: h for m in fleet.models if m.name == model for h in m.hosts}
    if host not in hosts:
        fail(f"{fleet_file}: no host {host!r} in model {model!r}; run set-host first")
    try:
        with host_moved.client(os.environ) as github:
            proposal = host_moved.propose(
                github, fleet_file, model, host, hosts[host].api_base, base
            )
            if proposal.number is None:
                click.echo(f"nothing to propose: {base} already says this; no open pull request")
                return
            click.echo(f"pull request #{proposal.number} {proposal.action}: {proposal.url}")
            if proposal.action == "closed":
                return
            with connect(proxy_urls, api_key, timeout) as proxy:
                live = read_live(proxy, fleet, fleet_file=fleet_file)
            # An automatic merge needs proof the new address serves: it always probes. Keys go
            # only to addresses the checkout has: the payload's address is asked without one.
            the_plan = gate_plan(
                fleet,
                live.plan(fleet, False),
                probe or automerge,
                require_healthy,
                probe_timeout,
                head_trust(fleet_file),
            )
            unsafe = refusals(the_plan, fleet.max_prune_percent)
            click.echo(plan_text(the_plan, False, unsafe), nl=False)
            merge = (base, apply_workflow) if automerge else None
            for line in host_moved.comment_and_maybe_merge(
                github,
                proposal,
                model,
                host,
                fleet_file,
                the_plan,
                lambda base: live.plan(with_source(base, fleet_file, os.environ), False),
                unsafe,
                os.environ,
                merge,
            ):
                click.echo(display.text(line))  # may quote a probed upstream's answer
    except (GitHubError, GitRefError, ValueError) as exc:
        fail(f"GitHub: {exc}" if isinstance(exc, GitHubError) else str(exc))


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
def import_command(
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    output: Path | None,
    fleet_name: str,
    only: tuple[str, ...],
) -> None:
    """Write the fleet.yaml a live proxy's database routes mean (owns: model_groups).

    Then `fleet-sync plan` adopts each route in place: it adds fleet-sync's tags by PATCH,
    keeping the route's id, api_key and every value the file leaves out.
    """
    from sync.edit.importer import ADOPTION, API_KEY_NOTE, import_fleet, kept_warning
    from sync.fleet.model import fleet_from_doc
    from sync.fleet.yamlmarks import parse_yaml
    from sync.report.text import problems_text

    if output is not None and output.exists():
        fail(f"{output} exists; choose another path or remove it first")
    if output is not None and not output.parent.is_dir():
        fail(f"{output}: the directory {output.parent} does not exist; nothing was read")
    with connect(proxy_urls, api_key, timeout) as client:
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
