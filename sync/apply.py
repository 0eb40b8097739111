"""Executing a Plan: creates, then updates, then deletes; ambiguous writes read back; the result
is what every listed pod shows afterwards, not what the writes answered."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from .compare import diff
from .litellm import ErrorKind, LiteLLMClient, ProxyError
from .plan import Change, Create, Delete, Plan, Update
from .render import Route

Status = Literal["done", "failed", "unconfirmed", "skipped"]
WRITE_ATTEMPTS = 3
FATAL = (ErrorKind.AUTH, ErrorKind.NO_DATABASE)


@dataclass(frozen=True)
class Outcome:
    change: Change
    status: Status
    detail: str = ""
    lagging: tuple[str, ...] = ()  # pods that did not show the change by the deadline


@dataclass(frozen=True)
class Result:
    plan: Plan
    outcomes: tuple[Outcome, ...]

    @property
    def complete(self) -> bool:
        """Every change confirmed, and none withheld for want of a serving host."""
        return all(o.status == "done" for o in self.outcomes) and not self.plan.withheld

    def count(self, status: Status) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


class ApplyAborted(Exception):
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
    *,
    concurrency: int = 4,
    confirm_timeout: float = 40.0,
    poll_interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Result:
    written: list[_Written] = []
    failed_groups: set[str] = set()
    for stage in ("create", "update", "delete"):
        todo = list(plan.of(stage))
        if stage == "delete":
            skipped = [c for c in todo if c.model_name in failed_groups]
            written += [
                _Written(
                    c, "skipped", f"skipped: a create/update of {c.model_name} did not go through"
                )
                for c in skipped
            ]
            todo = [c for c in todo if c.model_name not in failed_groups]
        results = _run_stage(todo, client, concurrency, written)
        written += results
        # A group whose create/update failed or stayed ambiguous keeps its old routes.
        failed_groups |= {w.change.model_name for w in results if w.state != "written"}
    outcomes = _confirm(written, client, confirm_timeout, poll_interval, sleep)
    order = {c.id + c.action: i for i, c in enumerate(plan.changes)}
    return Result(plan, tuple(sorted(outcomes, key=lambda o: order[o.change.id + o.change.action])))


def _run_stage(
    todo: list[Change], client: LiteLLMClient, concurrency: int, done_so_far: list[_Written]
) -> list[_Written]:
    if not todo:
        return []
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(_write, change, client) for change in todo]
        results: list[_Written] = []
        fatal: ProxyError | None = None
        for change, future in zip(todo, futures, strict=True):
            try:
                results.append(future.result())
            except ProxyError as exc:  # only FATAL kinds escape _write
                fatal = fatal or exc
                results.append(_Written(change, "failed", str(exc)))
    if fatal is not None:
        outcomes = tuple(
            Outcome(w.change, w.unread_status, w.detail) for w in [*done_so_far, *results]
        )
        raise ApplyAborted(fatal, outcomes)
    return results


class _Ambiguous(Exception):
    """The write's answers never settled whether it happened; read-back will tell."""


def _write(change: Change, client: LiteLLMClient) -> _Written:
    try:
        if isinstance(change, Create):
            return _Written(change, "written", _create(change.route, client))
        if isinstance(change, Update):
            return _Written(change, "written", _update(change, client))
        return _Written(change, "written", _delete(change, client))
    except _Ambiguous as exc:
        return _Written(change, "ambiguous", str(exc))
    except ProxyError as exc:
        if exc.kind in FATAL:
            raise
        if exc.kind is ErrorKind.MAYBE_COMMITTED:  # a follow-up write answered ambiguously
            return _Written(change, "ambiguous", f"ambiguous: {exc}")
        return _Written(change, "failed", str(exc))


def _matches(live: Route | None, desired: Route) -> bool:
    return live is not None and not diff(live, desired)


def _create(route: Route, client: LiteLLMClient) -> str:
    note = ""
    for _ in range(WRITE_ATTEMPTS):
        try:
            client.create(route)
            return note or "created"
        except ProxyError as exc:
            if exc.kind is not ErrorKind.MAYBE_COMMITTED:
                raise
            # Never re-create blindly: the row may exist (written, or the id was taken).
            live = client.find_route(route.id)
            if _matches(live, route):
                return f"created ({exc.status or 'no answer'} answered; read back: present)"
            if live is not None:
                client.update(route)
                return "id existed; updated to the desired state"
            note = f"re-sent after an ambiguous answer ({exc})"
    raise _Ambiguous(f"ambiguous after {WRITE_ATTEMPTS} attempts; left to read-back")


def _update(change: Update, client: LiteLLMClient) -> str:
    """An in-place PATCH: it never removes a top-level key (the plan makes that a replacement,
    a create of the next generation before the delete), so it never needs a re-create."""
    route = change.route
    for _ in range(WRITE_ATTEMPTS):
        try:
            client.update(route)
        except ProxyError as exc:
            if exc.kind is ErrorKind.NOT_FOUND:
                client.create(route)  # deleted by someone since the plan: put it back
                return "was gone; created"
            if exc.kind is not ErrorKind.MAYBE_COMMITTED:
                raise
            if _matches(client.find_route(route.id), route):
                return f"updated ({exc.status or 'no answer'} answered; read back: matches)"
            continue  # PATCH carries the full desired state, so sending it again is safe
        return "updated"
    raise _Ambiguous(f"ambiguous after {WRITE_ATTEMPTS} attempts; left to read-back")


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
            if client.find_route(change.id) is None:
                return f"deleted ({exc.status or 'no answer'} answered; read back: gone)"
    raise _Ambiguous(f"ambiguous after {WRITE_ATTEMPTS} attempts; left to read-back")


def _shows(change: Change, by_id: dict[str, Route]) -> bool:
    if isinstance(change, Delete):
        return change.id not in by_id
    return _matches(by_id.get(change.id), change.route)


def _confirm(
    written: Iterable[_Written],
    client: LiteLLMClient,
    timeout: float,
    poll: float,
    sleep: Callable[[float], None],
) -> list[Outcome]:
    """Read every pod until each written change shows on all of them or the deadline passes."""
    written = list(written)
    pending = [w for w in written if w.ok]
    seen: dict[tuple[str, str], bool] = {}
    errors: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while pending:
        for url in client.urls:
            try:
                by_id = {r.id: r for r in client.list_routes(url)}
            except ProxyError as exc:
                errors[url] = str(exc)
                continue
            errors.pop(url, None)
            for w in pending:
                # A pod that showed a change keeps it: pods only move forward to the DB state.
                seen[(w.change.id, url)] = seen.get((w.change.id, url), False) or _shows(
                    w.change, by_id
                )
        if all(seen.get((w.change.id, u), False) for w in pending for u in client.urls):
            break
        if time.monotonic() >= deadline:
            break
        sleep(poll)
    outcomes = []
    for w in written:
        if not w.ok:
            outcomes.append(
                Outcome(w.change, "failed" if w.state == "failed" else "skipped", w.detail)
            )
            continue
        lagging = tuple(u for u in client.urls if not seen.get((w.change.id, u), False))
        if not lagging:
            outcomes.append(Outcome(w.change, "done", w.detail))
        else:
            why = "; ".join(f"{u}: {errors[u]}" for u in lagging if u in errors)
            detail = f"{w.detail}; not shown by {', '.join(lagging)} within {timeout:g}s"
            detail += f" ({why})" if why else ""
            outcomes.append(Outcome(w.change, "unconfirmed", detail, lagging))
    return outcomes
