"""propose: fleet.yaml as set-host left it, as a pull request with its plan comment (and
an automatic merge when asked and the plan only moves the host)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sync.commands.common import connect, fail, read_fleet, read_live, with_source
from sync.commands.health_options import gate_plan, head_ref, head_trust, health_options
from sync.commands.options import fleet_option, read_proxy_options
from sync.commands.targets import Overrides, overrides
from sync.secrets import display

if TYPE_CHECKING:
    from sync.commands.target_plans import TargetPlan
    from sync.core.plan import Plan
    from sync.fleet.model import Fleet
    from sync.gitops.host_moved import Section
    from sync.live.state import LiveState


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
    "then start the apply workflow. A new address that needs a key waits for a review. With "
    "targets: in fleet.yaml, every target the host goes to must plan so, and be planned.",
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

    Run after `fleet-sync set-host MODEL HOST --api-base URL` in a checkout of BRANCH. With
    targets: in fleet.yaml, every target the host goes to is planned on its own proxy (its
    read key), one plan comment each.
    """
    from sync.github.actions import GitHubError
    from sync.gitops import host_moved
    from sync.gitops.gitref import GitRefError

    if not base:
        fail("no base branch: pass --base BRANCH (GitHub Actions sets GITHUB_REF_NAME)")
    fleet = with_source(read_fleet(fleet_file, at_proxy=True), fleet_file, os.environ)
    hosts = {h.name: h for m in fleet.models if m.name == model for h in m.hosts}
    if host not in hosts:
        fail(f"{fleet_file}: no host {host!r} in model {model!r}; run set-host first")
    # With targets, --proxy-url / --api-key are refused here, before GitHub is asked.
    override = overrides(fleet, (), proxy_urls, api_key)
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
            # An automatic merge needs proof the new address serves: it always probes.
            health = (probe or automerge, require_healthy, probe_timeout)
            proxy = (proxy_urls, api_key, timeout)
            if fleet.targets:
                sections = target_sections(
                    fleet, fleet_file, (model, host), override, timeout, health
                )
            else:
                sections = [one_section(fleet, fleet_file, proxy, health)]
            merge = (base, apply_workflow) if automerge else None
            for line in host_moved.comment_and_maybe_merge(
                github, proposal, model, host, fleet_file, sections, os.environ, merge
            ):
                click.echo(display.text(line))  # may quote a probed upstream's answer
    except (GitHubError, GitRefError) as exc:
        fail(f"GitHub: {exc}" if isinstance(exc, GitHubError) else str(exc))


def one_section(
    fleet: Fleet,
    fleet_file: Path,
    proxy: tuple[tuple[str, ...], str | None, float],
    health: tuple[bool, bool, float],
) -> Section:
    """A fleet without targets: its plan against LITELLM_PROXY_URL (or --proxy-url), shown."""
    from sync.core.safety import refusals
    from sync.gitops.host_moved import Section
    from sync.report.text import plan_text

    live, the_plan = host_plan(fleet, fleet_file, proxy, health)
    unsafe = tuple(refusals(the_plan, fleet.max_prune_percent))
    click.echo(plan_text(the_plan, False, unsafe), nl=False)
    return Section(
        None,
        the_plan,
        lambda base: live.plan(with_source(base, fleet_file, os.environ), False),
        unsafe,
    )


def target_sections(
    fleet: Fleet,
    fleet_file: Path,
    moved: tuple[str, str],
    override: Overrides,
    timeout: float,
    health: tuple[bool, bool, float],
) -> list[Section]:
    """A fleet with targets: the plan of every target the host goes to (its projection, its own
    proxy and read key, resolved as plan resolves them), one section each in promotion order. A
    target that cannot be planned here is a section without a plan (it blocks --automerge)."""
    from sync.commands.target_plans import Health, Reading, base_for, plan_all
    from sync.commands.targets import header, note_unused_environment, select
    from sync.fleet.targets import for_target
    from sync.gitops.host_moved import Section
    from sync.report.text import plan_text

    model, host = moved
    receives = []
    for target in select(fleet, ()):
        projected = for_target(fleet, target.name)
        if any(h.name == host for m in projected.models if m.name == model for h in m.hosts):
            receives.append(target)
        else:
            note = f"note: {model}/{host} does not go to target {target.name}: not planned"
            click.echo(display.text(note), err=True)
    reading = Reading(
        fleet, fleet_file, False, override, timeout, False,
        Health(*health), head_ref(fleet_file),
    )  # fmt: skip
    note_unused_environment(receives)
    sections = []
    for outcome in plan_all(reading, receives):
        click.echo(header("text", outcome.target), nl=False)
        value = outcome.value
        if value is None:
            click.echo(f"target {outcome.target} could not be planned (exit {outcome.code}): "
                       f"{outcome.error}")  # fmt: skip
            sections.append(Section(outcome.target, None, None, error=outcome.error))
            continue
        click.echo(plan_text(value.plan, False, value.unsafe), nl=False)

        def plan_for(base: Fleet, value: TargetPlan = value) -> Plan:
            projected = with_source(base_for(base, value.name), fleet_file, os.environ)
            return value.live.plan(projected, False)

        sections.append(Section(value.name, value.plan, plan_for, value.unsafe))
    return sections


def host_plan(
    fleet: Fleet,
    fleet_file: Path,
    proxy: tuple[tuple[str, ...], str | None, float],
    health: tuple[bool, bool, float],
) -> tuple[LiveState, Plan]:
    """The live state and the plan of the proposed fleet.yaml, probed as `health` asks. Keys go
    only to addresses the checkout has: the payload's address is asked without one."""
    with connect(*proxy) as client:
        live = read_live(client, fleet, fleet_file=fleet_file)
    return live, gate_plan(fleet, live.plan(fleet, False), *health, head_trust(fleet_file))
