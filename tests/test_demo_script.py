"""scripts/demo on a newcomer's machine: no local harness, no proxy configured."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .support.proxyharness import REPO


def test_demo_without_a_proxy_says_what_to_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
    env["LITELLM_HARNESS_DIR"] = str(tmp_path / "no-harness-here")
    run = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 1
    assert "docker compose up -d" in run.stderr
    assert "LITELLM_PROXY_URL=http://127.0.0.1:4000" in run.stderr
    assert "No such file" not in run.stderr and run.stdout == ""
