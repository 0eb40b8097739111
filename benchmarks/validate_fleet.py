"""How long validate and render take on a large fleet (default 100 models x 10 hosts = 1,000).

    .venv/bin/python benchmarks/validate_fleet.py [--models 100] [--hosts 10] [--runs 20]

Prints best and median wall time of load_fleet (read + parse + schema + semantic checks) and of
render, in-process, and of `fleet-sync validate` / `fleet-sync render` end to end (a new process
each run, so interpreter start-up and imports are included). Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sync.core.render import render, render_config
from sync.fleet.model import load_fleet


def fleet_text(models: int, hosts: int) -> str:
    lines = [
        "version: 1",
        "fleet: bench-fleet",
        "owns: tagged",
        "defaults:",
        "  provider: hosted_vllm",
        "  api_key: os.environ/VLLM_API_KEY",
        "  litellm_params: {timeout: 600}",
        "safety: {max_prune_percent: 30}",
        "models:",
    ]
    for m in range(models):
        lines += [
            f"  model-{m:03d}:",
            f"    served_model: org/Model-{m:03d}-8B",
            "    litellm_params: {rpm: 120}",
            "    model_info: {max_input_tokens: 131072}",
            "    hosts:",
        ]
        for h in range(hosts):
            lines += [
                f"      - name: host-{h:02d}",
                f"        api_base: http://10.{m // 250}.{m % 250}.{h + 1}:8000/v1",
            ]
            if h % 3 == 0:
                lines.append("        litellm_params: {weight: 2}")
            if h % 7 == 6:
                lines.append("        enabled: false")
    return "\n".join(lines) + "\n"


def timings(action: Callable[[], object], runs: int) -> list[float]:
    action()  # warm-up: schema load, imports
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        out.append(time.perf_counter() - start)
    return out


def fleet_sync_command() -> list[str]:
    script = Path(sys.executable).with_name("fleet-sync")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sync"]


def cli(args: list[str]) -> Callable[[], object]:
    def run() -> object:
        done = subprocess.run(
            [*fleet_sync_command(), *args], capture_output=True, check=False, timeout=300
        )
        if done.returncode != 0:
            raise SystemExit(f"fleet-sync {' '.join(args)} failed: {done.stderr.decode()}")
        return done

    return run


def report(label: str, values: list[float]) -> None:
    best, median = min(values), statistics.median(values)
    print(f"{label:<34} best {best * 1000:8.1f} ms   median {median * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cli-runs", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.yaml"
        path.write_text(fleet_text(args.models, args.hosts), encoding="utf-8")
        fleet = load_fleet(path)
        routes = render(fleet)
        hosts = sum(len(m.hosts) for m in fleet.models)
        size = path.stat().st_size
        print(
            f"fleet: {len(fleet.models)} models, {hosts} hosts, {len(routes)} routes "
            f"(enabled), {size:,} bytes; {args.runs} runs in-process, "
            f"{args.cli_runs} runs end to end; Python {sys.version.split()[0]}"
        )
        report("load_fleet", timings(lambda: load_fleet(path), args.runs))
        report("render", timings(lambda: render(fleet), args.runs))
        report("render_config (YAML text)", timings(lambda: render_config(routes), args.runs))
        report(
            "load_fleet + render + render_config",
            timings(lambda: render_config(render(load_fleet(path))), args.runs),
        )
        report(
            "CLI fleet-sync validate", timings(cli(["validate", "-f", str(path)]), args.cli_runs)
        )
        report("CLI fleet-sync render", timings(cli(["render", "-f", str(path)]), args.cli_runs))
        report("CLI fleet-sync --version", timings(cli(["--version"]), args.cli_runs))


if __name__ == "__main__":
    main()
