"""An exception fleet-sync did not expect (a bug) is one scrubbed line and exit 1, never a
traceback printed past the final scrub: main() ends the scrub session before Python would
print one, so run() catches it (sync/commands/main.py). FLEET_SYNC_DEBUG=1 adds the traceback,
scrubbed like every output."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from sync.commands import main as cli
from sync.run.console import EXIT_ERROR
from sync.secrets import scrub

from .support.proxyharness import crashed

SECRET = "sk-internal-0123456789abcdef"


@pytest.fixture
def failing() -> Iterator[str]:
    """A command that fails as a bug would: an exception no part of fleet-sync handles."""

    @click.command(name="explode")
    def explode() -> None:
        raise OverflowError(f"timestamp too large {SECRET}\n::warning::injected")

    cli.cli.add_command(explode)
    try:
        yield "explode"
    finally:
        cli.cli.commands.pop("explode")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with scrub.session({"LITELLM_PROXY_API_KEY": SECRET}):
        code = cli.run(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_bug_is_one_scrubbed_line(
    failing: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLEET_SYNC_DEBUG", raising=False)
    code, out = run([failing], capsys)
    assert code == EXIT_ERROR
    assert out.count("\n") == 1 and "Traceback" not in out
    assert out.startswith("error: internal error (OverflowError): timestamp too large ***")
    assert "run with FLEET_SYNC_DEBUG=1 for the traceback" in out
    assert SECRET not in out and "\n::warning" not in out
    assert crashed(out)  # and the test helpers count it as a crash


def test_the_traceback_when_asked_for_is_scrubbed_too(
    failing: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_SYNC_DEBUG", "1")
    code, out = run([failing], capsys)
    assert code == EXIT_ERROR
    assert "Traceback (most recent call last)" in out and "in explode" in out
    assert SECRET not in out
    assert all(not line.lstrip().startswith("::") for line in out.splitlines())
