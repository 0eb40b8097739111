"""A plan over several targets (issue 17): 3 targets x 1,000 routes, each target its own proxy.

    .venv/bin/python benchmarks/targets.py [--routes 1000] [--targets 3] [--runs 3]
                                           [--latency-ms 0,20]

Each target is a LiteLLM admin API answered from memory (benchmarks/memproxy.py: the same
pre-encoded pages of 1,000 routes, about 1 % changed) over HTTP on 127.0.0.1, optionally
answering each request after a fixed latency (a proxy across a network, or LiteLLM's own time
per page; the server is threaded, so requests overlap as they would on real proxies).
Measured, best of --runs, `fleet-sync plan --format json` end to end:

- one target (`--target t0`);
- every target one after another (N runs of `--target tI`, summed): reads in sequence;
- every target in one run: reads concurrent (at most 4 at once).

With reads concurrent, one run over N targets costs the CPU of N plans (the plan's work is
Python, one interpreter) plus the network wait of one target, not N.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.memproxy import MemoryProxy, serve_in_background
from benchmarks.synthetic import fleet_text, scenario
from sync.core.render import render
from sync.fleet.model import load_fleet

KEY = "sk-benchmark"


class SlowProxy(MemoryProxy):
    """The memory proxy answering each request `latency` seconds late."""

    latency = 0.0

    def _handle(self, request: httpx.Request) -> httpx.Response:
        time.sleep(self.latency)
        return super()._handle(request)


def targets_block(count: int) -> str:
    lines = ["targets:"]
    for index in range(count):
        lines += [
            f"  t{index}:",
            f"    proxy_url: os.environ/BENCH_T{index}_URL",
            "    api_key: os.environ/BENCH_KEY",
        ]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def proxies(count: int, proxy: MemoryProxy) -> Iterator[dict[str, str]]:
    """`count` servers of the same pages; the environment naming them."""
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(serve_in_background(proxy)) for _ in range(count)]
        yield {f"BENCH_T{i}_URL": url for i, url in enumerate(urls)}


def plan_seconds(path: Path, env: dict[str, str], *targets: str) -> float:
    command = [sys.executable, "-m", "sync", "plan", "-f", str(path), "--format", "json"]
    for name in targets:
        command += ["--target", name]
    began = time.perf_counter()
    done = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"fleet-sync plan failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def measure(routes: int, count: int, runs: int, latency: float) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="fleet-sync-targets-"))
    path = work / "fleet.yaml"
    path.write_text(fleet_text(routes), encoding="utf-8")
    world = scenario(render(load_fleet(path)))
    text = fleet_text(routes).replace("models:\n", targets_block(count) + "models:\n", 1)
    path.write_text(text, encoding="utf-8")
    proxy = SlowProxy(world.before)
    proxy.latency = latency
    with proxies(count, proxy) as urls:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
        env.update(urls, BENCH_KEY=KEY, VLLM_API_KEY="x")
        one = min(plan_seconds(path, env, "t0") for _ in range(runs))
        each = min(sum(plan_seconds(path, env, f"t{i}") for i in range(count)) for _ in range(runs))
        together = min(plan_seconds(path, env) for _ in range(runs))
    return {"one": one, "sequential": each, "concurrent": together}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routes", type=int, default=1000)
    parser.add_argument("--targets", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", default="0,20")
    options = parser.parse_args()
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {options.targets} targets x "
        f"{options.routes} routes; `plan --format json` end to end, best of {options.runs}"
    )
    print("| latency per request | one target | targets one by one | all targets, one run |")
    print("|---:|---:|---:|---:|")
    for raw in options.latency_ms.split(","):
        figures = measure(options.routes, options.targets, options.runs, int(raw) / 1000)
        print(
            f"| {raw} ms | {figures['one']:.2f} s | {figures['sequential']:.2f} s | "
            f"{figures['concurrent']:.2f} s |"
        )


if __name__ == "__main__":
    main()
