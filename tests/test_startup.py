"""Start-up stays cheap: each command imports what it uses when it runs, so `fleet-sync --version`
loads none of the heavy libraries and `validate` none of the proxy's or git's. An import-graph
check in a fresh interpreter (the time it saves is measured by benchmarks/startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "httpx",
    "git",
    "jsonschema",
    "yaml",
    "ruamel",
    "deepdiff",
    "msgspec",
    "sync.core.plan",
    "sync.live.apply",
)
# What each command may not import, beyond what --version may not.
NOT_FOR = {
    ("--version",): HEAVY,
    ("--help",): HEAVY,
    # A valid fleet.yaml passes the compiled schema: jsonschema is for a file with a problem.
    ("validate", "-f", "fleet.yaml"): (
        *("httpx", "git", "jsonschema", "ruamel", "deepdiff", "msgspec", "sync.live.apply"),
    ),
    ("render", "-f", "fleet.yaml"): (
        "httpx",
        "jsonschema",
        "git",
        "ruamel",
        "deepdiff",
        "msgspec",
        "sync.live.apply",
    ),
}
PROBE = """
import json, sys
from sync.commands.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded_by(args: tuple[str, ...]) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.mark.parametrize("args", sorted(NOT_FOR), ids=" ".join)
def test_command_leaves_heavy_modules_unimported(args: tuple[str, ...]) -> None:
    code, modules = loaded_by(args)
    assert code == 0
    loaded = {
        m for m in NOT_FOR[args] if m in modules or any(n.startswith(m + ".") for n in modules)
    }
    assert not loaded, f"fleet-sync {' '.join(args)} imported {sorted(loaded)}"


def test_the_check_sees_an_import() -> None:
    """The probe does see what a command imports (the check above can fail)."""
    _, modules = loaded_by(("validate", "-f", "fleet.yaml"))
    assert {"fastjsonschema", "yaml", "sync.fleet.model"} <= modules
