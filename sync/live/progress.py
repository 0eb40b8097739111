"""Progress of a long apply on stderr: one live line on a terminal, plain lines in CI logs.

An apply of hundreds of routes runs for minutes (every LiteLLM write reloads a pod's router).
Each stage reports written / ambiguous / failed / left, and the read-back how many changes every
pod shows. A terminal gets one line rewritten in place (at most 10 times a second); anything
else (a CI log) gets a plain line when a stage starts and ends and every `interval` seconds in
between. stdout is never touched, so `--format json` stays parseable.

A small writer rather than rich or tqdm: neither prints plain periodic lines when stderr is not
a terminal (rich's live display prints only the final state there, tqdm writes carriage-return
frames into the log), and importing rich.progress costs ~40 ms, a new dependency for one line.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Protocol, TextIO

from sync.secrets import display

WRITE_STATES = ("written", "ambiguous", "failed")


class Progress(Protocol):
    """What apply tells while it works; every method may be called from worker threads."""

    def stage(self, name: str, total: int) -> None: ...

    def step(self, name: str, state: str) -> None: ...

    def stage_done(self, name: str) -> None: ...

    def waiting(self, confirmed: int, pending: int, elapsed: float, timeout: float) -> None: ...


class Silent:
    """No progress shown (library use, tests)."""

    def stage(self, name: str, total: int) -> None:
        pass

    def step(self, name: str, state: str) -> None:
        pass

    def stage_done(self, name: str) -> None:
        pass

    def waiting(self, confirmed: int, pending: int, elapsed: float, timeout: float) -> None:
        pass


class _Stage:
    def __init__(self, name: str, total: int, began: float) -> None:
        self.name = name
        self.total = total
        self.began = began
        self.counts = dict.fromkeys(WRITE_STATES, 0)

    def text(self, now: float, finished: bool = False) -> str:
        written, ambiguous, failed = (self.counts[s] for s in WRITE_STATES)
        extra = f", {ambiguous} ambiguous" if ambiguous else ""
        seconds = now - self.began
        if finished:
            return (
                f"{self.name} done: {written} written{extra}, {failed} failed of {self.total} "
                f"in {seconds:.0f} s"
            )
        left = self.total - written - ambiguous - failed
        return (
            f"{self.name}: {written} written{extra}, {failed} failed, {left} left "
            f"of {self.total} ({seconds:.0f} s)"
        )


class ProgressWriter:
    def __init__(
        self,
        stream: TextIO,
        live: bool,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        prefix: str = "",
    ) -> None:
        self.stream = stream
        self.prefix = prefix  # "[prod] " while a run over targets works on prod
        self.live = live
        self.interval = 0.1 if live else interval
        self.clock = clock
        self._lock = threading.Lock()
        self._stage: _Stage | None = None
        self._shown_at = float("-inf")
        self._line = ""  # the live line on screen, to be cleared
        self._waited = False

    def stage(self, name: str, total: int) -> None:
        with self._lock:
            self._stage = _Stage(name, total, self.clock())
            self._show(f"{name}: {total} to write", force=True)

    def step(self, name: str, state: str) -> None:
        with self._lock:
            if self._stage is None or self._stage.name != name:
                return
            self._stage.counts[state] = self._stage.counts.get(state, 0) + 1
            self._show(self._stage.text(self.clock()))

    def stage_done(self, name: str) -> None:
        with self._lock:
            if self._stage is not None and self._stage.name == name:
                self._show(self._stage.text(self.clock(), finished=True), force=True)
                self._end_line()
            self._stage = None

    def waiting(self, confirmed: int, pending: int, elapsed: float, timeout: float) -> None:
        with self._lock:
            text = (
                f"read-back: {confirmed} of {pending} changes shown by every pod "
                f"({elapsed:.0f} s of at most {timeout:g} s)"
            )
            self._show(text, force=not self._waited or confirmed == pending)
            self._waited = True

    def finish(self) -> None:
        """End the live line (the caller's job once apply returns or raises)."""
        with self._lock:
            self._end_line()

    def _show(self, text: str, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._shown_at < self.interval:
            return
        self._shown_at = now
        text = display.text(text)  # one line: the live line is rewritten in place
        if self.live:
            self.stream.write(f"\r\033[K{self.prefix}{text}")
            self._line = text
        else:
            self.stream.write(f"{self.prefix}fleet-sync: {text}\n")
        self.stream.flush()

    def _end_line(self) -> None:
        if self.live and self._line:
            self.stream.write("\n")
            self.stream.flush()
            self._line = ""


def progress_for(stream: TextIO, prefix: str = "") -> ProgressWriter:
    """Live on a terminal that can clear a line, periodic plain lines otherwise; each line
    starts with `prefix` (the target's, given here: apply's worker threads do not carry it)."""
    live = stream.isatty() and os.environ.get("TERM") != "dumb"
    return ProgressWriter(stream, live=live, prefix=prefix)
