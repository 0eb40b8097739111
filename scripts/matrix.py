"""The LiteLLM compatibility matrix: run the tests marked litellm_matrix once per version against
proxies the harness starts (installing the version first if needed), then print the docs'
"Supported LiteLLM versions" table from what ran: tests, passes, time, date, and how a removed
key is taken away on each version.

    .venv/bin/python scripts/matrix.py [VERSION ...]    # default: every tested version

Exit 0 only when every version ran tests and none failed."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sync.litellm.releases import TESTED  # noqa: E402
from tests.support.matrix_report import VersionResult, table  # noqa: E402


def run(version: str, junit: Path) -> VersionResult:
    # The harness starts this version's proxies: never a proxy from the environment.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
    command = [sys.executable, "-m", "pytest", "-m", "litellm_matrix", "-q"]
    command += [f"--litellm-versions={version}", "-p", "no:cacheprovider", f"--junitxml={junit}"]
    started = time.monotonic()
    subprocess.run(command, cwd=REPO, env=env, check=False)
    seconds = time.monotonic() - started
    outcomes = {"passed": 0, "failed": 0, "skipped": 0}
    for case in ET.parse(junit).getroot().iter("testcase"):
        if f"litellm-{version}" not in case.get("name", ""):
            continue  # a test of the module that needs no proxy
        if case.find("failure") is not None or case.find("error") is not None:
            outcomes["failed"] += 1
        elif case.find("skipped") is not None:
            outcomes["skipped"] += 1
        else:
            outcomes["passed"] += 1
    return VersionResult(version, **outcomes, seconds=seconds)


def main(argv: list[str]) -> int:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for version in argv or TESTED:
            results.append(run(version, Path(tmp) / f"{version}.xml"))
    print()
    print(table(results, datetime.date.today().isoformat()), end="")
    return 0 if all(r.failed == 0 and r.tests > 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
