"""Apply throughput against real LiteLLM pods: fleet-sync against a bare httpx loop, 1 and 2 pods.

    .venv/bin/python benchmarks/apply_pods.py [--routes 1000] [--concurrency 4] [--pods 1,2]
                                              [--modes spread]

For each pod count and each writer, a fresh LiteLLM with PostgreSQL (../shared/litellm/start,
reload interval at LiteLLM's default of 30 s unless PROXY_CONFIG_RELOAD_INTERVAL_SECONDS is set)
takes `--routes` creates, then as many in-place updates (every host moved). The writers:

- fleet-sync: `fleet-sync apply` as a user runs it (read every pod, plan, write, read back
  until every pod shows the plan). Its stderr progress lines give the time of the write stage
  and of the read-back wait. `--modes spread,first` also runs `--write-to first`.
- bare: the same request bodies POSTed / PATCHed with httpx at the same concurrency per pod, to
  the same pod per route, with no read, plan, retry or read-back: the floor of the proxy.

Routes point at public addresses as data only; nothing dials them. Takes many minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sync.core.render import Route, render
from sync.fleet.model import load_fleet
from sync.live.access import CHANGED_BY_HEADER, changed_by
from sync.live.client import LiteLLMClient
from tests.support.proxyharness import Proxy, from_environment, start, stop, write_fleet

HOSTS_PER_MODEL = 10
STAGE_DONE = re.compile(r"fleet-sync: (create|update|delete) done: .* in (\d+) s")
READ_BACK = re.compile(r"fleet-sync: read-back: \d+ of \d+ .*\((\d+) s of")


def fleet_models(routes: int, shift: int) -> dict[str, object]:
    """`routes` hosts in models of 10; each shift moves every host to another port."""
    models: dict[str, object] = {}
    for i in range(routes):
        port = 20000 + i + 5000 * shift
        hosts = models.setdefault(f"bench-m{i // HOSTS_PER_MODEL}", {"hosts": {}})
        assert isinstance(hosts, dict)
        hosts["hosts"][f"h{i % HOSTS_PER_MODEL}"] = f"http://216.243.220.245:{port}/v1"
    return models


@dataclass(frozen=True)
class Timing:
    total: float
    writes: float | None = None  # the write stage (fleet-sync's progress line)
    read_back: float | None = None
    errors: int = 0


def run_fleet_sync(proxy: Proxy, fleet: Path, urls: Sequence[str], extra: list[str]) -> Timing:
    args = ["apply", "-f", str(fleet), "--force", *extra]
    for url in urls:
        args += ["--proxy-url", url]
    began = time.perf_counter()
    run = subprocess.run(  # no timeout: 1,000 updates on one pod take many minutes
        [sys.executable, "-m", "sync", *args],
        capture_output=True,
        text=True,
        env=proxy.env(),
        check=False,
    )
    total = time.perf_counter() - began
    if run.returncode != 0:
        tail = f"{run.stdout[-1500:]}\n{run.stderr[-1500:]}"
        raise SystemExit(f"fleet-sync apply exited {run.returncode}:\n{tail}")
    stages = [float(m.group(2)) for m in STAGE_DONE.finditer(run.stderr)]
    waits = [float(m.group(1)) for m in READ_BACK.finditer(run.stderr)]
    return Timing(total, sum(stages) if stages else None, waits[-1] if waits else None)


def run_bare(
    proxy: Proxy, routes: Sequence[Route], urls: Sequence[str], concurrency: int, update: bool
) -> Timing:
    chooser = LiteLLMClient(urls, proxy.api_key)
    codes: Counter[int] = Counter()
    # The same headers fleet-sync sends on a write, so only the tool's own work differs.
    headers = {"Authorization": f"Bearer {proxy.api_key}", CHANGED_BY_HEADER: changed_by({})}
    with httpx.Client(headers=headers, timeout=120) as http:

        def send(route: Route) -> None:
            pod = chooser.pod_for(route.id)
            if update:
                answer = http.patch(f"{pod}/model/{route.id}/update", json=route.deployment())
            else:
                answer = http.post(f"{pod}/model/new", json=route.deployment())
            codes[answer.status_code] += 1

        began = time.perf_counter()
        pools = {url: ThreadPoolExecutor(concurrency) for url in urls}
        futures = [pools[chooser.pod_for(r.id)].submit(send, r) for r in routes]
        for future in futures:
            future.result()
        for pool in pools.values():
            pool.shutdown()
        total = time.perf_counter() - began
    chooser.close()
    return Timing(total, errors=sum(n for code, n in codes.items() if code != 200))


def fresh_proxy(pods: int, external: Proxy | None) -> Proxy:
    if external is not None:
        return external
    name = f"perf-apply-{os.getpid()}"
    print(f"  starting LiteLLM with {pods} pod(s) ...", file=sys.stderr, flush=True)
    proxy = start(name, pods)
    warm_up(proxy)
    return proxy


def warm_up(proxy: Proxy) -> None:
    """A pod's first write and listing are slower (lazy imports, first reload): not timed."""
    for url in proxy.urls:
        with proxy.http(url) as http:
            warm_id = f"warm-up-{url.rsplit(':', 1)[-1]}"
            body = {
                "model_name": "warm-up",
                "litellm_params": {"model": "openai/x", "api_base": "http://10.9.9.9/v1"},
                "model_info": {"id": warm_id},
            }
            http.post("/model/new", json=body).raise_for_status()
            http.get("/v2/model/info").raise_for_status()
            http.post("/model/delete", json={"id": warm_id}).raise_for_status()


