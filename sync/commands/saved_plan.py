"""apply --plan FILE: the saved plan a reviewer saw, read like any JSON fleet-sync did not write
(whoever runs apply hands it back), and refused once the live plan moved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sync.commands.common import EXIT_REFUSED, fail
from sync.secrets.display import printable
from sync.untrusted.json_parser import parse_json

if TYPE_CHECKING:
    from sync.core.plan import Plan

# A saved plan creating 10,000 routes is ~8 MB of JSON; one past this is not a plan.
SAVED_PLAN_MAX_BYTES = 64 * 2**20


@dataclass(frozen=True)
class SavedPlan:
    path: Path
    hash: str
    fleet: str


def read_saved(path: Path) -> SavedPlan:
    """The saved plan's hash and fleet, or a one-line error naming the file (exit 1). Read up to
    the cap only: /dev/zero never ends."""
    try:
        with path.open("rb") as fh:
            body = fh.read(SAVED_PLAN_MAX_BYTES + 1)
    except OSError as exc:
        fail(f"{path}: cannot read the saved plan ({exc.strerror or exc})")
    try:
        data = parse_json(body, max_bytes=SAVED_PLAN_MAX_BYTES, what="the file")
    except ValueError as exc:
        fail(f"{path}: not a saved fleet-sync plan ({exc})")
    saved_hash = data.get("hash") if isinstance(data, dict) else None
    saved_fleet = data.get("fleet") if isinstance(data, dict) else None
    if not isinstance(saved_hash, str) or not isinstance(saved_fleet, str):
        fail(f"{path}: not a saved fleet-sync plan (it has no hash and fleet strings)")
    return SavedPlan(path, saved_hash, saved_fleet)


def check_saved(saved: SavedPlan, live_plan: Plan) -> None:
    """Refuse (exit 3) a plan for another fleet, or one the live plan no longer equals."""
    if saved.fleet != live_plan.fleet:
        shown = printable(saved.fleet[:100])
        fail(f"{saved.path} is a plan for fleet {shown}, not {live_plan.fleet}", EXIT_REFUSED)
    if saved.hash != live_plan.hash:
        fail(
            f"{saved.path} is stale: it was {printable(saved.hash[:80])}, the live plan is now "
            f"{live_plan.hash}; run plan again and review it",
            EXIT_REFUSED,
        )
