"""Reading back an apply: every pod's listing until each written change shows in its router, or
the deadline of one wait passes (sooner once the apply is interrupted)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from sync.collector import held
from sync.core.changes import Change, Delete
from sync.core.compare import diff
from sync.core.render import Route
from sync.core.result import Outcome, Status
from sync.live.client import ErrorKind, LiteLLMClient, ProxyError
from sync.live.interrupt import Interrupt
from sync.live.progress import Progress


@dataclass(frozen=True)
class Written:
    change: Change
    # written: answered as done; ambiguous: the answers left it open. Both are read back.
    state: Literal["written", "ambiguous", "failed", "skipped", "not started"]
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
        return (
            "not started"
            if self.state == "not started"
            else "failed"
            if self.state == "failed"
            else "skipped"
        )


WAKE = 0.25  # how often a listing in progress looks at the interrupt


@dataclass
class Answer:
    """What a listing's thread got: the routes, or the error."""

    routes: list[Route] = field(default_factory=list)
    error: BaseException | None = None


def matches(live: Route | None, desired: Route) -> bool:
    return live is not None and not diff(live, desired)


def shows(change: Change, by_id: dict[str, Route]) -> bool:
    if isinstance(change, Delete):
        return change.id not in by_id
    return matches(by_id.get(change.id), change.route)


class ReadBack:
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
        interrupt: Interrupt,
    ) -> None:
        self.client, self.timeout, self.poll, self.sleep = client, timeout, poll, sleep
        self.progress, self.interrupt = progress, interrupt
        self.seen: dict[tuple[str, str, str], bool] = {}
        self.errors: dict[str, str] = {}
        self.last: dict[str, dict[str, Route]] = {}  # each pod's latest listing, by id

    def _key(self, w: Written, url: str) -> tuple[str, str, str]:
        return (w.change.id, w.change.action, url)

    def lagging(self, w: Written) -> tuple[str, ...]:
        return tuple(u for u in self.client.urls if not self.seen.get(self._key(w, u), False))

    def _listing(self, url: str) -> list[Route]:
        """One pod's listing; once the apply is interrupted, given up at its deadline (a slow
        proxy must not keep the account from being printed before GitHub's kill)."""
        done, answer = threading.Event(), Answer()

        def read() -> None:
            try:
                answer.routes = self.client.list_routes(url)
            except BaseException as exc:  # any failure is the listing's, never an empty one
                answer.error = exc
            finally:
                done.set()

        # A daemon thread: a listing given up must not hold the process (sync/run/interrupt.py).
        threading.Thread(target=read, daemon=True, name="fleet-sync read-back").start()
        while not done.wait(WAKE):
            if self.interrupt.requested and time.monotonic() >= self.interrupt.deadline(math.inf):
                raise ProxyError(
                    ErrorKind.TRANSIENT, "no listing before the interrupted apply's deadline"
                )
        if answer.error is not None:
            raise answer.error
        return answer.routes

    def wait(self, pending: Iterable[Written]) -> None:
        pending = [w for w in pending if self.lagging(w)]
        total, began = len(pending), time.monotonic()
        deadline = began + self.timeout
        while pending:
            with held():  # sync/collector.py: a poll of 10,000 routes, not the waits between
                self._read_all(pending)
            pending = [w for w in pending if self.lagging(w)]
            elapsed = time.monotonic() - began
            self.progress.waiting(total - len(pending), total, elapsed, self.timeout)
            if not pending or time.monotonic() >= self.interrupt.deadline(deadline):
                return
            self.sleep(self.poll)

    def _read_all(self, pending: list[Written]) -> None:
        """One poll: every pod's listing, and what of `pending` each shows."""
        for url in self.client.urls:
            try:
                by_id = {r.id: r for r in self._listing(url)}
            except ProxyError as exc:
                self.errors[url] = str(exc)
                continue
            self.errors.pop(url, None)
            self.last[url] = by_id
            for w in pending:
                key = self._key(w, url)
                self.seen[key] = self.seen.get(key, False) or shows(w.change, by_id)

    def outcomes(self, written: Iterable[Written]) -> list[Outcome]:
        outcomes = []
        for w in written:
            if not w.ok:
                outcomes.append(Outcome(w.change, w.unread_status, w.detail))
                continue
            lagging = self.lagging(w)
            if not lagging:
                outcomes.append(Outcome(w.change, "done", w.detail))
            else:
                why = "; ".join(f"{u}: {self.errors[u]}" for u in lagging if u in self.errors)
                waited = (
                    "before the interrupted apply's deadline"
                    if self.interrupt.requested
                    else f"within {self.timeout:g}s"
                )
                detail = f"{w.detail}; not listed by {', '.join(lagging)} {waited}"
                detail += f" ({why})" if why else ""
                outcomes.append(Outcome(w.change, "unconfirmed", detail, lagging))
        return outcomes
