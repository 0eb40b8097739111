"""The live read: what the proxy's router lists once every pod agrees on what the plan reads,
the rows of the fleet's model groups it stored but does not list, the LiteLLM it runs and the
providers it knows. Errors are raised (ProxyError, UnknownProviders); the command says them."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Generic, TypeVar

from sync.collector import held
from sync.errors import FleetSyncError
from sync.litellm.releases import LiteLLMRelease

if TYPE_CHECKING:
    from sync.core.plan import Plan
    from sync.core.render import Route
    from sync.fleet.model import Fleet
    from sync.fleet.problems import Problem
    from sync.live.client import LiteLLMClient

# LiteLLM pods reload routes from the database every 30 s by default; 10 s of margin.
CONFIRM_TIMEOUT = 40.0

T = TypeVar("T")

# One line for stderr ("warning: ..." or "note: ..."), said as soon as the read knows it.
Tell = Callable[[str], None]


class UnknownProviders(FleetSyncError):
    """Routes of fleet.yaml name a provider the proxy does not know; `problems` says which,
    each where fleet.yaml writes the provider."""

    def __init__(self, message: str, problems: Sequence[Problem]) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


@dataclass(frozen=True)
class LiveState:
    """What the proxy holds: the routes its router lists (what clients route on), and the rows
    of the fleet's model groups it stored but does not list (writes it could not load)."""

    listed: Sequence[Route]
    unlisted: Sequence[Route]
    litellm_version: str | None = None  # what the pod taking the writes reports
    notes: tuple[str, ...] = ()  # what could not be read (shown with every plan)
    # The plan the read made of these routes (to find the ids it would create), for the Fleet
    # (by identity) and take_over it was made for, without notes: the plan of the same inputs.
    made: tuple[Fleet, bool, Plan] | None = field(default=None, compare=False, repr=False)

    def plan(self, fleet: Fleet, take_over: bool) -> Plan:
        from sync.core.planner import make_plan
        from sync.core.render import render

        if self.made is not None and self.made[0] is fleet and self.made[1] == take_over:
            return replace(self.made[2], notes=tuple(self.notes))
        with held():
            return make_plan(
                fleet,
                render(fleet),
                self.listed,
                self.unlisted,
                take_over,
                self.litellm_version,
                self.notes,
            )


@dataclass(frozen=True)
class PastGroups:
    """Model groups an earlier fleet.yaml declared (the command reads them from git history),
    and why that list may be short."""

    groups: frozenset[str] = frozenset()
    note: str | None = None  # set when part of the history could not be read


def read_routes(client: LiteLLMClient, settle_timeout: float = CONFIRM_TIMEOUT) -> list[Route]:
    """Every route the router lists, once all pods list the same (for reads that plan nothing)."""
    for url in client.urls:
        client.check_ready(url)
    return client.list_agreed(settle_timeout)


def read_release(client: LiteLLMClient, tell: Tell) -> LiteLLMRelease:
    """The LiteLLM the proxy runs: the pod that takes the writes decides what apply can do.
    A version outside the tested range is a warning, never a refusal."""
    versions = {url: client.read_version(url) for url in client.urls}
    release = LiteLLMRelease(versions[client.write_url])
    if warning := release.warning():
        tell(f"warning: {warning}")
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{url}: {v or 'unknown'}" for url, v in versions.items())
        tell(
            f"warning: the proxy pods run different LiteLLM versions ({listed}); apply follows "
            f"{client.write_url}, which takes the writes"
        )
    return release


def read_live(
    client: LiteLLMClient,
    fleet: Fleet,
    tell: Tell,
    take_over: bool = False,
    settle_timeout: float = CONFIRM_TIMEOUT,
    past: PastGroups = PastGroups(),
) -> LiveState:
    """The routes the router lists, and the stored rows it does not list of every model group
    the fleet may have written rows in: those fleet.yaml declares, those with listed routes of
    the fleet, and those `past` names, of which only rows tagged with this fleet are read: a
    row of ours no plan can see would stay forever. And any stored row, of whatever group,
    holding an id the plan would create (sync/live/stored.py read_holders)."""
    with held():
        return _read_live(client, fleet, tell, take_over, settle_timeout, past)


