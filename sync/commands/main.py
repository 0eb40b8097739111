"""The fleet-sync command. Exit codes: 0 ok / no changes, 1 error, 2 changes or drift present,
3 refused (unsafe without --force, stale saved plan), 4 apply incomplete.

The click group; each command is its own module (validate, render, plan, apply, drift, set-host,
propose, import), each importing what it uses when it runs: `--version` and `validate` stay
clear of httpx and git (tests/test_startup.py)."""

from __future__ import annotations

import contextlib
import errno
import os
import sys

import click

from sync import __version__
from sync.collector import retire
from sync.commands.apply import apply
from sync.commands.common import internal_error
from sync.commands.drift import drift
from sync.commands.import_command import import_command
from sync.commands.plan import plan
from sync.commands.propose import propose
from sync.commands.render import render_command
from sync.commands.set_host import set_host
from sync.commands.validate import validate
from sync.errors import FleetSyncError
from sync.run.console import EXIT_ERROR, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM, Exit
from sync.run.interrupt import Interrupted
from sync.secrets import display, scrub


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="fleet-sync")
def cli() -> None:
    """Keep a LiteLLM proxy's routes equal to fleet.yaml: validate, render, plan, apply, drift.

    Exit codes: 0 ok, 1 error, 2 changes/drift (plan --detailed-exitcode, drift),
    3 refused (unsafe without --force, stale plan), 4 apply incomplete.
    """


for _command in (validate, render_command, plan, apply, drift, set_host, propose, import_command):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    # Every byte written to stdout and stderr, usage errors and internal errors included, goes
    # through the scrub: run() never lets an exception out to Python's own traceback printer,
    # which would write after the session ended.
    try:
        with scrub.session(completion=COMPLETE_VARIABLE in os.environ):
            code = run(argv)
    except OSError as exc:  # the session's last output could not be written
        code = _unwritable(exc)
    if code in INTERRUPTED:
        # The account is printed: a write still in flight (its thread) must not hold the
        # process past GitHub's kill; the next apply converges whatever it did.
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    retire()  # sync/collector.py: the exit's walk of what the run kept, skipped
    sys.exit(code)


INTERRUPTED = (EXIT_SIGINT, EXIT_SIGTERM)  # sync/run/interrupt.py


# The machine's, not fleet-sync's: a full disk, a closed pipe or stream, a read-only file system.
OUTPUT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EBADF, errno.EDQUOT, errno.EROFS, errno.EFBIG}
)


def _unwritable(exc: OSError) -> int:
    """One line for output that could not be written, on stderr if stderr still takes it."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"error: cannot write the output: {exc.strerror}\n")
        sys.stderr.flush()
    return EXIT_ERROR


# Shell completion (click's): eval "$(_FLEET_SYNC_COMPLETE=bash_source fleet-sync)" (zsh_source,
# fish_source); the shell then asks with _FLEET_SYNC_COMPLETE=bash_complete and COMP_WORDS.
COMPLETE_VARIABLE = "_FLEET_SYNC_COMPLETE"


def run(argv: list[str] | None) -> int:
    try:
        cli.main(
            args=argv, prog_name="fleet-sync", complete_var=COMPLETE_VARIABLE,
            standalone_mode=False,
        )  # fmt: skip
    except Exit as exc:
        return exc.code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_ERROR
    except click.ClickException as exc:
        exc.show()
        return EXIT_ERROR  # usage errors are errors (1), not "changes present" (2)
    except (FleetSyncError, Interrupted) as exc:
        click.echo(f"error: {display.text(str(exc))}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRNOS:
            internal_error(exc)
            return EXIT_ERROR
        return _unwritable(exc)
    except Exception as exc:  # a bug: one scrubbed line, the traceback only when asked for
        internal_error(exc)
        return EXIT_ERROR
    return EXIT_OK
