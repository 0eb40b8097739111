"""The action's outputs, as GITHUB_OUTPUT lines on stdout, from the plans fleet-sync wrote as JSON
to the report directory (the first argument; the fleet files follow): plan-hash and the routes
created, updated and pruned, summed over the plans; empty when no plan was made (unknown, not 0).

plan-hash: when no plan is one target's, the hashes separated by spaces, in the order of the
report files' names (as ever). When one is a target's (fleet.yaml's `targets:`), every hash is
labelled with the fleet file it came from: `FILE:TARGET=sha256:…` for a target's (the files in
the order given, each file's targets in promotion order), `FILE=sha256:…` for a fleet without
targets. A held target (apply) made no plan in the run: it has no hash.

The action runs it with its own virtualenv's Python, isolated (`python -I`): neither the
workspace (the current directory) nor PYTHON* variables decide what it imports."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def outputs(report_dir: Path, fleet_files: Sequence[str] = ()) -> list[str]:
    documents = [
        json.loads(p.read_text(encoding="utf-8")) for p in sorted(report_dir.glob("*.json"))
    ]
    plans = [d for d in documents if "hash" in d]  # a held target's report has none
    lines = ["plan-hash=" + " ".join(plan_hashes(plans, fleet_files))]
    for output, action in (("create", "create"), ("update", "update"), ("prune", "delete")):
        count = sum(c["action"] == action for p in plans for c in p["changes"])
        lines.append(f"{output}={count if plans else ''}")
    return lines


def plan_hashes(plans: Sequence[dict[str, Any]], fleet_files: Sequence[str]) -> list[str]:
    if not any("target" in p for p in plans):
        return [str(p["hash"]) for p in plans]
    left = list(plans)
    labelled = []
    for file, fleet, targets in _fleets(fleet_files):
        for target in targets or (None,):
            for plan in [p for p in left if (p.get("fleet"), p.get("target")) == (fleet, target)]:
                left.remove(plan)
                label = file if target is None else f"{file}:{target}"
                labelled.append(f"{label}={plan['hash']}")
    # A plan no fleet file accounts for (it could not be read here): labelled by its names.
    for plan in left:
        label = ":".join(str(plan[k]) for k in ("fleet", "target") if k in plan)
        labelled.append(f"{label}={plan['hash']}")
    return labelled


def _fleets(fleet_files: Sequence[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, fleet name, target names in promotion order) of each fleet file that reads."""
    from sync.errors import FleetSyncError
    from sync.fleet.model import load_fleet

    found = []
    for file in fleet_files:
        try:
            fleet = load_fleet(Path(file), file)
        except (FleetSyncError, OSError, ValueError):
            continue
        found.append((file, fleet.name, tuple(t.name for t in fleet.targets)))
    return found


if __name__ == "__main__":
    print("\n".join(outputs(Path(sys.argv[1]), sys.argv[2:])))
