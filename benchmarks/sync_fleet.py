"""End-to-end figures against a real LiteLLM with PostgreSQL: the CLI as a user runs it.

    .venv/bin/python benchmarks/sync_fleet.py [--routes 200] [--concurrency 4]

Uses LITELLM_PROXY_URL + LITELLM_PROXY_API_KEY when set, else starts ../shared/litellm (and
stops it). Times: plan and apply from empty, the plan right after (must be empty), moving a
quarter of the hosts (in-place updates), pruning a tenth, and the final empty plan. Routes point
at public addresses as data only; nothing dials them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.proxyharness import Proxy, fleet_sync, from_environment, start, stop, write_fleet


def hosts_for(models: int, per_model: int, moved: int = 0, dropped: int = 0) -> dict[str, object]:
    fleet: dict[str, object] = {}
    count = 0
    for m in range(models):
        hosts = {}
        for h in range(per_model):
            port = 20000 + count + (5000 if count < moved else 0)
            count += 1
            if count <= dropped:
                continue
            hosts[f"h{h}"] = f"http://216.243.220.245:{port}/v1"
        fleet[f"bench-m{m}"] = {"hosts": hosts}
    return fleet


def timed(label: str, args: list[str], env: dict[str, str], expect: int = 0) -> float:
    began = time.perf_counter()
    run = fleet_sync(args, env)
    seconds = time.perf_counter() - began
    if run.code != expect:
        raise SystemExit(f"{label}: exit {run.code}\n{run.out[-2000:]}\n{run.err[-2000:]}")
    print(f"{label:<44} {seconds:7.2f} s")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--routes", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    options = parser.parse_args()
    per_model = 10
    models = max(1, options.routes // per_model)
    total = models * per_model
    proxy: Proxy | None = from_environment(1)
    started = proxy is None
    if proxy is None:
        print("starting a real LiteLLM with PostgreSQL (../shared/litellm/start) ...")
        proxy = start(f"fleet-sync-bench-{os.getpid()}", 1)
    env = proxy.env()
    work = Path(tempfile.mkdtemp())
    fleet = work / "fleet.yaml"
    apply = ["apply", "-f", str(fleet), "--concurrency", str(options.concurrency), "--force"]
    try:
        shape = f"{models} models x {per_model} hosts"
        print(f"{total} routes ({shape}), concurrency {options.concurrency}")
        write_fleet(fleet, "bench", hosts_for(models, per_model))
        timed("plan, empty proxy", ["plan", "-f", str(fleet)], env)
        timed(f"apply: create {total}", apply, env)
        timed("plan right after (empty)", ["plan", "-f", str(fleet), "--detailed-exitcode"], env)
        write_fleet(fleet, "bench", hosts_for(models, per_model, moved=total // 4))
        timed(f"apply: {total // 4} hosts moved (updates)", apply, env)
        write_fleet(
            fleet, "bench", hosts_for(models, per_model, moved=total // 4, dropped=total // 10)
        )
        timed(f"apply: prune {total // 10}", apply, env)
        timed("plan right after (empty)", ["plan", "-f", str(fleet), "--detailed-exitcode"], env)
        write_fleet(fleet, "bench", {})
        timed("apply: prune the rest (clean up)", apply, env)
    finally:
        if started:
            stop(proxy)


if __name__ == "__main__":
    main()
