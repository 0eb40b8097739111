"""Reading a run's targets: fleet.yaml validated, each target's proxy read (concurrently) and
planned, with its hosts' health when asked and bound to what it was made for. One admin client
per endpoint for the whole run: the apply writes through the client that read."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sync.fleet.problems import FleetError
from sync.live.state import CONFIRM_TIMEOUT
from sync.run.console import fail, tell
from sync.run.endpoint import (
    Endpoint,
    ProxyOptions,
    check_overrides,
    connect,
    endpoints,
    implicit_endpoint,
    note_unused_environment,
)
from sync.run.outcome import Outcome, attempt, each
from sync.secrets import display, scrub

if TYPE_CHECKING:
    from sync.core.keytrust import KeyTrust, TrustedRef
    from sync.core.plan import Plan
    from sync.fleet.model import Fleet
    from sync.fleet.targets import Target
    from sync.live.client import LiteLLMClient
    from sync.live.state import LiveState


@dataclass(frozen=True)
class Health:
    probe: bool = False
    require: bool = False
    timeout: float = 5.0


class Clients:
    """One admin client per endpoint, opened on first use, all closed when the run ends."""

    def __init__(self, timeout: float, spread_writes: bool = True) -> None:
        self.timeout, self.spread_writes = timeout, spread_writes
        self._open: dict[Endpoint, LiteLLMClient] = {}
        self._stack = ExitStack()
        self._lock = threading.Lock()  # targets are read at once

    def __enter__(self) -> Clients:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def of(self, endpoint: Endpoint) -> LiteLLMClient:
        with self._lock:
            if endpoint not in self._open:
                client = connect(endpoint, self.timeout, self.spread_writes)
                self._open[endpoint] = self._stack.enter_context(client)
            return self._open[endpoint]


@dataclass(frozen=True)
class Reading:
    """How each target of a run is read: the same for every target of one run."""

    fleet: Fleet  # the whole fleet, its source resolved
    fleet_file: Path
    write: bool  # the write key (apply, drift --fix) or the read key
    proxy: ProxyOptions  # without targets: the proxy; with them: what overrides one target's
    clients: Clients
    take_over: bool
    health: Health
    ref: Callable[[], TrustedRef]  # the ref the run trusts, read once when first asked
    settle_timeout: float = CONFIRM_TIMEOUT


@dataclass(frozen=True)
class TargetPlan:
    name: str | None  # None: the one proxy of a fleet without targets:
    fleet: Fleet  # the fleet this target sees (for_target)
    endpoint: Endpoint
    live: LiveState
    plan: Plan
    unsafe: tuple[str, ...]
    after: tuple[str, ...] = ()  # the targets it is promoted after


def read_fleet(path: Path, at_proxy: bool = False) -> Fleet:
    """fleet.yaml, validated; LiteLLM's declared types are the newest supported release's, or
    with `at_proxy` the release the proxy reports, checked by read_live once it is read."""
    from sync.fleet.model import NEWEST, load_fleet
    from sync.report.text import problems_text

    scrub.active().remember_fleet(path, os.environ)
    try:
        return load_fleet(path, str(path), litellm=None if at_proxy else NEWEST)
    except FleetError as exc:
        sys.stderr.write(problems_text(exc.problems))
        fail(f"{path} is invalid ({len(exc.problems)} problem(s)); nothing was sent to the proxy")


def with_source(fleet: Fleet, fleet_file: Path, environ: Mapping[str, str]) -> Fleet:
    """The fleet with the source its routes are tagged with: fleet.yaml's source:, else
    GITHUB_REPOSITORY (CI), else the origin remote of the repository holding fleet.yaml (a
    local clone of the same repository), else none. Lowercase: GitHub ignores the case of
    owner/name, and one spelling keeps a local run and CI from rewriting each other's tag."""
    from sync.gitops.gitref import repository_of

    source = (
        fleet.source
        or environ.get("GITHUB_REPOSITORY", "").strip()
        or repository_of(fleet_file)
        or ""
    )
    return replace(fleet, source=source.lower() or None)


def select(fleet: Fleet, names: Sequence[str]) -> tuple[Target, ...]:
    """The targets a run works on, in promotion order: those named (each once), else every
    one; none for a fleet without targets: (its run is over the one implicit target). An
    unknown name stops the command (exit 1) listing the declared ones."""
    from sync.fleet.targets import what_target_means

    declared = [t.name for t in fleet.targets]
    if not fleet.targets:
        if names:
            fail(
                f"--target {display.printable(names[0][:64])}: {fleet.file} declares no "
                "targets: (the proxy comes from LITELLM_PROXY_URL or --proxy-url); "
                f"{what_target_means(fleet, names)}"
            )
        return ()
    unknown = [n for n in dict.fromkeys(names) if n not in declared]
    if unknown:
        fail(
            f"unknown target(s) {', '.join(display.printable(n[:64]) for n in unknown)}; "
            f"{fleet.file} declares: {', '.join(declared)}; {what_target_means(fleet, unknown)}"
        )
    wanted = set(names) or set(declared)
    return tuple(t for t in fleet.targets if t.name in wanted)


