"""The real proxy's side of a no-op plan: wall time, the proxy's CPU and the requests it takes.

    .venv/bin/python benchmarks/real_proxy.py [--routes 1000,5000] [--pods 1,2] [--runs 3]
        [--sizes 200,500,1000,1700,all] [--tree NAME=PATH ...]

For each pod count a fresh LiteLLM 1.108.7 with PostgreSQL (../shared/litellm/start, reload
interval 3600 s so no periodic reload falls inside a measurement), or the proxy of
LITELLM_PROXY_URL(S) / LITELLM_PROXY_API_KEY / DATABASE_URL when all are set (its master key must
be the key given: it encrypts the seeded rows). For each size, the synthetic fleet
(benchmarks/synthetic.py: 10 hosts per model, addresses in 10.0.0.0/8, never dialled) is seeded
as the rows `POST /model/new` stores for fleet-sync's request bodies (made by LiteLLM's own code:
benchmarks/litellm_rows.py, checked against a route created through /model/new), written in one
SQL transaction; each pod then reloads its router from the database (a create and a delete of a
sentinel route on it) and lists them all. fleet.yaml is committed in a scratch git repository,
so the plan reads its history as in CI.

Measured, taking turns so load from other jobs falls on all alike, median of --runs:
- `fleet-sync plan --detailed-exitcode` as a user runs it (a subprocess; exit 0 = no changes is
  checked) from each --tree (default: this checkout);
- the minimum: a plain script (a subprocess too) that loads fleet.yaml with libyaml and GETs
  every page of /v2/model/info once on every pod (pods in parallel) and json.loads it, at each
  page size of --sizes ("all": one page of every route).
For each: wall time, CPU seconds of the proxy's processes (each pod's LiteLLM and its query
engine) from /proc, and the requests the pods logged (own proxies only).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.seed_litellm import TABLE, psql, reload_pods, seed, total_listed  # noqa: E402
from benchmarks.synthetic import fleet_text  # noqa: E402
from tests.support.proxyharness import (  # noqa: E402
    DEFAULT_VERSION,
    Proxy,
    database_url,
    from_environment,
    harness_home,
    start,
    stop,
)

FLEET = "realbench"
ACCESS = re.compile(r'"(GET|POST|PATCH|DELETE) ([^ ]+) HTTP/[0-9.]+" (\d+)')
TICK = os.sysconf("SC_CLK_TCK")


# -- the proxy's processes -----------------------------------------------------------------


def _stat(pid: int) -> tuple[int, int, float] | None:
    """(parent pid, process group, CPU seconds) of a live process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2]), (int(fields[11]) + int(fields[12])) / TICK


def _all_stats() -> dict[int, tuple[int, int, float]]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            out[int(entry)] = stat
    return out


@dataclass(frozen=True)
class Processes:
    """The pods' process groups: each LiteLLM and its query engine (PostgreSQL's backends come
    and go with the pool: their CPU cannot be summed from /proc)."""

    groups: frozenset[int]

    def cpu(self) -> float:
        """CPU seconds the pods used so far."""
        return sum(cpu for _, group, cpu in _all_stats().values() if group in self.groups)


def processes(proxy: Proxy) -> Processes | None:
    if proxy.name is None:
        return _listening(proxy.urls)
    run = harness_home(proxy.version or DEFAULT_VERSION) / "run" / proxy.name
    groups = set()
    for pid_file in run.glob("proxy-*.pid"):
        stat = _stat(int(pid_file.read_text().split()[0]))
        if stat is not None:
            groups.add(stat[1])
    return Processes(frozenset(groups))


def _listening(urls: Sequence[str]) -> Processes | None:
    """The process groups listening on the pods' local ports (an external proxy on this
    machine), or None when they cannot be found."""
    ports = {httpx.URL(u).port for u in urls}
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) in ports:
                inodes.add(parts[9])
    groups = set()
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            continue
        if any(f"socket:[{inode}]" in links for inode in inodes) and (stat := _stat(pid)):
            groups.add(stat[1])
    return Processes(frozenset(groups)) if groups else None


def log_files(proxy: Proxy) -> list[Path]:
    if proxy.name is None:
        return []
    run = harness_home(proxy.version or DEFAULT_VERSION) / "run" / proxy.name
    return sorted(run.glob("proxy-*.log"))


def requests_since(logs: Sequence[Path], offsets: Sequence[int]) -> Counter[str]:
    """The requests the pods logged past these offsets, by kind."""
    kinds: Counter[str] = Counter()
    for log, offset in zip(logs, offsets, strict=True):
        with log.open("rb") as handle:
            handle.seek(offset)
            for line in handle.read().decode("utf-8", "replace").splitlines():
                if match := ACCESS.search(line):
                    kinds[_kind(match.group(2))] += 1
    return kinds