def clean(proxy: Proxy, started: bool) -> None:
    if started:
        stop(proxy)
        return
    with proxy.http() as http:  # an external proxy: remove what the run created
        for entry in proxy.routes():
            if str(entry["model_name"]).startswith("bench-m"):
                http.post("/model/delete", json={"id": entry["model_info"]["id"]})


def interleaved(routes: int, concurrency: int, rounds: int, work: Path) -> None:
    external = from_environment(1)
    proxy = fresh_proxy(1, external)
    urls = proxy.urls[:1]
    times: dict[str, list[float]] = {"fleet-sync": [], "bare": []}
    try:
        first = write_fleet(work / "shift-0.yaml", "bench", fleet_models(routes, 0))
        run_bare(proxy, render(load_fleet(first)), urls, concurrency, update=False)
        for shift in range(1, 2 * rounds + 1):
            fleet = write_fleet(work / f"shift-{shift}.yaml", "bench", fleet_models(routes, shift))
            writer = "fleet-sync" if shift % 2 else "bare"
            if writer == "bare":
                timing = run_bare(proxy, render(load_fleet(fleet)), urls, concurrency, True)
                seconds = timing.total
            else:
                timing = run_fleet_sync(proxy, fleet, urls, ["--concurrency", str(concurrency)])
                seconds = timing.writes if timing.writes is not None else timing.total
            times[writer].append(seconds)
            load = os.getloadavg()[0]
            print(f"  {writer}: {routes} updates in {seconds:.1f} s (load {load:.1f})", flush=True)
    finally:
        clean(proxy, external is None)
    fs, bare = (statistics.median(times[w]) for w in ("fleet-sync", "bare"))
    print(
        f"{routes} updates on 1 pod, {rounds} rounds taking turns: fleet-sync write stage median "
        f"{fs:.1f} s, bare loop median {bare:.1f} s, ratio {fs / bare:.2f}"
    )


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--routes", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--pods", default="1,2")
    parser.add_argument("--modes", default="spread", help="spread and/or first (fleet-sync)")
    parser.add_argument(
        "--interleave",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="instead: on one pod, ROUNDS x (fleet-sync moves every host, the bare loop moves "
        "every host) taking turns, so load from other jobs falls on both alike",
    )
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fleet-sync-apply-bench-"))
    created, moved = work / "fleet.yaml", work / "moved.yaml"
    write_fleet(created, "bench", fleet_models(options.routes, 0))
    write_fleet(moved, "bench", fleet_models(options.routes, 1))
    if options.interleave:
        interleaved(options.routes, options.concurrency, options.interleave, work)
        return
    bodies = {"create": render(load_fleet(created)), "update": render(load_fleet(moved))}
    rows: list[tuple[int, str, str, Timing]] = []
    loads: list[float] = []  # the machine's 1-minute load average after each run
    for pods in (int(p) for p in options.pods.split(",")):
        external = from_environment(pods)
        writers = [f"fleet-sync {mode}" for mode in options.modes.split(",")] + ["bare"]
        for writer in writers:
            if pods == 1 and writer == "fleet-sync first":
                continue  # the same as spread with one pod
            proxy = fresh_proxy(pods, external)
            urls = proxy.urls[:pods]
            try:
                for action, fleet in (("create", created), ("update", moved)):
                    print(f"  {pods} pod(s), {writer}: {action}", file=sys.stderr, flush=True)
                    if writer == "bare":
                        timing = run_bare(
                            proxy, bodies[action], urls, options.concurrency, action == "update"
                        )
                    else:
                        mode = writer.split()[1]
                        extra = ["--concurrency", str(options.concurrency), "--write-to", mode]
                        timing = run_fleet_sync(proxy, fleet, urls, extra)
                    rows.append((pods, writer, action, timing))
                    loads.append(os.getloadavg()[0])
                    print(f"    {timing} load {loads[-1]:.1f}", file=sys.stderr, flush=True)
            finally:
                clean(proxy, external is None)
    print(
        f"{options.routes} routes, concurrency {options.concurrency} per pod, LiteLLM reload "
        f"interval {os.environ.get('PROXY_CONFIG_RELOAD_INTERVAL_SECONDS', '30 (default)')} s, "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    print(
        "| pods | writer | action | total | write stage | read-back wait | bare loop | ratio "
        "| load after (fleet-sync, bare) |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---|")
    load_of = {row[:3]: load for row, load in zip(rows, loads, strict=True)}
    bare = {(p, a): t for p, w, a, t in rows if w == "bare"}
    for pods, writer, action, timing in rows:
        if writer == "bare":
            continue
        floor = bare.get((pods, action))
        ratio = f"{timing.total / floor.total:.2f}" if floor else "-"
        print(
            f"| {pods} | {writer} | {options.routes} {action}s | {fmt(timing.total)} "
            f"| {fmt(timing.writes)} | {fmt(timing.read_back)} "
            f"| {fmt(floor.total if floor else None)} | {ratio} "
            f"| {load_of[(pods, writer, action)]:.1f}, "
            f"{load_of.get((pods, 'bare', action), 0):.1f} |"
        )
    for action in ("create", "update"):
        one = [t.total for p, w, a, t in rows if p == 1 and a == action]
        two = [t.total for p, w, a, t in rows if p == 2 and a == action and w != "fleet-sync first"]
        if len(one) == len(two) == 2:
            print(
                f"2 pods / 1 pod, {action}s: fleet-sync {two[0] / one[0]:.2f}x, "
                f"bare {two[1] / one[1]:.2f}x"
            )
    errors = sum(t.errors for *_, t in rows)
    if errors:
        print(f"bare loop: {errors} answers other than 200")


if __name__ == "__main__":
    main()
