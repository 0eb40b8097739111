"""The base of every error fleet-sync explains in one sentence."""

from __future__ import annotations


class FleetSyncError(Exception):
    """An error a command reports as one line, `error: <message>`, and exits with `exit_code`
    (1 unless the part says otherwise). Parts raise it; only sync/commands prints it."""

    exit_code = 1