def _read_live(
    client: LiteLLMClient,
    fleet: Fleet,
    tell: Tell,
    take_over: bool,
    settle_timeout: float,
    past: PastGroups,
) -> LiveState:
    from sync.live.stored import read_holders, read_unlisted

    listed = read_agreed(client, fleet, take_over, settle_timeout)
    groups = fleet.model_names | {r.model_name for r in listed if r.fleet == fleet.name}
    release = read_release(client, tell)  # said by each pod's readiness: no request
    # The plan of what the router lists is made while the proxy answers the search for stored
    # rows it does not list; it is the plan when the search finds none (the usual case).
    ahead = Ahead(lambda: LiveState(listed, (), release.version).plan(fleet, take_over))
    unlisted = [
        r
        for r in read_unlisted(client, groups | past.groups, listed)
        if r.model_name in groups or r.fleet == fleet.name
    ]
    first = None if unlisted else ahead.result()
    held, plan = read_holders(client, fleet, listed, unlisted, take_over, release.version, first)
    unlisted += held
    found = (past.note, check_providers(client, fleet, listed), _sourceless(fleet, listed))
    notes = [n for n in found if n]
    for note in notes:  # said once the proxy was read: a failed read is one line, its error
        tell(f"note: {note}")
    made = (fleet, take_over, plan) if plan is not None else None
    return LiveState(listed, unlisted, release.version, tuple(notes), made)


class Ahead(Generic[T]):
    """`work` done in a thread of its own while the caller waits on the proxy; result() is its
    value or raises what it raised. A daemon thread: a run that ends first (an error, a
    signal) does not wait for it."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._value: list[T] = []
        self._error: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self._value.append(work())
        except BaseException as exc:  # handed to the caller by result()
            self._error.append(exc)

    def result(self) -> T:
        self._thread.join()
        if self._error:
            raise self._error[0]
        return self._value[0]


def read_agreed(
    client: LiteLLMClient, fleet: Fleet, take_over: bool, settle_timeout: float
) -> list[Route]:
    """The routes the router lists once every pod agrees on what this fleet's plan reads."""
    from sync.core.planner import make_plan
    from sync.core.render import render

    desired: list[Route] = []  # rendered once several pods must agree (one agrees with itself)

    def reads(routes: Sequence[Route]) -> object:
        # Pods must agree on what this plan reads, not on LiteLLM's enrichment of the rest.
        if not desired:
            desired.extend(render(fleet))
        return make_plan(fleet, desired, routes, take_over=take_over).agreement

    for url in client.urls:
        client.check_ready(url)
    return client.list_agreed(settle_timeout, project=reads)


def check_providers(client: LiteLLMClient, fleet: Fleet, listed: Sequence[Route]) -> str | None:
    """Raise UnknownProviders (nothing written) when a route fleet.yaml renders names a provider
    the proxy does not know: LiteLLM would store it and never load it (sync/core/providers.py).
    Asks the proxy only when a provider is not already known from the routes its router lists
    (a no-op plan asks nothing). Returns a note when a pod does not list its providers (the
    check is then made with the others)."""
    from sync.core import providers
    from sync.core.render import render

    desired = render(fleet)
    if not providers.unknown(fleet, desired, providers.known((), listed, os.environ)):
        return None  # every provider is one a listed route has (or known without asking)
    answers = {url: client.read_providers(url) for url in client.urls}
    lists = [a for a in answers.values() if isinstance(a, frozenset)]
    unread = [f"{u}: {a}" for u, a in answers.items() if isinstance(a, str)]
    note = (
        f"the proxy did not list the providers it knows ({'; '.join(unread)}): a provider it "
        "does not know is not caught before writing"
        if unread
        else None
    )
    if not lists:
        return note
    names = providers.known(frozenset.intersection(*lists), listed, os.environ)
    problems = providers.unknown(fleet, desired, names)
    if problems:
        raise UnknownProviders(
            f"{len(problems)} route(s) of {fleet.file} name a provider the proxy does not know "
            "(GET /public/providers): LiteLLM would store them and never load them. Fix the "
            f"provider, or, if the proxy does load it (a custom provider of its config), add it "
            f"to {providers.EXTRA_VARIABLE}; nothing was sent to the proxy",
            problems,
        )
    return note


def _sourceless(fleet: Fleet, listed: Sequence[Route]) -> str:
    """What a run that resolves no source says where it matters (docs "Source"): it owns only
    routes without a source tag, so the fleet's routes CI tagged are another's to it."""
    tagged = sum(1 for r in listed if r.fleet == fleet.name and r.source is not None)
    if fleet.source is not None or not tagged:
        return ""
    return (
        f"{tagged} route(s) of fleet {fleet.name} carry a source tag, and this run resolves "
        "no source (no source: in fleet.yaml, no GITHUB_REPOSITORY, no origin remote of the "
        "git repository holding fleet.yaml): it owns only routes without one, and a host such "
        "a route serves is a conflict; set source: owner/name in fleet.yaml to the repository "
        "CI applies from"
    )
