"""Does a change to fleet-sync change any plan? Plans the same inputs with the working tree and
with a git ref (default: main) and compares the plan JSON (hash included) byte for byte.

    .venv/bin/python benchmarks/plan_identity.py [--ref main] [--sizes 100,10000]

Inputs: every tests/cases/plan case (planned with that tree's own tests/test_plan_cases.py), and
for each size a synthetic fleet (benchmarks/synthetic.py) against three live states: ~1 %
changed, already in sync, and empty (everything to create). Compared: Plan.unredacted_json() (hash
included) and, where the tree has it, the redacted JSON the commands print. Exit 1 when any
plan differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def emit(tree: Path, inputs: Path) -> None:
    """Run inside the tree under test: print {input name: plan JSON} for every input."""
    sys.path.insert(0, str(tree))
    import importlib

    import yaml

    def module(new: str, old: str) -> Any:
        """The tree's module by its path in parts (issue 16), or by its path before them."""
        try:
            return importlib.import_module(new)
        except ImportError:
            return importlib.import_module(old)

    try:
        make_plan = module("sync.core.planner", "sync.core.plan").make_plan
    except ImportError:
        make_plan = module("sync.core.plan", "sync.plan").make_plan
    render = module("sync.core.render", "sync.render").render
    load_fleet = module("sync.fleet.model", "sync.fleet").load_fleet
    try:
        parse_route = module("sync.live.answers", "sync.litellm").parse_route
    except AttributeError:
        parse_route = module("sync.live.client", "sync.litellm").parse_route
    from tests.test_plan_cases import CASES, plan_for

    try:  # what the commands print (redacted), where the tree has it
        printed = module("sync.report.redaction", "sync.redaction").plan_json
    except (ImportError, AttributeError):
        printed = None

    def body(plan: Any) -> Any:
        # unredacted_json: Plan.to_json before it was named for what it is
        raw = plan.unredacted_json() if hasattr(plan, "unredacted_json") else plan.to_json()
        return {"plan": raw, "printed": printed(plan) if printed else None}

    plans: dict[str, Any] = {}
    for path in CASES:
        plan, _ = plan_for(yaml.safe_load(path.read_text(encoding="utf-8")))
        plans[f"case {path.stem}"] = body(plan)
    for fleet_file in sorted(inputs.glob("*.fleet.yaml")):
        size = fleet_file.name.split(".")[0]
        fleet = load_fleet(fleet_file)
        desired = render(fleet)
        for live_file in sorted(inputs.glob(f"{size}.*.live.json")):
            entries = json.loads(live_file.read_text(encoding="utf-8"))
            live = [r for r in (parse_route(e) for e in entries) if r is not None]
            plans[live_file.name] = body(make_plan(fleet, desired, live))
    print(json.dumps(plans, sort_keys=True))


def write_inputs(inputs: Path, sizes: list[int]) -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.synthetic import fleet_text, scenario
    from sync.core.render import render
    from sync.fleet.model import load_fleet

    for size in sizes:
        fleet_file = inputs / f"{size:05d}.fleet.yaml"
        fleet_file.write_text(fleet_text(size), encoding="utf-8")
        world = scenario(render(load_fleet(fleet_file)))
        for name, entries in (("changed", world.before), ("in-sync", world.after), ("empty", [])):
            (inputs / f"{size:05d}.{name}.live.json").write_text(json.dumps(entries))


def plans_of(tree: Path, inputs: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, __file__, "--emit", str(tree), str(inputs)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"planning with {tree} failed:\n{done.stderr[-3000:]}")
    plans: dict[str, Any] = json.loads(done.stdout)
    return plans


def export(ref: str, into: Path) -> Path:
    archive = into / "ref.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref], stdout=out, check=True)
    tree = into / "ref"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ref", default="main")
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--emit", nargs=2, metavar=("TREE", "INPUTS"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.emit:
        emit(Path(options.emit[0]), Path(options.emit[1]))
        return
    with tempfile.TemporaryDirectory(prefix="fleet-sync-identity-") as tmp:
        inputs = Path(tmp) / "inputs"
        inputs.mkdir()
        write_inputs(inputs, [int(s) for s in options.sizes.split(",")])
        before = plans_of(export(options.ref, Path(tmp)), inputs)
        after = plans_of(ROOT, inputs)
    differ = 0
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        same = old == new and json.dumps(old) == json.dumps(new)
        digest = hashlib.sha256(json.dumps(new, sort_keys=True).encode()).hexdigest()[:16]
        changes = len(new["plan"]["changes"]) if isinstance(new, dict) else "-"
        print(f"{'same' if same else 'DIFFERS':8} {name:50} changes={changes} json={digest}")
        differ += not same
    print(f"{len(after)} plans, {differ} differ from {options.ref}")
    if differ:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
