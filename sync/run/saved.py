"""apply --plan FILE: the saved plan a reviewer saw, read like any JSON fleet-sync did not write
(whoever runs apply hands it back), and refused once the live plan moved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sync.run.console import EXIT_OK, EXIT_REFUSED, fail
from sync.run.outcome import Outcome, attempt
from sync.secrets.display import printable
from sync.untrusted.json_parser import parse_json

if TYPE_CHECKING:
    from sync.core.plan import Plan
    from sync.run.reading import TargetPlan

# A saved plan creating 10,000 routes is ~8 MB of JSON; one past this is not a plan.
SAVED_PLAN_MAX_BYTES = 64 * 2**20


@dataclass(frozen=True)
class SavedPlan:
    path: Path
    hash: str
    fleet: str
    binds: Any = None  # what it says it was made for (untrusted JSON; None: it does not say)


def read_saved(path: Path) -> SavedPlan:
    """The saved plan's hash and fleet, or a one-line error naming the file (exit 1)."""
    data = _read_json(path)
    saved_hash = data.get("hash") if isinstance(data, dict) else None
    saved_fleet = data.get("fleet") if isinstance(data, dict) else None
    if not isinstance(saved_hash, str) or not isinstance(saved_fleet, str):
        fail(f"{path}: not a saved fleet-sync plan (it has no hash and fleet strings)")
    return SavedPlan(path, saved_hash, saved_fleet, data.get("binds"))


def _read_json(path: Path) -> Any:
    """The file as JSON, read up to the cap only (/dev/zero never ends), or exit 1."""
    try:
        with path.open("rb") as fh:
            body = fh.read(SAVED_PLAN_MAX_BYTES + 1)
    except OSError as exc:
        fail(f"{path}: cannot read the saved plan ({exc.strerror or exc})")
    try:
        data = parse_json(body, max_bytes=SAVED_PLAN_MAX_BYTES, what="the file")
    except ValueError as exc:
        fail(f"{path}: not a saved fleet-sync plan ({exc})")
    return data


def check_saved(saved: SavedPlan, live_plan: Plan) -> None:
    """Refuse (exit 3) a plan for another fleet, or one the live plan no longer equals."""
    if saved.fleet != live_plan.fleet:
        shown = printable(saved.fleet[:100])
        fail(f"{saved.path} is a plan for fleet {shown}, not {live_plan.fleet}", EXIT_REFUSED)
    check_binding(saved.path, saved.binds, live_plan)
    if saved.hash != live_plan.hash:
        fail(
            f"{saved.path} is stale: it was {printable(saved.hash[:80])}, the live plan is now "
            f"{live_plan.hash}; run plan again and review it",
            EXIT_REFUSED,
        )


def check_binding(path: Path, binds: Any, live_plan: Plan, target: str | None = None) -> None:
    """Refuse (exit 3) a saved plan made for another target, endpoint or rails, saying what
    differs (its hash covers them: sync/core/plan.py Binding)."""
    if live_plan.binding is None:
        return
    if differences := live_plan.binding.differences(binds):
        where = f" for target {target}" if target else ""
        fail(
            f"{path} is not a plan{where} of this run: {'; '.join(differences)}; run plan "
            "again for this target, endpoint and rails and review it",
            EXIT_REFUSED,
        )


@dataclass(frozen=True)
class SavedTargets:
    """A saved plan of a run over targets: each target's hash (None: it was not planned)."""

    path: Path
    fleet: str
    hashes: dict[str, str | None]
    binds: dict[str, Any] = field(default_factory=dict)  # each target's `binds`, untrusted


def read_saved_targets(path: Path) -> SavedTargets:
    """The hashes of a saved plan over targets (plan --out with targets:), or a one-line error
    naming the file: exit 1 when it is no saved plan, 3 when it is one without targets."""
    data = _read_json(path)
    fleet = data.get("fleet") if isinstance(data, dict) else None
    entries = data.get("targets") if isinstance(data, dict) else None
    if isinstance(fleet, str) and isinstance(data, dict) and isinstance(data.get("hash"), str):
        fail(
            f"{path} is a plan without targets; fleet.yaml declares targets: run plan --out "
            "again and review it",
            EXIT_REFUSED,
        )
    if not isinstance(fleet, str) or not isinstance(entries, list):
        fail(f"{path}: not a saved fleet-sync plan (it has no fleet string and targets list)")
    hashes: dict[str, str | None] = {}
    binds: dict[str, Any] = {}
    for entry in entries:
        name = entry.get("target") if isinstance(entry, dict) else None
        if isinstance(name, str):
            hashes[name] = entry["hash"] if isinstance(entry.get("hash"), str) else None
            binds[name] = entry.get("binds")
    return SavedTargets(path, fleet, hashes, binds)


def check_saved_target(saved: SavedTargets, name: str, live_plan: Plan) -> None:
    """Refuse (exit 3) a target the saved plan does not hold, or whose live plan moved."""
    if saved.fleet != live_plan.fleet:
        shown = printable(saved.fleet[:100])
        fail(f"{saved.path} is a plan for fleet {shown}, not {live_plan.fleet}", EXIT_REFUSED)
    saved_hash = saved.hashes.get(name)
    if saved_hash is None:
        fail(f"{saved.path} holds no plan for target {name}; run plan again", EXIT_REFUSED)
    check_binding(saved.path, saved.binds.get(name), live_plan, name)
    if saved_hash != live_plan.hash:
        fail(
            f"{saved.path} is stale for target {name}: it was {printable(saved_hash[:80])}, "
            f"the live plan is now {live_plan.hash}; run plan again and review it",
            EXIT_REFUSED,
        )


# A saved plan as apply --plan reviews it: the one plan of a fleet without targets, or every
# target's.
Reviewed = SavedPlan | SavedTargets


def read_reviewed(path: Path, targets: bool) -> Reviewed:
    return read_saved_targets(path) if targets else read_saved(path)


def check_reviewed(reviewed: Reviewed, name: str | None, live_plan: Plan) -> None:
    if isinstance(reviewed, SavedPlan):
        check_saved(reviewed, live_plan)
    else:
        check_saved_target(reviewed, name or "", live_plan)


def refuse_stale(reviewed: Reviewed, outcomes: Sequence[Outcome[TargetPlan]]) -> None:
    """apply --plan: every target read must still plan what was reviewed, else nothing is
    written anywhere (exit 3, each stale or missing target named)."""
    if isinstance(reviewed, SavedPlan):
        for outcome in outcomes:
            if outcome.value is not None:
                check_saved(reviewed, outcome.value.plan)
        return
    checks = [
        attempt(o.target, partial(check_saved_target, reviewed, o.target, o.value.plan))
        for o in outcomes
        if o.value is not None and o.target is not None
    ]
    if refused := [c for c in checks if c.code != EXIT_OK]:
        fail(f"{reviewed.path}: {len(refused)} target(s) moved since the plan was saved; "
             "nothing was applied to any target", EXIT_REFUSED)  # fmt: skip
