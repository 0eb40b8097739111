"""The command explains itself: --help for the group and each subcommand, --version."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
import yaml

from sync import __version__

from .support.proxyharness import REPO, fleet_sync

COMMANDS = {
    "validate": ["--format [text|github|json]", "FILES"],
    "render": ["config.yaml fragment", "--output"],
    "plan": ["--detailed-exitcode", "--out", "--github-comment", "--proxy-url", "--probe"],
    "apply": [
        "--plan",
        "--force",
        "--dry-run",
        "--confirm-timeout",
        "LITELLM_PROXY_API_KEY",
        "--require-healthy",
        "--verify",
        "--write-to [spread|first]",
    ],
    "drift": ["--github-issue", "--fix", "exit 2"],
    "set-host": ["--api-base", "--enable / --disable", "--add", "exit 1"],
    "propose": ["--automerge", "--apply-workflow", "--probe", "GITHUB_REF_NAME"],
    "import": ["--output", "--fleet", "--model", "model_groups"],
}


def test_group_help_lists_commands_and_exit_codes() -> None:
    run = fleet_sync(["--help"], dict(os.environ))
    assert run.code == 0
    for command in COMMANDS:
        assert command in run.out
    assert "4 apply incomplete" in run.out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_subcommand_help(command: str) -> None:
    run = fleet_sync([command, "--help"], dict(os.environ))
    assert run.code == 0
    for text in COMMANDS[command]:
        assert text in run.out, text


def test_version() -> None:
    run = fleet_sync(["--version"], dict(os.environ))
    assert run.code == 0 and run.out.strip() == f"fleet-sync, version {__version__}"


def test_pre_commit_hook_validates_the_files_it_is_given(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert re.search(hook["files"], "deploy/fleet.yaml") and hook["pass_filenames"] is True
    args = shlex.split(hook["entry"])[1:]  # after the fleet-sync program name
    broken = tmp_path / "fleet.yaml"
    broken.write_text("version: 1\nfleet: x\nmodels: {}\nhots: 1\n", encoding="utf-8")
    good = fleet_sync([*args, str(REPO / "fleet.yaml")], dict(os.environ))
    assert good.code == 0, good.err
    both = fleet_sync([*args, str(REPO / "fleet.yaml"), str(broken)], dict(os.environ))
    assert both.code == 1 and f"{broken}:4:1: top level: unknown key 'hots'" in both.out
