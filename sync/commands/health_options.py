"""The command side of host health: --probe / --require-healthy / health: in fleet.yaml, and
apply --verify through the proxy."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sync.commands.options import Seconds
from sync.core.health import PROBE_TIMEOUT

if TYPE_CHECKING:  # the rest only when a command runs: the options are read at start-up
    from sync.core.health import Verified
    from sync.core.keytrust import KeyTrust, TrustedRef
    from sync.core.plan import Plan
    from sync.core.result import Result
    from sync.fleet.model import Fleet

# Computed only when a plan probes: which addresses each host's key may go to.
Trust = Callable[[], "KeyTrust"]


def health_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--probe",
        is_flag=True,
        help="Ask every enabled host's GET {api_base}/models and show beside each change whether "
        "it serves its served_model. A host's api_key (resolved from this environment) goes only "
        "to the address fleet.yaml gives it at a reviewed ref (a pull request's base; propose: "
        "HEAD); a new address is asked without it, and a 401/403 then reads 'needs a key'. "
        "fleet.yaml's health: probe|require turns this on too.",
    )(f)
    f = click.option(
        "--require-healthy",
        is_flag=True,
        help="Withhold (and report) every change that would point a route at an address that "
        "does not serve its model, and the prunes of its model group; apply then exits 4. "
        "Implies --probe; the same as health: require in fleet.yaml.",
    )(f)
    return click.option(
        "--probe-timeout",
        default=PROBE_TIMEOUT,
        show_default=True,
        type=Seconds(min=0, min_open=True),
        metavar="SECONDS",
        help="How long each host has to answer the probe.",
    )(f)


def gate_plan(
    fleet: Fleet, plan: Plan, probe: bool, require: bool, timeout: float, trust: Trust
) -> Plan:
    """The plan with its hosts' health when probing is asked for (flag or fleet.yaml)."""
    require = require or fleet.requires_health
    if not (probe or require or fleet.health):
        return plan
    from sync.core.healthgate import gate
    from sync.live.probe import probe_fleet

    return gate(plan, probe_fleet(fleet, trust(), timeout=timeout), require)


def run_trust(fleet_file: Path, base_ref: str | None = None) -> Trust:
    """plan, apply, drift: in a pull request's run its base is trusted, else fleet.yaml."""

    def trust() -> KeyTrust:
        from sync.gitops.keytrust import for_run

        return for_run(fleet_file, base_ref, os.environ)

    return trust


def run_ref(fleet_file: Path, base_ref: str | None = None) -> TrustedRef:
    """plan, apply, drift over targets: the ref the run trusts, read now (in a pull request's
    run every target's endpoint follows it, not only the probe's keys)."""
    from sync.gitops.keytrust import ref_for_run

    return ref_for_run(fleet_file, base_ref, os.environ)


def head_ref(fleet_file: Path) -> TrustedRef:
    """propose over targets: the checked-out commit is the trusted ref (set-host edited only the
    working file): each target is read at the endpoint and keys it writes."""
    from sync.gitops.keytrust import ref_at_head

    return ref_at_head(fleet_file)


def head_trust(fleet_file: Path) -> Trust:
    """propose: the checked-out commit is trusted, not the address set-host just wrote."""

    def trust() -> KeyTrust:
        from sync.gitops.keytrust import at_head

        return at_head(fleet_file)

    return trust


def verify_result(
    result: Result, fleet: Fleet, proxy_url: str, api_key: str, timeout: float
) -> tuple[Verified, ...]:
    """One request per model group the apply changed, through the proxy (apply --verify)."""
    from sync.core.render import render
    from sync.live.verify import changed_groups, verify_groups

    desired = render(fleet)
    # Matched by the ids that serve each host after the apply, not the derived ids alone.
    serving = result.plan.serving or desired
    return verify_groups(
        proxy_url, api_key, changed_groups(result, desired), serving, timeout=timeout
    )
