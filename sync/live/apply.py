"""Executing a Plan: creates, then updates and resumes, then pauses, then deletes; ambiguous writes
read back; the result is what every listed pod's router lists afterwards, not what the writes
answered.

A write counts only once the router lists it (what clients route on): LiteLLM can store a route
it then fails to load ("saved to the database, but ... not live"), and a database lookup would
find that row. A model group's pauses and deletes (replacements included) take routes out of
service: they run only after every create, update and resume of that group is listed, so a group
never loses its last serving route to a write that serves nothing. An update every pod still
lists with its previous values at the deadline was stored but not loaded: its previous values
are written back where they can be (sync/live/rollback.py), so a pod that starts later loads
what the others serve."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Literal

from sync.collector import held
from sync.core.compare import diff
from sync.core.ownership import Owner
from sync.core.plan import Change, Create, Delete, Plan, Update
from sync.core.render import Route
from sync.core.result import Outcome, Result, Status
from sync.errors import FleetSyncError
from sync.live.client import ErrorKind, LiteLLMClient, ProxyError
from sync.live.progress import Progress, Silent
from sync.live.rollback import still_previous, undo

WRITE_ATTEMPTS = 3
FATAL = (ErrorKind.AUTH, ErrorKind.NO_DATABASE)


class ApplyAborted(FleetSyncError):
    """Nothing more can be written (bad key, no database); carries what was done so far."""

    def __init__(self, error: ProxyError, outcomes: tuple[Outcome, ...]) -> None:
        super().__init__(str(error))
        self.error = error
        self.outcomes = outcomes


@dataclass(frozen=True)
class _Written:
    change: Change
    # written: answered as done; ambiguous: the answers left it open. Both are read back.
    state: Literal["written", "ambiguous", "failed", "skipped"]
    detail: str
    not_served: bool = False  # LiteLLM answered it stored the write and its router dropped it

    @property
    def ok(self) -> bool:
        return self.state in ("written", "ambiguous")

    @property
    def unread_status(self) -> Status:
        """Its status before (or without) read-back."""
        if self.state in ("written", "ambiguous"):
            return "unconfirmed"
        return "failed" if self.state == "failed" else "skipped"


def apply_plan(
    plan: Plan,
    client: LiteLLMClient,
    owner: Owner,
    *,
    concurrency: int = 4,
    confirm_timeout: float = 40.0,
    poll_interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    progress: Progress | None = None,
) -> Result:
    """concurrency is per pod: each route's writes go to the pod client.pod_for chooses.
    `owner`: the run's ownership rule, asked about a stored row holding a create's id."""
    progress = progress or Silent()
    written: list[_Written] = []
    blocked: dict[str, str] = {}  # model group -> why its pauses and deletes must not run
    for stage in ("create", "update"):
        todo = [c for c in plan.of(stage) if not _is_pause(c)]
        results = _run_stage(stage, todo, client, owner, concurrency, written, progress)
        written += results
        _block_unwritten(results, blocked)
    reader = _ReadBack(client, confirm_timeout, poll_interval, sleep, progress)
    # A pause takes a route out of service as a delete does: both wait for their group.
    pauses = [c for c in plan.of("update") if _is_pause(c)]
    for stage, changes in (("pause", pauses), ("delete", list(plan.of("delete")))):
        todo = _hold_back(changes, written, blocked, reader)
        results = _run_stage(stage, todo, client, owner, concurrency, written, progress)
        written += results
        _block_unwritten(results, blocked)
    reader.wait([w for w in written if w.ok])
    outcomes = [
        _settle(o, w, reader, client)
        for o, w in zip(reader.outcomes(written), written, strict=True)
    ]
    order = {c.id + c.action: i for i, c in enumerate(plan.changes)}
    return Result(plan, tuple(sorted(outcomes, key=lambda o: order[o.change.id + o.change.action])))


def _is_pause(change: Change) -> bool:
    return isinstance(change, Update) and change.pause is True


def _block_unwritten(results: Iterable[_Written], blocked: dict[str, str]) -> None:
    """A group whose create/update/pause failed or stayed ambiguous keeps its old routes."""
    for w in results:
        if w.state in ("failed", "ambiguous"):
            why = "failed" if w.state == "failed" else "stayed ambiguous"
            blocked.setdefault(w.change.model_name, f"did not go through ({w.change.id} {why})")


def _hold_back(
    changes: list[Change], written: list[_Written], blocked: dict[str, str], reader: _ReadBack
) -> list[Change]:
    """The changes that take a route out of service (pauses, deletes) that may run: those of a
    group whose every create and update so far is listed by every pod. The others are added to
    `written` as skipped, with the reason; the ones that may run are returned."""
    groups = {c.model_name for c in changes}
    gate = [w for w in written if w.ok and w.change.model_name in groups]
    reader.wait(gate)
    for w in gate:
        if reader.lagging(w):
            blocked.setdefault(w.change.model_name, f"is not listed by the router ({w.change.id})")
    written += [
        _Written(
            c, "skipped", f"skipped: a create/update of {c.model_name} {blocked[c.model_name]}"
        )
        for c in changes
        if c.model_name in blocked
    ]
    return [c for c in changes if c.model_name not in blocked]


def _run_stage(
    stage: str,
    todo: list[Change],
    client: LiteLLMClient,
    owner: Owner,
    concurrency: int,
    done_so_far: list[_Written],
    progress: Progress,
) -> list[_Written]:
    if not todo:
        return []
    progress.stage(stage, len(todo))

    def write(change: Change) -> _Written:
        result = _write(change, client, owner)
        progress.step(stage, result.state)
        return result

    with ExitStack() as stack:
        # One pool per pod: `concurrency` writes in flight on each pod, however fast the others.
        pools: dict[str, ThreadPoolExecutor] = {}
        futures: list[Future[_Written]] = []
        for change in todo:
            pod = client.pod_for(change.id)
            if pod not in pools:
                pools[pod] = stack.enter_context(ThreadPoolExecutor(max_workers=concurrency))
            futures.append(pools[pod].submit(write, change))
        results: list[_Written] = []
        fatal: ProxyError | None = None
        for change, future in zip(todo, futures, strict=True):
            try:
                results.append(future.result())
            except ProxyError as exc:  # only FATAL kinds escape _write
                fatal = fatal or exc
                results.append(_Written(change, "failed", str(exc)))
    progress.stage_done(stage)
    if fatal is not None:
        outcomes = tuple(
            Outcome(w.change, w.unread_status, w.detail) for w in [*done_so_far, *results]
        )
        raise ApplyAborted(fatal, outcomes)
    return results


class _Ambiguous(Exception):
    """The write's answers never settled whether it happened; read-back will tell."""


