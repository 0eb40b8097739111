"""What a run says: stdout holds the document (a plan, a result), stderr the lines about the
run, each marked with the target it is about; one-line errors stop the run or one target."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NoReturn

from sync.secrets import display

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_REFUSED, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
EXIT_SIGINT, EXIT_SIGTERM = 130, 143  # 128 + the signal that interrupted the run


class Exit(Exception):
    """The run (or one target of it) ends with `code`; what fail() said is its message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        self.code = code
        self.message = message  # what fail() said, for a target's section of the output


# The target a thread works on (fleet.yaml's targets:): its name starts each line it writes to
# stderr, so notes of targets read at once stay apart. None: no targets, lines as ever.
CURRENT_TARGET: ContextVar[str | None] = ContextVar("CURRENT_TARGET", default=None)


def target_prefix() -> str:
    name = CURRENT_TARGET.get()
    return "" if name is None else f"[{name}] "


@contextmanager
def in_target(name: str | None) -> Iterator[None]:
    """Lines written to stderr start with [name] while the work is for that target."""
    token = CURRENT_TARGET.set(name)
    try:
        yield
    finally:
        CURRENT_TARGET.reset(token)


def out(text: str) -> None:
    """Part of the run's document on stdout (the scrub of every output wraps the stream)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def err(line: str) -> None:
    """One line on stderr, as given."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def tell(line: str) -> None:
    """One line on stderr about the current target."""
    err(f"{target_prefix()}{line}")


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """One line on stderr (a message may quote what a proxy or GitHub said:
    sync/secrets/display.py), and the run or the current target ends with `code`."""
    shown = display.text(message)
    tell(f"error: {shown}")
    raise Exit(code, shown)
