"""The cost of reading what names a model group a plan leaves without routes (issue 26), on a
real LiteLLM with many virtual keys:

    .venv/bin/python benchmarks/references.py [--keys 1000,10000] [--teams 100] [--runs 3]
        [--version 1.108.7]

A fresh LiteLLM with PostgreSQL (../shared/litellm/start, one pod), seeded by SQL with --keys
virtual keys (every 100th lists the vanishing group) and --teams teams, each carrying a model
list, an alias map and a budget as keys made through /key/generate do. The plan is a plain
one that prunes a group's last route (no route is needed on the proxy: only the references are
read). Measured, median of --runs: wall time of sync/live/references.py with_references with a
proxy_admin_viewer key, the requests it sent (2 + ceil(keys/100) + ceil(teams/100)), and the
references it found. An ordinary plan (no group left empty) is timed too: it sends nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.seed_litellm import psql  # noqa: E402
from sync.core.plan import Plan  # noqa: E402
from sync.live.client import LiteLLMClient  # noqa: E402
from sync.live.references import with_references  # noqa: E402
from tests.support.keys import read_only_key  # noqa: E402
from tests.support.proxyharness import Proxy, database_url, start, stop  # noqa: E402
from tests.test_plan_cases import plan_for  # noqa: E402

GONE = "bench-gone"
KEYS = '"LiteLLM_VerificationToken"'
TEAMS = '"LiteLLM_TeamTable"'


def plans() -> tuple[Plan, Plan]:
    """(a plan that prunes GONE's last route, an ordinary plan that moves a host)."""
    api = "http://10.0.0.1:{}/v1"
    fleet = {
        "version": 1,
        "fleet": "bench",
        "models": {
            "m": {"served_model": "org/m", "hosts": [{"name": "h", "api_base": api.format(8000)}]}
        },
    }
    gone: dict[str, Any] = {
        "model_name": GONE,
        "litellm_params": {"model": "hosted_vllm/org/x", "api_base": api.format(8001)},
        "model_info": {"id": "g1", "fleet_sync_fleet": "bench", "fleet_sync_host": "h"},
    }
    moved = {**gone, "model_name": "m", "model_info": {**gone["model_info"], "id": "m1"}}
    prune, _ = plan_for({"fleet": fleet, "live": [{"rendered": "m/h"}, gone]})
    ordinary, _ = plan_for({"fleet": fleet, "live": [moved]})
    return prune, ordinary


def seed(db: str, keys: int, teams: int) -> None:
    psql(db, f"DELETE FROM {KEYS} WHERE key_alias LIKE 'bench-%'")
    psql(db, f"DELETE FROM {TEAMS} WHERE team_alias LIKE 'bench-%'")
    psql(
        db,
        f"INSERT INTO {KEYS} (token, key_alias, models, aliases, model_max_budget) "
        "SELECT md5('bench-' || i), 'bench-' || i, "
        f"CASE WHEN i % 100 = 0 THEN ARRAY['m', '{GONE}'] ELSE ARRAY['m'] END, "
        '\'{"fast": "m"}\'::jsonb, \'{"m": {"budget_limit": 10}}\'::jsonb '
        f"FROM generate_series(1, {keys}) AS i",
    )
    psql(
        db,
        f"INSERT INTO {TEAMS} (team_id, team_alias, models, updated_at) "
        "SELECT 'bench-team-' || i, 'bench-team-' || i, ARRAY['m'], now() "
        f"FROM generate_series(1, {teams}) AS i",
    )


class Counting(LiteLLMClient):
    asked = 0

    def __enter__(self) -> Counting:
        return self

    def read_json(self, path: str, params: Any) -> Any:
        self.asked += 1
        return super().read_json(path, params)


def measure(proxy: Proxy, reader: str, runs: int) -> dict[str, Any]:
    prune, ordinary = plans()
    walls, asked, found = [], 0, 0
    for _ in range(runs):
        with Counting(proxy.urls, reader, timeout=60) as client:
            began = time.perf_counter()
            plan = with_references(client, prune)
            walls.append(time.perf_counter() - began)
            asked = client.asked
            assert plan.references is not None and not plan.references.unread
            found = len(plan.references.found)
    with Counting(proxy.urls, reader) as client:
        assert with_references(client, ordinary) is ordinary and client.asked == 0
    return {"wall": statistics.median(walls), "requests": asked, "found": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--keys", default="1000,10000")
    parser.add_argument("--teams", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--version", default="1.108.7")
    options = parser.parse_args()
    proxy = start(f"bench-refs-{os.getpid()}", version=options.version)
    rows = [
        "| keys | teams | requests | wall (median) | references found |",
        "|---:|---:|---:|---:|---:|",
    ]
    try:
        db = database_url(proxy)
        assert db, "no database URL for the proxy"
        reader = read_only_key(proxy)
        for keys in (int(k) for k in options.keys.split(",")):
            seed(db, keys, options.teams)
            got = measure(proxy, reader, options.runs)
            rows.append(
                f"| {keys} | {options.teams} | {got['requests']} | {got['wall']:.2f} s "
                f"| {got['found']} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
    finally:
        stop(proxy)
    print(
        f"LiteLLM {options.version}, {os.cpu_count()} CPUs, one pod, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, median of {options.runs}"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