class _NotServed(Exception):
    """LiteLLM answered that it stored the route, and its router does not list it."""


def _write(change: Change, client: LiteLLMClient, owner: Owner) -> _Written:
    try:
        if isinstance(change, Create):
            return _Written(change, "written", _create(change.route, client, owner))
        if isinstance(change, Update):
            return _Written(change, "written", _update(change, client))
        return _Written(change, "written", _delete(change, client))
    except _Ambiguous as exc:
        return _Written(change, "ambiguous", str(exc))
    except _NotServed as exc:
        return _Written(change, "failed", str(exc), not_served=True)
    except ProxyError as exc:
        if exc.kind in FATAL:
            raise
        if exc.kind is ErrorKind.MAYBE_COMMITTED:  # a follow-up write answered ambiguously
            return _Written(change, "ambiguous", f"ambiguous: {exc}")
        return _Written(change, "failed", str(exc))


def _matches(live: Route | None, desired: Route) -> bool:
    return live is not None and not diff(live, desired)


# LiteLLM's answer when the router of the pod that took the write reloaded and does not serve
# what it stored: "Model create was saved to the database, but the model id(s) [...] are not
# live in this pod's router ...". Any other 500 (the id already exists, say) says nothing
# about serving: the pod may simply not have reloaded yet, so read-back decides.
SAVED_NOT_SERVED = "saved to the database, but"


def _not_served(exc: ProxyError) -> _NotServed | None:
    if SAVED_NOT_SERVED not in str(exc):
        return None
    return _NotServed(f"stored by LiteLLM but not listed by its router: {exc}")


