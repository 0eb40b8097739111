"""Does a change to fleet-sync change what its commands print? Runs one sequence of commands
(plan in every format, apply --dry-run, apply, drift, a moved host, a refused target, an
unreachable proxy) with two trees against one real LiteLLM, each tree on a fleet of the same
shape under its own name, and compares exit codes, stdout and stderr with names, ids, digests
and hashes normalised. Exit 1 when anything but elapsed seconds differs.

    .venv/bin/python benchmarks/cli_identity.py --old /path/to/old/.venv/bin/python \\
        --url http://127.0.0.1:4000 --key sk-...

The proxy is wiped of every route before and after each tree's sequence: give it one of its
own (the harness: ../shared/litellm/start --name cli-identity).
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

FLEET = """version: 1
fleet: {name}
source: example/cmp
safety: {{max_prune_percent: 30}}
models:
  {name}-a:
    served_model: org/a
    hosts:
      - {{name: h1, api_base: "http://203.0.113.1:8000/v1", litellm_params: {{rpm: 10}}}}
      - {{name: h2, api_base: "http://203.0.113.2:8000/v1"}}
      - {{name: h3, api_base: "http://203.0.113.3:8000/v1"}}
  {name}-b:
    served_model: org/b
    hosts:
      - {{name: k1, api_base: "http://203.0.113.4:8000/v1"}}
"""
MOVED = FLEET.replace("203.0.113.1:8000", "203.0.113.9:8000").replace(
    '      - {{name: h3, api_base: "http://203.0.113.3:8000/v1"}}\n', ""
)
STEPS: list[tuple[list[str], str]] = [
    (["plan"], FLEET),
    (["plan", "--format", "json"], FLEET),
    (["plan", "--format", "markdown"], FLEET),
    (["apply", "--dry-run"], FLEET),
    (["apply"], FLEET),
    (["plan", "--detailed-exitcode"], FLEET),
    (["drift"], MOVED),
    (["drift", "--format", "json"], MOVED),
    (["apply", "--dry-run"], MOVED),
    (["apply", "--format", "json"], MOVED),
    (["apply", "--force"], MOVED),
    (["drift"], MOVED),
    (["apply", "--target", "x"], MOVED),
    (["plan", "--proxy-url", "http://127.0.0.1:9"], MOVED),
]
Run = tuple[int, str, str]


def normalised(text: str, name: str, workdir: Path) -> str:
    text = text.replace(str(workdir), "DIR").replace(name, "NAME")
    text = re.sub(r"sha256:[0-9a-f]{64}", "sha256:H", text)
    text = re.sub(r"-[0-9a-f]{10}\b", "-X", text)  # the hash part of a route id
    text = re.sub(r"\b[0-9a-f]{16}\b", "D16", text)  # fleet_sync_digest
    return re.sub(r"\b[0-9a-f]{12}\b", "D12", text)  # the ids digest of a refusal


def run(python: str, name: str, args: list[str], text: str, url: str, key: str) -> Run:
    workdir = Path(tempfile.mkdtemp())
    fleet = workdir / "fleet.yaml"
    fleet.write_text(text.format(name=name), encoding="utf-8")
    env = {
        "PATH": "/usr/bin:/bin",
        "LITELLM_PROXY_URL": url,
        "LITELLM_PROXY_API_KEY": key,
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [python, "-m", "sync", *args, "-f", str(fleet)],
        capture_output=True, text=True, env=env, cwd=workdir, check=False, timeout=300,
    )  # fmt: skip
    return (
        done.returncode,
        normalised(done.stdout, name, workdir),
        normalised(done.stderr, name, workdir),
    )


def wipe(url: str, key: str) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
        for row in http.get("/v2/model/info", params={"size": 500}).json()["data"]:
            http.post("/model/delete", json={"id": row["model_info"]["id"]})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the old tree's python (its venv)")
    parser.add_argument("--new", default=sys.executable, help="the new tree's python")
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    ns = parser.parse_args()
    runs: dict[str, list[Run]] = {}
    for tree, python in (("old", ns.old), ("new", ns.new)):
        wipe(ns.url, ns.key)
        runs[tree] = [run(python, f"cmp{tree}", a, t, ns.url, ns.key) for a, t in STEPS]
    wipe(ns.url, ns.key)
    differ = 0
    for (args, _), old, new in zip(STEPS, runs["old"], runs["new"], strict=True):
        # Elapsed seconds in progress lines are the machine's, not the tool's output.
        same = [re.sub(r"in \d+ s", "in N s", part) for part in map(str, old)] == [
            re.sub(r"in \d+ s", "in N s", part) for part in map(str, new)
        ]
        differ += not same
        print(f"{'same  ' if same else 'DIFFER'} exit {old[0]}/{new[0]}  {' '.join(args)}")
        for before, after in zip(old[1:], new[1:], strict=True):
            if not same and before != after:
                diff = difflib.unified_diff(before.splitlines(True), after.splitlines(True))
                print("".join(diff)[:3000])
    print(f"{len(STEPS)} commands, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
