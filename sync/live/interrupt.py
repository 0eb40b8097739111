"""An apply asked to stop (the first SIGINT or SIGTERM; sync/run/interrupt.py sets it): no new
write starts, writes in flight get IN_FLIGHT seconds to answer, read-back ends SETTLE seconds
after the request, so the account is printed and posted before GitHub's kill (10 s after its
first signal)."""

from __future__ import annotations

import threading
import time

IN_FLIGHT = 3.0  # seconds the writes in flight get to answer once asked to stop
SETTLE = 5.0  # seconds after the request by which read-back ends


class Interrupt:
    """Set once from a signal handler, read by the apply's threads."""

    def __init__(self, in_flight: float = IN_FLIGHT, settle: float = SETTLE) -> None:
        self.in_flight, self.settle = in_flight, settle
        self._event = threading.Event()
        self._at: float | None = None

    def request(self) -> None:
        if self._at is None:
            self._at = time.monotonic()
        self._event.set()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def deadline(self, deadline: float, within: float | None = None) -> float:
        """`deadline`, or `within` seconds (default: settle) after the request when sooner."""
        if self._at is None:
            return deadline
        return min(deadline, self._at + (self.settle if within is None else within))

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, woken at once by the request (True when requested)."""
        return self._event.wait(seconds)


NEVER = Interrupt()  # an apply nobody interrupts (tests, benchmarks): never requested