def _kind(target: str) -> str:
    path, _, query = target.partition("?")
    if path != "/v2/model/info":
        return "other"
    if "modelId=" in query:
        return "by id"
    if "model=" in query:
        return "group"
    return "search" if "search=" in query else "page"


def scratch_repo(routes: int) -> Path:
    repo = Path(tempfile.mkdtemp(prefix="fleet-sync-real-proxy-"))
    (repo / "fleet.yaml").write_text(fleet_text(routes, fleet=FLEET), encoding="utf-8")
    for args in (["init", "-q"], ["add", "fleet.yaml"], ["commit", "-qm", "fleet"]):
        subprocess.run(
            ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
            cwd=repo,
            check=True,
        )
    return repo


# -- what is timed -------------------------------------------------------------------------

BARE_READ = """
import json, sys, yaml, httpx
from concurrent.futures import ThreadPoolExecutor
yaml.load(open(sys.argv[1], "rb"), Loader=yaml.CSafeLoader)
key, size, urls = sys.argv[2], sys.argv[3], sys.argv[4:]
def read(url):
    with httpx.Client(headers={"Authorization": "Bearer " + key}, timeout=600) as http:
        page, pages, n = 1, 1, 0
        while page <= pages:
            query = {"page": page, "size": 1000000 if size == "all" else int(size)}
            data = json.loads(http.get(url + "/v2/model/info", params=query).content)
            pages, n, page = data["total_pages"], n + len(data["data"]), page + 1
        return n
with ThreadPoolExecutor(len(urls)) as pool:
    print(list(pool.map(read, urls)))
"""


