"""Seeding a real LiteLLM for benchmarks/real_proxy.py: the rows `POST /model/new` stores for
fleet-sync's request bodies (made by LiteLLM's own code: benchmarks/litellm_rows.py in the
proxy's venv), written in one SQL transaction, then each pod's router reloaded from them."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import tempfile
from pathlib import Path

import httpx

from benchmarks.synthetic import fleet_text
from sync.core.render import render
from sync.fleet.model import load_fleet
from tests.support.proxyharness import DEFAULT_VERSION, Proxy, harness_home

TABLE = '"LiteLLM_ProxyModelTable"'
ROWS_HELPER = Path(__file__).with_name("litellm_rows.py")


def psql(db: str, sql: str, data: str | None = None) -> str:
    done = subprocess.run(
        ["psql", db, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
        input=data,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"psql failed: {done.stderr[-2000:]}")
    return done.stdout


def litellm_python(proxy: Proxy) -> Path:
    return harness_home(proxy.version or DEFAULT_VERSION) / "venv" / "bin" / "python"


def helper(proxy: Proxy, mode: str, data: str) -> str:
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": proxy.api_key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(
        [str(litellm_python(proxy)), str(ROWS_HELPER), mode],
        input=data,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{ROWS_HELPER.name} {mode} failed: {done.stderr[-2000:]}")
    return done.stdout


def seed(proxy: Proxy, db: str, fleet_file: Path, fleet: str) -> int:
    """Replace this benchmark's rows with the rows /model/new stores for the fleet's routes."""
    routes = render(load_fleet(fleet_file))
    bodies = "\n".join(json.dumps(r.deployment()) for r in routes)
    rows = [json.loads(line) for line in helper(proxy, "rows", bodies).splitlines() if line]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        writer.writerow(
            [
                row["model_id"],
                row["model_name"],
                json.dumps(row["litellm_params"]),
                json.dumps(row["model_info"]),
                row["created_by"],
                row["updated_by"],
            ]
        )
    columns = "model_id, model_name, litellm_params, model_info, created_by, updated_by"
    psql(
        db,
        f"BEGIN; DELETE FROM {TABLE} WHERE model_info->>'fleet_sync_fleet' = '{fleet}'; "
        f"COPY {TABLE} ({columns}) FROM STDIN WITH (FORMAT csv); COMMIT;",
        buffer.getvalue(),
    )
    return len(rows)


def reload_pods(proxy: Proxy, db: str, fleet: str) -> None:
    """Each pod reloads its router from the database on a create (LiteLLM's add_deployment);
    a delete only takes the route out of the pod that deletes it. So, pod by pod: create a
    sentinel, compare its stored row with the seeding's for the same body, delete it."""
    sentinel = Path(tempfile.mkdtemp()) / "fleet.yaml"
    sentinel.write_text(fleet_text(1, fleet=f"{fleet}-sentinel"), encoding="utf-8")
    body = render(load_fleet(sentinel))[0].deployment()
    for index, url in enumerate(proxy.urls):
        body["model_info"]["id"] = f"{fleet}-sentinel-{index}"
        with proxy.http(url) as http:
            http.timeout = httpx.Timeout(600)
            http.post("/model/new", json=body).raise_for_status()
            stored = psql(
                db,
                f"SELECT row_to_json(t) FROM {TABLE} t WHERE model_id = '{fleet}-sentinel-{index}'",
            )
            differ = json.loads(
                helper(
                    proxy, "check", json.dumps({"deployment": body, "stored": json.loads(stored)})
                )
            )
            if differ:
                raise SystemExit(f"seeded rows differ from what /model/new stores: {differ}")
            http.post("/model/delete", json={"id": body["model_info"]["id"]}).raise_for_status()


def total_listed(proxy: Proxy, url: str) -> int:
    with proxy.http(url) as http:
        http.timeout = httpx.Timeout(600)
        data = http.get("/v2/model/info", params={"page": 1, "size": 1}).json()
    count: int = data["total_count"]
    return count
