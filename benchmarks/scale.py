"""fleet-sync's own cost at scale: 100 / 1,000 / 10,000 routes, about 1 % of them changed.

    .venv/bin/python benchmarks/scale.py [--sizes 100,1000,10000] [--pods 1] [--runs 3]
                                         [--profile SIZE]

Every size runs in a fresh process. The live pages come from memory (benchmarks/memproxy.py,
pre-encoded, shaped like LiteLLM 1.108.7's), so the figures are the tool's work only:

- load+validate (read fleet.yaml, schema, semantic checks); read as plan and apply read
  (readiness, every page of /v2/model/info, pod agreement, the stored rows of each of the
  fleet's model groups, the LiteLLM version); plan (render, classify, field diff, plan hash).
  Read and plan each render fleet.yaml, as the CLI does; (render) shows one render alone and is
  not added to the total. Best of --runs, then once more under tracemalloc for the peak memory
  the tool allocates.
- read-back poll: one poll of apply's read-back with the proxy already showing the result, for
  the plan's changes pending and for every route pending (the first apply of a fleet).
- `fleet-sync plan --format json` end to end against the same pages served over HTTP on
  127.0.0.1 by this process (a thread): wall time, CPU time (user + system of the command), the
  command's peak RSS and the requests it sent; then, right after it against the same server,
  the bare read (benchmarks/bare_read.py: libyaml load, GET and json.loads every page), the
  least any tool must do. Both best of --runs; the ratio is plan / bare read.

--profile SIZE prints the top of a cProfile of read + plan + read-back poll at that size instead.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.memproxy import MemoryProxy, serve_in_background
from benchmarks.synthetic import fleet_text, scenario
from sync.core import render as render_module
from sync.core.plan import Change, Create, Plan
from sync.core.render import Route, render
from sync.fleet.model import Fleet, load_fleet
from sync.live.client import LiteLLMClient
from sync.live.interrupt import NEVER
from sync.live.progress import Silent
from sync.live.readback import ReadBack, Written
from sync.live.state import LiveState, read_live

T = TypeVar("T")
KEY = "sk-benchmark"


def best(runs: int, action: Callable[[], T]) -> tuple[float, T]:
    times, value = [], None
    for _ in range(runs):
        gc.collect()
        began = time.perf_counter()
        value = action()
        times.append(time.perf_counter() - began)
    assert value is not None
    return min(times), value


def read(client: LiteLLMClient, fleet: Fleet) -> LiveState:
    """As plan and apply read: readiness, every page, pod agreement, the stored rows of each
    of the fleet's model groups, the LiteLLM version, the providers (which renders the fleet:
    a run renders it once, so each timed read starts without the last render kept)."""
    forget_render()
    return read_live(client, fleet, lambda line: None, settle_timeout=0)


def forget_render() -> None:
    render_module._last = None


def fresh_render(fleet: Fleet) -> tuple[Route, ...]:
    """One render, as a run pays it (not the routes kept from the last)."""
    forget_render()
    return render(fleet)


def planned(fleet: Fleet, live: LiveState) -> Plan:
    plan = live.plan(fleet, take_over=False)
    assert plan.hash  # every command shows or checks it
    return plan


def poll(client: LiteLLMClient, changes: tuple[Change, ...]) -> int:
    """One read-back poll: the proxy already shows everything, so it confirms on the first."""
    written = [Written(c, "written", "") for c in changes]
    reader = ReadBack(client, 0, 0, lambda _: None, Silent(), NEVER)
    reader.wait(written)
    outcomes = reader.outcomes(written)
    assert all(o.status == "done" for o in outcomes), "the read-back did not confirm"
    return len(outcomes)


def timings(
    path: Path,
    client: LiteLLMClient,
    done: LiteLLMClient,
    all_creates: tuple[Change, ...],
    runs: int,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["load"], fleet = best(runs, lambda: load_fleet(path))
    out["render"], _ = best(runs, lambda: fresh_render(fleet))
    out["read"], live = best(runs, lambda: read(client, fleet))
    out["plan"], plan = best(runs, lambda: planned(fleet, live))
    out["plan_changes"] = len(plan.changes)
    out["poll_changed"], _ = best(runs, lambda: poll(done, plan.changes))
    out["poll_all"], _ = best(runs, lambda: poll(done, all_creates))

    def pipeline_cpu() -> float:
        began = time.process_time()
        fleet = load_fleet(path)
        planned(fleet, read(client, fleet))
        return time.process_time() - began

    out["cpu"] = min(pipeline_cpu() for _ in range(runs))  # wall time less other jobs' share
    return out


def measure_one(size: int, per_model: int, pods: int, runs: int, profile: bool) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="fleet-sync-scale-"))
    path = work / "fleet.yaml"
    path.write_text(fleet_text(size, per_model=per_model), encoding="utf-8")
    desired_once = render(load_fleet(path))
    world = scenario(desired_once)
    proxy = MemoryProxy(world.before)
    after = MemoryProxy(world.after)
    urls = [f"http://127.0.0.1:{4000 + i}" for i in range(pods)]
    client = LiteLLMClient(urls, KEY, transport=proxy.transport())
    done = LiteLLMClient(urls, KEY, transport=after.transport())
    out: dict[str, Any] = {"routes": len(desired_once), "changed": world.changed, "pods": pods}
    out["load_average"] = os.getloadavg()[0]
    out["fleet_bytes"] = path.stat().st_size
    all_creates = tuple(Create(r) for r in desired_once)
    del desired_once, world
    gc.collect()

    read(client, load_fleet(path))  # the stand-in encodes each filtered answer at its first ask
    if profile:
        fleet = load_fleet(path)
        profiler = cProfile.Profile()
        profiler.enable()
        plan = planned(fleet, read(client, fleet))
        poll(done, plan.changes)
        poll(done, all_creates)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
        return out

    out.update(timings(path, client, done, all_creates, runs))
    gc.collect()

    tracemalloc.start()
    fleet = load_fleet(path)
    plan = planned(fleet, read(client, fleet))
    out["plan_peak"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    poll(done, all_creates)
    out["poll_peak"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out.update(cli_plan(path, proxy, runs))
    return out


# A fork copies the parent's resident pages into the child's peak RSS, and that peak survives
# exec: the command is started from this small process so its peak is its own. It prints the
# child's peak RSS (KiB) and CPU seconds (user + system).
MEASURE_CHILD = (
    "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); "
    "sys.exit(code)"
)
BARE_READ = Path(__file__).with_name("bare_read.py")


def run_measured(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS bytes) of one command run to success."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", MEASURE_CHILD, *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        check=False,
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{command[-6:]} failed ({done.returncode}): {done.stderr[-2000:]}")
    rss, cpu = done.stderr.split()[-2:]
    return seconds, float(cpu), int(rss) * 1024


def plan_and_bare(path: Path, url: str) -> tuple[list[str], list[str], dict[str, str]]:
    """The commands of a no-op `plan --format json` and of the bare read of its pages at `url`,
    and the environment both run in."""
    from sync.live.client import PAGE_SIZE

    script = Path(sys.executable).with_name("fleet-sync")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "sync"]
    env = {**os.environ, "LITELLM_PROXY_API_KEY": KEY}
    env.pop("LITELLM_PROXY_URLS", None)
    plan = [*command, "plan", "-f", str(path), "--format", "json", "--proxy-url", url]
    bare = [sys.executable, str(BARE_READ), str(path), url, "--size", str(PAGE_SIZE)]
    return plan, bare, env


def cli_plan(path: Path, proxy: MemoryProxy, runs: int) -> dict[str, Any]:
    """`fleet-sync plan --format json` as a user runs it, against the pages over HTTP, each run
    followed at once by the bare read of the same pages; best of `runs` for each."""

    out: dict[str, Any] = {}
    with serve_in_background(proxy) as url:
        plan, bare, env = plan_and_bare(path, url)
        plans, bares = [], []
        for _ in range(runs):
            sent = proxy.requests
            plans.append(run_measured(plan, env))
            out["cli_requests"] = proxy.requests - sent
            sent = proxy.requests
            bares.append(run_measured(bare, env))
            out["bare_requests"] = proxy.requests - sent
        started = [run_measured([sys.executable, "-c", "pass"], env) for _ in range(runs)]
    out["cli_plan"], out["cli_cpu"] = min(p[0] for p in plans), min(p[1] for p in plans)
    out["cli_rss"] = max(p[2] for p in plans)
    out["bare"], out["bare_cpu"] = min(b[0] for b in bares), min(b[1] for b in bares)
    out["python"] = min(s[0] for s in started)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    mib = 1024 * 1024
    head = (
        "| routes | changes | load+validate | (render) | read | plan | **total** (CPU) "
        "| peak (traced) "
        "| read-back poll: changes / all pending | poll peak | `plan` CLI end to end (CPU) "
        "| CLI max RSS | requests | bare read (CPU), requests | plan / bare "
        "| `python -c pass` | load |"
    )
    out = [head, "|" + "---:|" * 17]
    for r in rows:
        total = r["load"] + r["read"] + r["plan"]  # read and plan each render (as the CLI does)
        out.append(
            f"| {r['routes']:,} | {r['plan_changes']} | {r['load']:.3f} s | {r['render']:.3f} s "
            f"| {r['read']:.3f} s | {r['plan']:.3f} s | **{total:.3f} s** ({r['cpu']:.2f} s) "
            f"| {r['plan_peak'] / mib:.0f} MiB "
            f"| {r['poll_changed']:.3f} s / {r['poll_all']:.3f} s | {r['poll_peak'] / mib:.0f} MiB "
            f"| {r['cli_plan']:.2f} s ({r['cli_cpu']:.2f} s) | {r['cli_rss'] / mib:.0f} MiB "
            f"| {r['cli_requests']} | {r['bare']:.2f} s ({r['bare_cpu']:.2f} s), "
            f"{r['bare_requests']} | {r['cli_plan'] / r['bare']:.2f}x | {r['python']:.3f} s "
            f"| {r['load_average']:.1f} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--pods", type=int, default=1, help="pods listed (all served alike)")
    parser.add_argument(
        "--hosts-per-model",
        type=int,
        default=10,
        help="hosts in each model group (plans read the stored rows of each group separately)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", type=int, metavar="SIZE")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.profile:
        measure_one(options.profile, options.hosts_per_model, options.pods, 1, profile=True)
        return
    if options.one:
        figures = measure_one(
            options.one, options.hosts_per_model, options.pods, options.runs, profile=False
        )
        print(json.dumps(figures))
        return
    rows = []
    for size in (int(s) for s in options.sizes.split(",")):
        one = ["--one", str(size), "--pods", str(options.pods), "--runs", str(options.runs)]
        one += ["--hosts-per-model", str(options.hosts_per_model)]
        child = subprocess.run(
            [sys.executable, __file__, *one],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            raise SystemExit(f"size {size} failed:\n{child.stderr[-3000:]}")
        rows.append(json.loads(child.stdout.splitlines()[-1]))
        print(f"{size} routes measured", file=sys.stderr)
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, pods listed: {options.pods}, "
        f"{options.hosts_per_model} hosts per model, "
        f"best of {options.runs}; fleet.yaml of the largest: {rows[-1]['fleet_bytes']:,} bytes"
    )
    print(table(rows))


if __name__ == "__main__":
    main()