def _create(route: Route, client: LiteLLMClient, owner: Owner) -> str:
    note = ""
    for _ in range(WRITE_ATTEMPTS):
        try:
            client.create(route)
            return note or "created"
        except ProxyError as exc:
            if exc.kind is not ErrorKind.MAYBE_COMMITTED:
                raise
            # Never re-create blindly: the row may exist (written, or the id was taken).
            live = client.find_route(route.id, route.model_name)
            if _matches(live, route):
                return f"created ({exc.status or 'no answer'} answered; read back: listed)"
            stored = live or client.find_stored(route.id)
            if stored is None:
                note = f"re-sent after an ambiguous answer ({exc})"
                continue
            _check_holder(stored, route, live is not None, owner)
            if live is None and (not_served := _not_served(exc)) is not None:
                raise not_served from None
            if _matches(stored, route):
                # Stored as wanted; this pod's router has not loaded it yet (another pod
                # wrote it, say). The listing decides, and the group's deletes wait for it.
                return f"stored ({exc.status or 'no answer'} answered); waiting for the router"
            client.update(route)
            return "id existed; updated to the desired state"
    raise _Ambiguous(f"ambiguous after {WRITE_ATTEMPTS} attempts; left to read-back")


def _check_holder(stored: Route, route: Route, listed: bool, owner: Owner) -> None:
    """Refuse (nothing written) a row holding the id that is not the fleet's by the plan's rule:
    ids are in plans, and a PATCH would dress a row planted under one as the fleet's."""
    if not (held := owner.holds(stored, route)).owned:
        where = "listed by the router" if listed else "not listed by the router"
        raise ProxyError(
            ErrorKind.CLIENT,
            f"id {route.id} is held by a stored row this fleet does not own ({held.reason}, "
            f"{where}); nothing was written to it: remove it by hand",
        )


def _update(change: Update, client: LiteLLMClient) -> str:
    """An in-place PATCH. It removes a top-level key only where the plan says PATCH can
    (litellm_params_to_remove, LiteLLM 1.109+), and first, alone, checked in the stored row:
    the record of what was written moves on only once the key is gone. Elsewhere the plan
    replaces the route instead, so an update never deletes and re-creates it."""
    route = change.route
    keys = [path.split(".", 1)[1] for path in change.removes]
    if keys:
        _remove_in_place(route.id, keys, client)
    for _ in range(WRITE_ATTEMPTS):
        try:
            client.update(route)
        except ProxyError as exc:
            if exc.kind is ErrorKind.NOT_FOUND:
                client.create(route)  # deleted by someone since the plan: put it back
                return "was gone; created"
            if exc.kind is not ErrorKind.MAYBE_COMMITTED:
                raise
            live = client.find_route(route.id, route.model_name)
            if _matches(live, route):
                return f"updated ({exc.status or 'no answer'} answered; read back: listed)"
            if live is None and (not_served := _not_served(exc)) is not None:
                raise not_served from None
            continue  # PATCH carries the full desired state, so sending it again is safe
        # A drain's write is a pause, an enabled host's a resume: said as the plan said it.
        done = "updated" if change.pause is None else "paused" if change.pause else "resumed"
        return f"{done}; removed {', '.join(keys)} in place" if keys else done
    raise _Ambiguous(f"ambiguous after {WRITE_ATTEMPTS} attempts; left to read-back")


def _remove_in_place(route_id: str, keys: list[str], client: LiteLLMClient) -> None:
    for _ in range(WRITE_ATTEMPTS):
        try:
            stored = client.remove_keys(route_id, keys)
        except ProxyError as exc:
            if exc.kind is ErrorKind.NOT_FOUND:
                return  # gone since the plan: the update puts it back whole
            if exc.kind is not ErrorKind.MAYBE_COMMITTED:
                raise
            continue  # removing an absent key is a no-op: sending it again is safe
        kept = [k for k in keys if k in (stored.get("litellm_params") or {})]
        if kept:
            raise ProxyError(
                ErrorKind.CLIENT,
                f"LiteLLM kept {', '.join(kept)} after litellm_params_to_remove; nothing else was "
                "written, so the next plan shows the removal again",
            )
        return
    raise _Ambiguous(f"removal ambiguous after {WRITE_ATTEMPTS} attempts; left to read-back")


def _delete(change: Delete, client: LiteLLMClient) -> str:
    for _ in range(WRITE_ATTEMPTS):
        try:
            client.delete(change.id)
            return "deleted"
        except ProxyError as exc:
            if exc.kind is ErrorKind.NOT_FOUND:
                return "already gone"
            if exc.kind is not ErrorKind.MAYBE_COMMITTED:
                raise
            # Gone from the database, not just from the router: a row left there comes back.
            if client.find_stored(change.id) is None:
                return f"deleted ({exc.status or 'no answer'} answered; read back: gone)"
    raise _Ambiguous(f"ambiguous after {WRITE_ATTEMPTS} attempts; left to read-back")


