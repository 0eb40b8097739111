"""A no-op `fleet-sync plan --format json` (the proxy lists exactly what fleet.yaml renders)
against the bare read of the same pages, taking turns (issue 27's goal: plan <= 1.5x the bare
read, <= 2 s unloaded, < 300 MiB at 10,000 routes).

    .venv/bin/python benchmarks/noop_plan.py [--sizes 1000,10000] [--runs 3] [--ref main]
                                             [--profile SIZE] [--top 40]

The pages come from benchmarks/memproxy.py served over HTTP on 127.0.0.1 by this process (a
thread), shaped like LiteLLM 1.108.7's, plus a few other fleets' and untagged routes (ignored).
Each round runs the plan, then at once benchmarks/bare_read.py; best of --runs for each: wall,
CPU (user + system of the command) and the command's peak RSS, with the 1-minute load average.
--ref REF adds the plan of that git ref's tree (exported; `python -m sync` run from it) to each
round, so both trees and the bare read are measured taking turns under the same load.

--profile SIZE instead runs the plan once under cProfile (`python -m cProfile`, CPU time of the
whole command: start-up and imports included) and prints the top entries by own time and by
cumulative time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.memproxy import MemoryProxy, serve_in_background
from benchmarks.scale import plan_and_bare, run_measured
from benchmarks.synthetic import fleet_text, scenario
from sync.core.render import render
from sync.fleet.model import load_fleet


def setting(size: int, work: Path) -> tuple[Path, MemoryProxy]:
    path = work / f"fleet-{size}.yaml"
    path.write_text(fleet_text(size), encoding="utf-8")
    return path, MemoryProxy(scenario(render(load_fleet(path))).after)


def measure(size: int, runs: int, work: Path, ref: Path | None) -> list[str]:
    path, proxy = setting(size, work)
    trees = {"this tree": None, **({"ref": ref} if ref else {})}
    with serve_in_background(proxy) as url:
        plan, bare, env = plan_and_bare(path, url)
        plans: dict[str, list[tuple[float, float, int]]] = {name: [] for name in trees}
        requests: dict[str, int] = {}
        bares, loads = [], []
        for _ in range(runs):
            loads.append(os.getloadavg()[0])
            for name, tree in trees.items():
                sent = proxy.requests
                plans[name].append(run_measured(_in_tree(plan, tree), env))
                requests[name] = proxy.requests - sent
            bares.append(run_measured(bare, env))
    assert proxy.writes == 0
    bare_wall, bare_cpu = min(b[0] for b in bares), min(b[1] for b in bares)
    rows = []
    for name, measured in plans.items():
        wall, cpu = min(p[0] for p in measured), min(p[1] for p in measured)
        rss = max(p[2] for p in measured) / 1024 / 1024
        rows.append(
            f"| {size:,} | {name} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB "
            f"| {requests[name]} | {bare_wall:.2f} s ({bare_cpu:.2f} s) "
            f"| {wall / bare_wall:.2f}x | {cpu / bare_cpu:.2f}x "
            f"| {min(loads):.1f}-{max(loads):.1f} |"
        )
    return rows


def _in_tree(plan: list[str], tree: Path | None) -> list[str]:
    """The plan command run from another tree: `python -m sync` with that tree first on the
    path (its own sync package, not this one's)."""
    if tree is None:
        return plan
    code = f"import runpy, sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'fleet-sync'; "
    code += "runpy.run_module('sync', run_name='__main__', alter_sys=True)"
    return [sys.executable, "-c", code, *plan[1:]]


def export(ref: str, into: Path) -> Path:
    tree = into / "ref"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(Path(__file__).resolve().parent.parent), "archive", ref],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def profile(size: int, top: int, work: Path) -> None:
    path, proxy = setting(size, work)
    out = work / "plan.prof"
    with serve_in_background(proxy) as url:
        plan, _, env = plan_and_bare(path, url)
        python = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "sync", *plan[1:]]
        if plan[0] == sys.executable:
            python = [sys.executable, "-m", "cProfile", "-o", str(out), *plan[1:]]
        subprocess.run(python, env=env, stdout=subprocess.DEVNULL, check=True)
    stats = pstats.Stats(str(out))
    total: float = getattr(stats, "total_tt", 0.0)
    print(f"{size:,} routes, load {os.getloadavg()[0]:.1f}, total {total:.3f} s CPU (profiled)")
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", type=int, metavar="SIZE")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--ref", help="a git ref whose tree is measured too, taking turns")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleet-sync-noop-") as tmp:
        if options.profile:
            profile(options.profile, options.top, Path(tmp))
            return
        ref = export(options.ref, Path(tmp)) if options.ref else None
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, best of {options.runs}")
        print(
            "| routes | tree | plan wall | plan CPU | plan RSS | requests | bare wall (CPU) "
            "| plan / bare (wall) | plan / bare (CPU) | load |"
        )
        print("|---:|---|" + "---:|" * 8)
        for size in (int(s) for s in options.sizes.split(",")):
            print("\n".join(measure(size, options.runs, Path(tmp), ref)), flush=True)


if __name__ == "__main__":
    main()
