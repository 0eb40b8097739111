"""Real LiteLLM proxies for the tests: started with ../shared/litellm, or taken from the
environment (LITELLM_PROXY_URL / LITELLM_PROXY_URLS / LITELLM_PROXY_API_KEY) to test against
any other real proxy. Plus the small helpers the integration tests share."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parents[2]
HARNESS = Path(os.environ.get("LITELLM_HARNESS_DIR", REPO.parent / "shared" / "litellm"))
DEFAULT_VERSION = "1.108.7"  # the harness's own default LiteLLM
EXTERNAL = "external"  # litellm_version of a proxy given by LITELLM_PROXY_URL(S)
# What the harness needs to install each version beyond LITELLM_HARNESS_LITELLM_VERSION
# (../shared/litellm/README.md, "Other LiteLLM versions"): 1.108.8+ pin extras releases the
# package index lacks, so the newest ones it has stand in.
VERSION_ENV: dict[str, dict[str, str]] = {
    "1.110.2": {
        "LITELLM_HARNESS_PIP_OVERRIDES": "litellm-proxy-extras==0.4.110 litellm-enterprise==0.1.83"
    },
}


def harness_version(litellm_version: str) -> str:
    """The version a test starts its own instance of (beside an external proxy: the default)."""
    return DEFAULT_VERSION if litellm_version == EXTERNAL else litellm_version


def harness_home(version: str) -> Path:
    """The harness's state dir for a version (each version keeps its own venv and instances)."""
    home = os.environ.get("LITELLM_HARNESS_HOME")
    if version == DEFAULT_VERSION:
        return Path(home or "/var/tmp/litellm-harness")
    return Path(f"{home}-{version}" if home else f"/var/tmp/litellm-harness-{version}")


def harness_env(version: str) -> dict[str, str]:
    return {
        "LITELLM_HARNESS_LITELLM_VERSION": version,
        "LITELLM_HARNESS_HOME": str(harness_home(version)),
        **VERSION_ENV.get(version, {}),
    }


@dataclass(frozen=True)
class Proxy:
    urls: tuple[str, ...]
    api_key: str
    name: str | None  # harness instance name; None for an external proxy
    version: str | None = None  # the LiteLLM the harness started; None for an external proxy

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

    def litellm_version(self) -> str:
        """The version the proxy reports, read the plain way (not through fleet-sync)."""
        with self.http() as http:
            version: str = http.get("/health/readiness/details").json()["litellm_version"]
        return version


def from_environment(min_pods: int) -> Proxy | None:
    urls = os.environ.get("LITELLM_PROXY_URLS") or os.environ.get("LITELLM_PROXY_URL") or ""
    key = os.environ.get("LITELLM_PROXY_API_KEY")
    parsed = tuple(u.strip().rstrip("/") for u in urls.split(",") if u.strip())
    if key and len(parsed) >= min_pods:
        return Proxy(parsed, key, None)
    return None


def setup(version: str) -> None:
    """Install a version's harness (once per machine: minutes; afterwards a fraction of a
    second). Separate from start because a fresh install outlasts start's own timeout."""
    done = subprocess.run(
        ["bash", str(HARNESS / "setup")],
        capture_output=True,
        text=True,
        env={**os.environ, **harness_env(version)},
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{HARNESS}/setup of LiteLLM {version} failed:\n{done.stderr[-3000:]}")


def start(
    name: str,
    pods: int = 1,
    extra_env: Mapping[str, str] | None = None,
    version: str = DEFAULT_VERSION,
) -> Proxy:
    env = {**os.environ, **(extra_env or {}), **harness_env(version)}
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
    return Proxy(urls, values["LITELLM_PROXY_API_KEY"], name, version)


def stop(proxy: Proxy) -> None:
    if proxy.name and proxy.version:
        subprocess.run(
            ["bash", str(HARNESS / "stop"), "--name", proxy.name],
            capture_output=True,
            env={**os.environ, **harness_env(proxy.version)},
            check=False,
        )


def database_url(proxy: Proxy) -> str | None:
    """The PostgreSQL database behind a proxy: the harness keeps it in its instance's env file;
    for an external proxy, $DATABASE_URL when set."""
    if proxy.name is None or proxy.version is None:
        return os.environ.get("DATABASE_URL") or None
    env_file = harness_home(proxy.version) / "run" / proxy.name / "env"
    for line in env_file.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key == "DATABASE_URL" and value:
            return shlex.split(value)[0]
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def without_database(version: str, api_key: str, workdir: Path) -> Iterator[str]:
    """A real LiteLLM of `version` started without DATABASE_URL (it lists no routes and cannot
    write); yields its URL once it answers."""
    litellm = harness_home(version) / "venv" / "bin" / "litellm"
    if not litellm.exists():
        raise RuntimeError(f"no LiteLLM install at {litellm} (../shared/litellm/setup creates it)")
    config = workdir / "config.yaml"
    config.write_text(
        "general_settings:\n  master_key: os.environ/LITELLM_MASTER_KEY\n"
        "  disable_model_info_refresh: true\n",
        encoding="utf-8",
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["LITELLM_MASTER_KEY"] = api_key
    process = subprocess.Popen(
        [str(litellm), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/health/readiness", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"LiteLLM {version} without a database did not start")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


# What a crash looks like from outside: Python's traceback, or the one line fleet-sync prints for
# an exception it did not expect (sync/commands/common.py internal_error): a bug either way.
CRASH_SIGNS = ("Traceback", "error: internal error (")


def crashed(text: str) -> bool:
    return any(sign in text for sign in CRASH_SIGNS)


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
    assert not crashed(done.stderr), done.stderr
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


def remove_fleet(proxy: Proxy, fleet: str) -> None:
    """Delete every route of this fleet the proxy lists (a test's cleanup)."""
    with proxy.http() as http:
        for route in proxy.routes():
            if (route.get("model_info") or {}).get("fleet_sync_fleet") == fleet:
                http.post("/model/delete", json={"id": route["model_info"]["id"]})
