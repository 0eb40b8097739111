"""The layers of sync/ are enforced, not described: import-linter's contracts (pyproject.toml,
[tool.importlinter]) hold for the package, and they bite — a copy of the package with one
forbidden import added breaks the contract that forbids it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = [str(Path(sys.executable).with_name("lint-imports"))]  # installed with the dev extras


def lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LINT, "--config", str(cwd / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_package_keeps_every_contract() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("core/plan.py", "import sync.live.client", "Parts import only parts below them"),
        ("github/comment.py", "import sync.live.answers", "Parts import only parts below them"),
        ("fleet/model.py", "import sync.core.render", "Parts import only parts below them"),
        ("github/comment.py", "import sync.core.render", "GitHub's edge knows nothing"),
        ("edit/writer.py", "import sync.untrusted.json_parser", "without network bytes"),
        ("core/compare.py", "import click", "Only commands import click"),
        ("report/text.py", "import httpx", "Only live, github and untrusted speak HTTP"),
        ("live/probe.py", "import git", "Only gitops runs git"),
        ("run/apply.py", "import click", "Only commands import click"),
        ("run/plan.py", "import httpx", "A run and the commands send no request of their own"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    shutil.copytree(ROOT / "sync", tmp_path / "sync", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "sync" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    done = lint(tmp_path)
    assert done.returncode != 0, done.stdout
    broken = done.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, done.stdout
