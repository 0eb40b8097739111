"""The action's outputs, as GITHUB_OUTPUT lines on stdout, from the plans fleet-sync wrote as JSON
to the report directory (the argument): plan-hash (one per plan, separated by spaces) and the
routes created, updated and pruned, summed over the plans; empty when no plan was made
(unknown, not 0).

The action runs it with its own virtualenv's Python, isolated (`python -I`): neither the
workspace (the current directory) nor PYTHON* variables decide what it imports."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def outputs(report_dir: Path) -> list[str]:
    plans = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(report_dir.glob("*.json"))]
    lines = ["plan-hash=" + " ".join(str(p["hash"]) for p in plans)]
    for output, action in (("create", "create"), ("update", "update"), ("prune", "delete")):
        count = sum(c["action"] == action for p in plans for c in p["changes"])
        lines.append(f"{output}={count if plans else ''}")
    return lines


if __name__ == "__main__":
    print("\n".join(outputs(Path(sys.argv[1]))))