def _settle(outcome: Outcome, w: _Written, reader: _ReadBack, client: LiteLLMClient) -> Outcome:
    """An update LiteLLM stored but its router did not load is failed, its previous values
    written back where they can be: one every pod still lists with its previous values after
    the deadline (1.108, 1.110: the routers keep them), or one LiteLLM answered it stored and
    no longer serves (1.98: the router of the pod that took it drops the route)."""
    change = outcome.change
    if not isinstance(change, Update):
        return outcome
    if w.not_served:
        why = "the pod that took it answered that its router no longer lists the route"
    else:
        listings = [reader.last[u] for u in client.urls if u in reader.last]
        if outcome.status != "unconfirmed" or len(listings) != len(client.urls):
            return outcome
        if not still_previous(change, listings):
            return outcome
        why = f"every pod still lists the previous values after {reader.timeout:g}s"
    return Outcome(
        change,
        "failed",
        undo(change, why, client, w.not_served or w.state == "written"),
        outcome.lagging,
    )


def _shows(change: Change, by_id: dict[str, Route]) -> bool:
    if isinstance(change, Delete):
        return change.id not in by_id
    return _matches(by_id.get(change.id), change.route)


class _ReadBack:
    """Reads every pod until each written change shows in its router's listing, or the
    deadline of one wait passes. A pod that showed a change keeps it: pods only move forward to
    the database state."""

    def __init__(
        self,
        client: LiteLLMClient,
        timeout: float,
        poll: float,
        sleep: Callable[[float], None],
        progress: Progress,
    ) -> None:
        self.client, self.timeout, self.poll, self.sleep = client, timeout, poll, sleep
        self.progress = progress
        self.seen: dict[tuple[str, str, str], bool] = {}
        self.errors: dict[str, str] = {}
        self.last: dict[str, dict[str, Route]] = {}  # each pod's latest listing, by id

    def _key(self, w: _Written, url: str) -> tuple[str, str, str]:
        return (w.change.id, w.change.action, url)

    def lagging(self, w: _Written) -> tuple[str, ...]:
        return tuple(u for u in self.client.urls if not self.seen.get(self._key(w, u), False))

    def wait(self, pending: Iterable[_Written]) -> None:
        pending = [w for w in pending if self.lagging(w)]
        total, began = len(pending), time.monotonic()
        deadline = began + self.timeout
        while pending:
            with held():  # sync/collector.py: a poll of 10,000 routes, not the waits between
                self._read_all(pending)
            pending = [w for w in pending if self.lagging(w)]
            elapsed = time.monotonic() - began
            self.progress.waiting(total - len(pending), total, elapsed, self.timeout)
            if not pending or time.monotonic() >= deadline:
                return
            self.sleep(self.poll)

    def _read_all(self, pending: Sequence[_Written]) -> None:
        """One poll: every pod's listing, and what of `pending` each shows."""
        for url in self.client.urls:
            try:
                by_id = {r.id: r for r in self.client.list_routes(url)}
            except ProxyError as exc:
                self.errors[url] = str(exc)
                continue
            self.errors.pop(url, None)
            self.last[url] = by_id
            for w in pending:
                key = self._key(w, url)
                self.seen[key] = self.seen.get(key, False) or _shows(w.change, by_id)

    def outcomes(self, written: Iterable[_Written]) -> list[Outcome]:
        outcomes = []
        for w in written:
            if not w.ok:
                outcomes.append(
                    Outcome(w.change, "failed" if w.state == "failed" else "skipped", w.detail)
                )
                continue
            lagging = self.lagging(w)
            if not lagging:
                outcomes.append(Outcome(w.change, "done", w.detail))
            else:
                why = "; ".join(f"{u}: {self.errors[u]}" for u in lagging if u in self.errors)
                detail = f"{w.detail}; not listed by {', '.join(lagging)} within {self.timeout:g}s"
                detail += f" ({why})" if why else ""
                outcomes.append(Outcome(w.change, "unconfirmed", detail, lagging))
        return outcomes
