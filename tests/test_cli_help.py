"""The command explains itself: --help for the group and each subcommand, --version."""

from __future__ import annotations

import os

import pytest

from sync import __version__

from .proxyharness import fleet_sync

COMMANDS = {
    "validate": ["--format [text|github|json]", "FILES"],
    "render": ["config.yaml fragment", "--output"],
    "plan": ["--detailed-exitcode", "--out", "--github-comment", "--proxy-url"],
    "apply": ["--plan", "--force", "--dry-run", "--confirm-timeout", "LITELLM_PROXY_API_KEY"],
    "drift": ["--github-issue", "--fix", "exit 2"],
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
