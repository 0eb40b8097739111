"""The LiteLLM compatibility matrix: run the tests marked litellm_matrix once per version against
proxies the harness starts (installing the version first if needed), then print the README's
"Supported LiteLLM versions" table from what ran: tests, passes, time, date, and the behaviour
that differs per version.

    .venv/bin/python scripts/matrix.py [VERSION ...]    # default: every tested version

Exit 0 only when every version passed."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sync.versions import TESTED, LiteLLMRelease  # noqa: E402


@dataclass(frozen=True)
class Row:
    version: str
    tests: int
    failed: int
    skipped: int
    seconds: float

    @property
    def passed(self) -> int:
        return self.tests - self.failed - self.skipped


def run(version: str, junit: Path) -> Row:
    # The harness starts this version's proxies: never a proxy from the environment.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
    started = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "litellm_matrix",
            f"--litellm-versions={version}",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
        ],
        cwd=REPO,
        env=env,
        check=False,
    )
    seconds = time.monotonic() - started
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    count = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
    return Row(
        version, count["tests"], count["failures"] + count["errors"], count["skipped"], seconds
    )


def removal(version: str) -> str:
    if LiteLLMRelease(version).removes_params_in_place:
        return "in place (PATCH `litellm_params_to_remove`)"
    return "re-created: delete + create, same id (a gap of a few hundred ms for that host)"


def table(rows: list[Row], day: str) -> str:
    lines = [
        f"| LiteLLM | matrix tests ({day}) | time | a key removed from fleet.yaml is taken away |",
        "|---|---|---|---|",
    ]
    for row in rows:
        result = f"{row.passed}/{row.tests} passed"
        result += f", {row.failed} failed" if row.failed else ""
        result += f", {row.skipped} skipped" if row.skipped else ""
        lines.append(
            f"| {row.version} | {result} | {row.seconds / 60:.1f} min | {removal(row.version)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    versions = argv or list(TESTED)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for version in versions:
            rows.append(run(version, Path(tmp) / f"{version}.xml"))
    print()
    print(table(rows, datetime.date.today().isoformat()), end="")
    return 0 if all(r.failed == 0 and r.tests > 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
