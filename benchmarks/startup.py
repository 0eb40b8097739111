"""Start-up of the command against the interpreter's own: `python -c pass`, `fleet-sync
--version`, `fleet-sync validate` of the example fleet.yaml.

    .venv/bin/python benchmarks/startup.py [--runs 30]

Each is run --runs times in a new process (interleaved, so a busy moment hits all alike); the
table gives the best and the median wall time, the median CPU time (user + system, which load
from other processes disturbs less), and the difference to `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command() -> list[str]:
    script = Path(sys.executable).with_name("fleet-sync")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sync"]


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one run in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args()
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "fleet-sync --version": [*command(), "--version"],
        "fleet-sync validate": [*command(), "validate", "-f", "fleet.yaml"],
    }
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for argv in cases.values():
        run_once(argv)  # warm the file cache
    for _ in range(options.runs):
        for name, argv in cases.items():
            wall, cpu = run_once(argv)
            walls[name].append(wall)
            cpus[name].append(cpu)
    load = os.getloadavg()[0]
    print(f"{options.runs} runs each, Python {sys.version.split()[0]}, load average {load:.1f}")
    print("| command | best wall | median wall | median CPU | over `python -c pass` |")
    print("|---|---:|---:|---:|---:|")
    base = walls["python -c pass"]
    base_best, base_median = min(base), statistics.median(base)
    for name in cases:
        best, median = min(walls[name]), statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        over = ""
        if name != "python -c pass":
            over = f"+{(best - base_best) * 1000:.0f} ms best, "
            over += f"+{(median - base_median) * 1000:.0f} ms median"
        print(
            f"| `{name}` | {best * 1000:.0f} ms | {median * 1000:.0f} ms | {cpu * 1000:.0f} ms "
            f"| {over} |"
        )


if __name__ == "__main__":
    main()
