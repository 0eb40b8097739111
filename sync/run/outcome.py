"""One target's work as a value: what it gave, or the exit code and message that stopped it;
targets worked on at once, their outcomes in promotion order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Generic, TypeVar

from sync.errors import FleetSyncError
from sync.run.console import Exit, in_target, tell
from sync.secrets import display

T = TypeVar("T")
MAX_READERS = 4  # targets read at once: each read is a handful of requests per pod


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """One target's work (target None: the one proxy of a fleet without targets:): its value,
    or the exit code and message of what stopped it."""

    target: str | None
    value: T | None
    code: int = 0
    error: str | None = None


def attempt(name: str | None, work: Callable[[], T]) -> Outcome[T]:
    """Run one target's work, its lines marked with its name; an error stops this target only
    (its line is on stderr, its code and message in the outcome)."""
    with in_target(name):
        try:
            return Outcome(name, work())
        except Exit as exc:
            return Outcome(name, None, exc.code, exc.message or "stopped")
        except FleetSyncError as exc:
            message = display.text(str(exc))
            tell(f"error: {message}")
            return Outcome(name, None, exc.exit_code, message)


def each(names: Sequence[str | None], work: Callable[[str | None], T]) -> list[Outcome[T]]:
    """`work` for every target, at most MAX_READERS at once; outcomes in the targets' order
    whatever order they finish in."""
    if len(names) <= 1:
        return [attempt(n, partial(work, n)) for n in names]
    pool = ThreadPoolExecutor(max_workers=min(len(names), MAX_READERS))
    futures = [pool.submit(attempt, n, partial(work, n)) for n in names]
    try:
        outcomes = [f.result() for f in futures]
    except BaseException:
        # An interrupt (raised in this thread) ends the run now: reads still in flight are
        # not waited for (sync/run/interrupt.py).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return outcomes


def named(codes: dict[str | None, int]) -> dict[str, int]:
    """The exit codes of a run's declared targets (the promotion gates read them by name)."""
    return {name: code for name, code in codes.items() if name is not None}
