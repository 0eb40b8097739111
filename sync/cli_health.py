"""The command side of host health: --probe / --require-healthy / health: in fleet.yaml, and
apply --verify through the proxy."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from .cli_common import Seconds
from .health import PROBE_TIMEOUT

if TYPE_CHECKING:  # the rest only when a command runs: the options are read at start-up
    from .apply import Result
    from .fleet import Fleet
    from .health import Verified
    from .plan import Plan


def health_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--probe",
        is_flag=True,
        help="Ask every enabled host's GET {api_base}/models (its api_key resolved from this "
        "environment) and show beside each change whether it serves its served_model. "
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


def gate_plan(fleet: Fleet, plan: Plan, probe: bool, require: bool, timeout: float) -> Plan:
    """The plan with its hosts' health when probing is asked for (flag or fleet.yaml)."""
    require = require or fleet.requires_health
    if not (probe or require or fleet.health):
        return plan
    from .healthgate import gate
    from .probe import probe_fleet

    return gate(plan, probe_fleet(fleet, timeout=timeout), require)


def verify_result(
    result: Result, fleet: Fleet, proxy_url: str, api_key: str, timeout: float
) -> tuple[Verified, ...]:
    """One request per model group the apply changed, through the proxy (apply --verify)."""
    from .render import render
    from .verify import changed_groups, verify_groups

    desired = render(fleet)
    # Matched by the ids that serve each host after the apply, not the derived ids alone.
    serving = result.plan.serving or desired
    return verify_groups(
        proxy_url, api_key, changed_groups(result, desired), serving, timeout=timeout
    )