def selected(
    fleet: Fleet, names: Sequence[str], proxy: ProxyOptions
) -> tuple[tuple[Target, ...], ProxyOptions]:
    """The targets a run works on and the proxy options it reads them with: without targets
    the command's own; with them only what overrides the one --target (sync/run/endpoint.py)."""
    targets = select(fleet, names)
    if not targets:
        return targets, proxy
    override = check_overrides(names, proxy)
    note_unused_environment(targets)
    return targets, override


def read_live(client: LiteLLMClient, fleet: Fleet, reading: Reading) -> LiveState:
    """The live state (sync/live/state.py) with the model groups fleet.yaml's git history
    declared; a proxy that cannot be read stops the target (its ProxyError, exit 1)."""
    from sync.gitops.history import declared_groups
    from sync.live import state

    try:
        live = state.read_live(
            client, fleet, tell, reading.take_over, reading.settle_timeout,
            declared_groups(reading.fleet_file),
        )  # fmt: skip
    except state.UnknownProviders as exc:
        for p in exc.problems:  # file:line:col: error: ..., like a compiler's
            tell(display.text(f"{p.file}:{p.line}:{p.col}: error: {p.message}"))
        fail(str(exc))
    refuse_types(fleet, live.litellm_version)
    return live


def refuse_types(fleet: Fleet, version: str | None) -> None:
    """Stop before any plan when the LiteLLM the proxy runs would refuse a value of
    fleet.yaml (the types its request models declare), each located."""
    from sync.fleet.model import release_problems
    from sync.litellm.declared import release_for
    from sync.report.text import problems_text

    if problems := release_problems(fleet, version):
        sys.stderr.write(problems_text(problems))
        fail(
            f"{problems[0].file} has {len(problems)} value(s) LiteLLM {release_for(version)} "
            "would refuse; nothing was sent to the proxy"
        )


def gate_plan(fleet: Fleet, plan: Plan, health: Health, trust: Callable[[], KeyTrust]) -> Plan:
    """The plan with its hosts' health when probing is asked for (flag or fleet.yaml)."""
    require = health.require or fleet.requires_health
    if not (health.probe or require or fleet.health):
        return plan
    from sync.core.healthgate import gate
    from sync.live.probe import probe_fleet

    return gate(plan, probe_fleet(fleet, trust(), timeout=health.timeout), require)


def plan_target(
    reading: Reading, name: str | None, endpoint: Endpoint, after: tuple[str, ...] = ()
) -> TargetPlan:
    """One target's plan: its projected fleet against its own proxy's live state, with what
    still names a group it leaves without routes (sync/live/references.py), bound to what it
    was made for, and what apply would refuse in it (apply's own verdict)."""
    from sync.core.plan import Binding
    from sync.core.verdict import decide
    from sync.fleet.targets import for_target
    from sync.live.references import with_references

    fleet = reading.fleet if name is None else for_target(reading.fleet, name)
    client = reading.clients.of(endpoint)
    live = read_live(client, fleet, reading)
    plan = gate_plan(
        fleet, live.plan(fleet, reading.take_over), reading.health,
        lambda: reading.ref().key_trust(name),
    )  # fmt: skip
    # What still names a model group the (gated) plan leaves without routes: read only then.
    plan = with_references(client, plan)
    binding = Binding.of(name, client.urls, fleet.max_prune_percent, after)
    plan = replace(plan, binding=binding)
    unsafe = decide(plan, fleet.max_prune_percent).refused
    return TargetPlan(name, fleet, endpoint, live, plan, unsafe, after)


def plan_all(reading: Reading, targets: Sequence[Target]) -> list[Outcome[TargetPlan]]:
    """Every target's plan (no targets: the one proxy's): all endpoints resolved first (two on
    one proxy stop the run before any request), then the targets read at once."""
    if not targets:
        resolved = [attempt(None, lambda: implicit_endpoint(reading.proxy))]
    else:
        resolved = endpoints(targets, reading.ref(), reading.write, reading.proxy)
    after = {t.name: t.after for t in targets}
    ready = {o.target: o.value for o in resolved if o.value is not None}
    planned = iter(
        each(
            [o.target for o in resolved if o.value is not None],
            lambda name: plan_target(reading, name, ready[name], after.get(name or "", ())),
        )
    )
    return [
        next(planned) if o.value is not None else Outcome(o.target, None, o.code, o.error)
        for o in resolved
    ]


def base_for(base: Fleet, name: str | None) -> Fleet:
    """What a target wanted at the pull request's base: its projection when the base declares
    it; the whole fleet when the base had no targets (every model went everywhere); nothing
    when the base declares targets but not this one (it is new in this pull request)."""
    from sync.fleet.targets import for_target

    if name is None:
        return base
    if any(t.name == name for t in base.targets):
        return for_target(base, name)
    return base if not base.targets else replace(base, models=())


def base_plan(reading: Reading, value: TargetPlan) -> Callable[[Fleet], Plan]:
    """The plan a target's fleet.yaml at the pull request's base makes against the live state
    read now (what 'this pull request changes' is measured against)."""

    def plan_at(base: Fleet) -> Plan:
        projected = with_source(base_for(base, value.name), reading.fleet_file, os.environ)
        return value.live.plan(projected, reading.take_over)

    return plan_at
