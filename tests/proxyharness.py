"""Real LiteLLM proxies for the tests: started with ../shared/litellm, or taken from the
environment (LITELLM_PROXY_URL / LITELLM_PROXY_URLS / LITELLM_PROXY_API_KEY) to test against
any other real proxy. Plus the small helpers the integration tests share."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parent.parent
HARNESS = Path(os.environ.get("LITELLM_HARNESS_DIR", REPO.parent / "shared" / "litellm"))


@dataclass(frozen=True)
class Proxy:
    urls: tuple[str, ...]
    api_key: str
    name: str | None  # harness instance name; None for an external proxy

    @property
    def url(self) -> str:
        return self.urls[0]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
        env.update(
            LITELLM_PROXY_URL=self.url,
            LITELLM_PROXY_URLS=",".join(self.urls),
            LITELLM_PROXY_API_KEY=self.api_key,
            NO_COLOR="1",
        )
        return env

    def http(self, url: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=url or self.url,
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=30,
        )

    def routes(self, url: str | None = None) -> list[dict[str, Any]]:
        """Every route on one pod, read the plain way (all pages)."""
        out: list[dict[str, Any]] = []
        page = 1
        with self.http(url) as http:
            while True:
                data = http.get("/v2/model/info", params={"page": page, "size": 100}).json()
                out += data["data"]
                if page >= (data.get("total_pages") or 1):
                    return out
                page += 1

    def ids(self, model: str, url: str | None = None) -> list[str]:
        """Sorted ids of one model group's routes on one pod (duplicates would show twice)."""
        return sorted(r["model_info"]["id"] for r in self.routes(url) if r["model_name"] == model)

    def route(self, route_id: str) -> dict[str, Any] | None:
        return next((r for r in self.routes() if r["model_info"]["id"] == route_id), None)


def from_environment(min_pods: int) -> Proxy | None:
    urls = os.environ.get("LITELLM_PROXY_URLS") or os.environ.get("LITELLM_PROXY_URL") or ""
    key = os.environ.get("LITELLM_PROXY_API_KEY")
    parsed = tuple(u.strip().rstrip("/") for u in urls.split(",") if u.strip())
    if key and len(parsed) >= min_pods:
        return Proxy(parsed, key, None)
    return None


def start(name: str, pods: int = 1, extra_env: Mapping[str, str] | None = None) -> Proxy:
    env = {**os.environ, **(extra_env or {})}
    done = subprocess.run(
        ["bash", str(HARNESS / "start"), "--pods", str(pods), "--name", name],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{HARNESS}/start failed ({done.returncode}):\n{done.stderr[-3000:]}")
    values = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        values[key] = shlex.split(value)[0] if value else ""
    urls = tuple(values["LITELLM_PROXY_URLS"].split(","))
    return Proxy(urls, values["LITELLM_PROXY_API_KEY"], name)


def stop(proxy: Proxy) -> None:
    if proxy.name:
        subprocess.run(
            ["bash", str(HARNESS / "stop"), "--name", proxy.name], capture_output=True, check=False
        )


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def fleet_sync(args: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> Run:
    """The real command in a subprocess: exit codes and output as a user sees them."""
    done = subprocess.run(
        [sys.executable, "-m", "sync", *args],
        capture_output=True,
        text=True,
        env=dict(env),
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return Run(done.returncode, done.stdout, done.stderr)


def write_fleet(path: Path, fleet: str, models: Mapping[str, Any], **top: Any) -> Path:
    """A fleet.yaml with `models` as {model_name: {served_model?, hosts: {host: api_base}}}."""
    doc: dict[str, Any] = {"version": 1, "fleet": fleet, **top, "models": {}}
    for model_name, spec in models.items():
        hosts = spec["hosts"]
        entry = {k: v for k, v in spec.items() if k != "hosts"}
        entry.setdefault("served_model", f"org/{model_name}")
        entry["hosts"] = [
            h if isinstance(h, dict) else {"name": name, "api_base": h} for name, h in hosts.items()
        ]
        doc["models"][model_name] = entry
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path
