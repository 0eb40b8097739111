"""The action's outputs (action/outputs.py) from report files as fleet-sync writes them: over
targets each plan-hash is labelled with its fleet file and target, in promotion order, and a held
target (no plan made) adds none; without targets the output is as it always was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

SCRIPT = Path(__file__).resolve().parents[1] / "action" / "outputs.py"


def run(work: Path, *files: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(work / "reports"), *files],
        cwd=work, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


def report(work: Path, name: str, document: dict[str, Any]) -> None:
    (work / "reports").mkdir(exist_ok=True)
    (work / "reports" / name).write_text(json.dumps(document), encoding="utf-8")


def plan(fleet: str, hash_: str, target: str | None = None) -> dict[str, Any]:
    named = {} if target is None else {"target": target}
    return {"fleet": fleet, **named, "hash": hash_, "changes": [{"action": "create"}]}


def test_plan_hashes_over_targets_are_labelled_in_promotion_order(tmp_path: Path) -> None:
    doc = {
        "version": 1,
        "fleet": "gpu",
        "targets": {
            "prod": {"proxy_url": "os.environ/P", "api_key": "os.environ/PK", "after": ["staging"]},
            "staging": {"proxy_url": "os.environ/S", "api_key": "os.environ/SK"},
        },
        "models": {},
    }
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    # File names put prod first; promotion order puts staging first.
    report(tmp_path, "gpu.prod.plan.json", plan("gpu", "sha256:p", "prod"))
    report(tmp_path, "gpu.staging.plan.json", plan("gpu", "sha256:s", "staging"))
    outputs = run(tmp_path, "fleet.yaml")
    assert outputs["plan-hash"] == "fleet.yaml:staging=sha256:s fleet.yaml:prod=sha256:p"
    assert outputs["create"] == "2"
    # apply: prod held behind staging made no plan; its report adds no hash and no change.
    (tmp_path / "reports" / "gpu.staging.plan.json").unlink()
    report(tmp_path, "gpu.prod.plan.json", {"fleet": "gpu", "target": "prod", "exit": 4,
                                            "held": "held: staging did not converge"})  # fmt: skip
    report(tmp_path, "gpu.staging.apply.json", plan("gpu", "sha256:s", "staging"))
    outputs = run(tmp_path, "fleet.yaml")
    assert outputs["plan-hash"] == "fleet.yaml:staging=sha256:s"
    assert outputs["create"] == "1"


def test_plan_hashes_without_targets_are_as_they_were(tmp_path: Path) -> None:
    report(tmp_path, "b.plan.json", plan("b", "sha256:b"))
    report(tmp_path, "a.plan.json", plan("a", "sha256:a"))
    outputs = run(tmp_path, "b.yaml", "a.yaml")
    assert outputs == {"plan-hash": "sha256:a sha256:b", "create": "2", "update": "0", "prune": "0"}
