"""One version, said the same everywhere a user reads it."""

from __future__ import annotations

import re
import tomllib

from sync import __version__

from .support.proxyharness import REPO


def test_the_version_has_one_source_and_every_mention_follows_it() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "sync.__version__"}
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    (latest, *_) = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.MULTILINE)
    assert latest == __version__
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert f"rev: v{__version__}" in hooks
    major = __version__.split(".")[0]
    examples = REPO / "examples" / "config-repo"
    workflows = [*examples.glob(".github/workflows/*.yml")]
    workflows += examples.glob("two-targets/.github/workflows/*.yml")
    assert len(workflows) == 7
    for workflow in workflows:
        assert f"fleet-sync-dev/fleet-sync@v{major}\n" in workflow.read_text(encoding="utf-8")
