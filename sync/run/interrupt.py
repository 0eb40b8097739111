"""SIGINT and SIGTERM during a run (GitHub cancels a job with SIGINT, SIGTERM 7.5 s later,
SIGKILL at 10 s). Before any write the run stops at once: nothing was sent. During an apply's
writes the first signal asks the apply to stop (sync/live/interrupt.py): no new write, what is
in flight settled, the result printed and posted, then exit 128 + the signal (130, 143). A
second signal ends the process at once with one line."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from sync.live.interrupt import Interrupt

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """A signal stopped a read: before any write the run ends (sync/commands/main.py); after a
    target wrote, the apply run marks the rest not started (sync/run/apply.py). Not a
    FleetSyncError: no target's error handling (sync/run/outcome.py attempt) may take it for
    that target's own and go on with the next."""

    def __init__(self, signum: int, wrote: bool = False) -> None:
        said = "before any write; nothing was sent to the proxy"
        if wrote:
            said = "while the next target was read; it and the rest were not started"
        super().__init__(f"interrupted ({signal.Signals(signum).name}) {said}")
        self.exit_code = 128 + signum


class Signals:
    """What a run does on SIGINT / SIGTERM: before its first write it stops at once; from then
    on the first signal asks the apply to stop (`interrupt`) and the run to start no target."""

    def __init__(self) -> None:
        self.interrupt = Interrupt()
        self.signum: int | None = None
        self.wrote = False  # an apply's writes began in this run
        self.reading = False  # a later target is being read: a signal stops the read at once

    @property
    def exit_code(self) -> int | None:
        """128 + the first signal, once one came."""
        return None if self.signum is None else 128 + self.signum

    def handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.signum is not None:
            left = (
                "writes in flight may land or not, the next apply converges"
                if self.wrote
                else "nothing was sent to the proxy"
            )
            _say(f"error: {name} again: stopped at once; {left}")
            os._exit(128 + self.signum)
        self.signum = signum
        if not self.wrote or self.reading:
            raise Interrupted(signum, self.wrote)
        self.interrupt.request()
        _say(f"{name}: no new write starts; settling the writes in flight, then the result "
             "(a second signal stops at once)")  # fmt: skip

    @contextmanager
    def reads(self) -> Iterator[None]:
        """A later target's read: abandoned at once on a signal (nothing of it was written)."""
        self.reading = True
        try:
            yield
        finally:
            self.reading = False

    def writes(self) -> Interrupt:
        """An apply's writes begin: a signal from now on settles instead of stopping."""
        self.wrote = True
        return self.interrupt


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # a closed stderr must not keep the process from stopping


@contextmanager
def handled() -> Iterator[Signals]:
    """The run's handlers of SIGINT and SIGTERM while it lasts (main thread only)."""
    signals = Signals()
    previous = {s: signal.signal(s, signals.handle) for s in SIGNALS}
    try:
        yield signals
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
