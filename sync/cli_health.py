"""The command side of host health: --probe / --require-healthy / health: in fleet.yaml, and
apply --verify through the proxy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .apply import Result
from .cli_common import Seconds
from .fleet import Fleet
from .health import Verified
from .healthgate import gate
from .plan import Plan
from .probe import PROBE_TIMEOUT, probe_fleet
from .render import render
from .verify import changed_groups, verify_groups


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
    return gate(plan, probe_fleet(fleet, timeout=timeout), require)


def verify_result(
    result: Result, fleet: Fleet, proxy_url: str, api_key: str, timeout: float
) -> tuple[Verified, ...]:
    """One request per model group the apply changed, through the proxy (apply --verify)."""
    desired = render(fleet)
    return verify_groups(
        proxy_url, api_key, changed_groups(result, desired), desired, timeout=timeout
    )