@dataclass
class Figures:
    wall: list[float] = field(default_factory=list)
    pods_cpu: list[float] = field(default_factory=list)
    tool_cpu: list[float] = field(default_factory=list)  # the command's own (user + system)
    requests: Counter[str] = field(default_factory=Counter)

    def median(self, values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")


def timed(
    proxy: Proxy,
    procs: Processes | None,
    logs: Sequence[Path],
    command: Sequence[str],
    cwd: Path,
    check: Callable[[subprocess.CompletedProcess[str]], None],
    into: Figures,
) -> None:
    offsets = [log.stat().st_size for log in logs]
    before = procs.cpu() if procs else 0.0
    own = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, env=proxy.env(), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - began
    after = procs.cpu() if procs else 0.0
    done_own = resource.getrusage(resource.RUSAGE_CHILDREN)
    check(done)
    into.wall.append(wall)
    into.tool_cpu.append(done_own.ru_utime + done_own.ru_stime - own.ru_utime - own.ru_stime)
    if procs:
        into.pods_cpu.append(after - before)
    if logs:
        time.sleep(0.2)  # the access log line is written as the answer goes out
        into.requests = requests_since(logs, offsets)


def plan_ok(done: subprocess.CompletedProcess[str]) -> None:
    if done.returncode != 0:
        raise SystemExit(
            f"the plan is not empty or failed (exit {done.returncode}):\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


def read_ok(expected: int) -> Callable[[subprocess.CompletedProcess[str]], None]:
    def check(done: subprocess.CompletedProcess[str]) -> None:
        if done.returncode != 0 or any(n < expected for n in json.loads(done.stdout)):
            raise SystemExit(f"the bare read failed: {done.stdout[-500:]} {done.stderr[-2000:]}")

    return check


def measure(
    proxy: Proxy,
    routes: int,
    runs: int,
    sizes: Sequence[str],
    trees: dict[str, Path],
    warmup: int = 1,
) -> tuple[dict[str, Figures], list[float]]:
    db = database_url(proxy)
    if db is None:
        raise SystemExit("no DATABASE_URL for this proxy: cannot seed it")
    repo = scratch_repo(routes)
    fleet_file = repo / "fleet.yaml"
    began = time.perf_counter()
    seeded = seed(proxy, db, fleet_file, FLEET)
    reload_pods(proxy, db, FLEET)
    listed = [total_listed(proxy, url) for url in proxy.urls]
    print(
        f"  seeded {seeded} routes in {time.perf_counter() - began:.0f} s; pods list {listed}",
        file=sys.stderr,
        flush=True,
    )
    procs, logs = processes(proxy), log_files(proxy)
    commands: dict[str, tuple[list[str], dict[str, str] | None]] = {}
    for name, tree in trees.items():
        commands[f"plan {name}"] = (
            [sys.executable, "-m", "sync", "plan", "-f", str(fleet_file), "--detailed-exitcode"],
            {"PYTHONPATH": str(tree)},
        )
    for size in sizes:
        bare = [sys.executable, "-c", BARE_READ, str(fleet_file), proxy.api_key, size]
        commands[f"read {size}"] = ([*bare, *proxy.urls], None)
    figures = {name: Figures() for name in commands}
    loads: list[float] = []
    for run in range(1 - warmup, runs + 1):  # round 0 warms up (imports, first answers)
        for name, (command, extra) in commands.items():
            into = figures[name] if run else Figures()
            check = plan_ok if name.startswith("plan") else read_ok(routes)
            env_proxy = proxy if extra is None else _with_env(proxy, extra)
            timed(env_proxy, procs, logs, command, repo, check, into)
        loads.append(os.getloadavg()[0])
        print(f"  round {run} done, load {loads[-1]:.1f}", file=sys.stderr, flush=True)
        for name, f in figures.items():
            if f.wall:
                print(
                    f"    {name}: {f.wall[-1]:.2f} s, pods "
                    f"{f.pods_cpu[-1] if f.pods_cpu else 0:.2f} s CPU, {dict(f.requests)}",
                    file=sys.stderr,
                    flush=True,
                )
    return figures, loads[warmup:]


@dataclass(frozen=True)
class _EnvProxy(Proxy):
    extra: tuple[tuple[str, str], ...] = ()

    def env(self) -> dict[str, str]:
        return {**super().env(), **dict(self.extra)}


def _with_env(proxy: Proxy, extra: dict[str, str]) -> Proxy:
    return _EnvProxy(proxy.urls, proxy.api_key, proxy.name, proxy.version, tuple(extra.items()))


def report(pods: int, routes: int, figures: dict[str, Figures], loads: Sequence[float]) -> str:
    reads = {k: v for k, v in figures.items() if k.startswith("read")}
    best = min(
        reads,
        key=lambda k: (
            reads[k].median(reads[k].pods_cpu)
            if reads[k].pods_cpu
            else reads[k].median(reads[k].wall)
        ),
    )
    floor = reads[best]
    lines = []
    for name, f in figures.items():
        wall, cpu, tool = f.median(f.wall), f.median(f.pods_cpu), f.median(f.tool_cpu)
        requests = sum(f.requests.values())
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(f.requests.items()))
        ratio_wall = wall / floor.median(floor.wall)
        ratio_cpu = cpu / floor.median(floor.pods_cpu) if floor.pods_cpu else float("nan")
        lines.append(
            f"| {pods} | {routes:,} | {name}{' (minimum)' if name == best else ''} "
            f"| {wall:.2f} s | {cpu:.2f} s | {tool:.2f} s | {requests} ({kinds}) "
            f"| {ratio_wall:.2f} | {ratio_cpu:.2f} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--routes", default="1000,5000")
    parser.add_argument("--pods", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="200,500,1000,1700,all")
    parser.add_argument("--warmup", type=int, choices=(0, 1), default=1, help="a round not kept")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="time `plan` of the fleet-sync checkout at PATH, named NAME (repeat; default: "
        "this checkout)",
    )
    options = parser.parse_args()
    given = dict(t.split("=", 1) for t in options.tree) or {"this": str(REPO)}
    trees = {name: Path(path) for name, path in given.items()}
    table = [
        "| pods | routes | what | wall | proxy CPU | tool CPU | requests "
        "| wall / minimum | proxy CPU / minimum | load |",
        "|---:|---:|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for pods in (int(p) for p in options.pods.split(",")):
        external = from_environment(pods)
        proxy = external or _start(pods)
        urls = proxy.urls[:pods]
        proxy = Proxy(urls, proxy.api_key, proxy.name, proxy.version)
        try:
            for routes in (int(r) for r in options.routes.split(",")):
                print(f"{pods} pod(s), {routes} routes", file=sys.stderr, flush=True)
                figures, loads = measure(
                    proxy, routes, options.runs, options.sizes.split(","), trees, options.warmup
                )
                table.append(report(pods, routes, figures, loads))
                print("\n".join(table), file=sys.stderr, flush=True)
        finally:
            if external is None:
                stop(proxy)
            else:
                db = database_url(proxy)
                if db:
                    psql(
                        db, f"DELETE FROM {TABLE} WHERE model_info->>'fleet_sync_fleet' = '{FLEET}'"
                    )
    print(
        f"LiteLLM {DEFAULT_VERSION}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, median of {options.runs}"
    )
    print("\n".join(table))


def _start(pods: int) -> Proxy:
    print(f"starting LiteLLM with {pods} pod(s) ...", file=sys.stderr, flush=True)
    return start(
        f"bench-real-{os.getpid()}-{pods}",
        pods,
        extra_env={"PROXY_CONFIG_RELOAD_INTERVAL_SECONDS": "3600"},
    )


if __name__ == "__main__":
    main()
