"""Python's cycle collector held off while a run builds its large values.

A plan of 10,000 routes holds millions of objects (the listing: ~200 keys a route), and the
collector, triggered by the count of new objects, walks them again and again while the read,
the render and the plan allocate: half of a plan's CPU time. Nothing here makes reference cycles
worth collecting mid-phase (reference counting frees the rest at once), so the collector waits
until the phase ends and then runs as usual. Nested phases and phases in threads leave it as
the outermost found it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def held() -> Iterator[None]:
    """The collector off for the block (back on after the last block ends, if it was on)."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                _age_everything()
                gc.enable()


def _age_everything() -> None:
    """Move every object the collector tracks into its oldest generation, without a walk (two
    list splices). What a held block built sits in the youngest otherwise, and the first
    allocation after gc.enable() walks all of it, then the middle generation again: 0.2 s after
    a plan of 10,000 routes. In the oldest, it waits for a full collection, which runs as
    usual once enough has survived since the last."""
    gc.freeze()
    gc.unfreeze()


def retire() -> None:
    """Leave every object alive now out of the collections still to come: at the end of a
    command, before the interpreter exits. Python's finalisation runs the collector over
    whatever modules still hold (a plan's kept renders and comparisons: millions of objects),
    ~0.2 s at 10,000 routes, to find cycles the exit frees anyway. The objects are still freed
    as the modules go; only that walk is skipped."""
    gc.freeze()
