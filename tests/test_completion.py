"""Shell completion (click's recipe: eval "$(_FLEET_SYNC_COMPLETE=bash_source fleet-sync)", and
zsh_source, fish_source) through the final scrub: click writes the script and its answers as
bytes, which the scrubbed stdout takes, masks and passes on as written (fish's tab included)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.shell_completion import get_completion_class

from sync.commands.main import cli
from sync.secrets import scrub

from .support.proxyharness import fleet_sync

SHELLS = ("bash", "zsh", "fish")
SECRET = "sk-completion-0123456789abcdef"


def completing(shell: str, instruction: str, **words: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    return {**env, "_FLEET_SYNC_COMPLETE": f"{shell}_{instruction}", **words}


@pytest.mark.parametrize("shell", SHELLS)
def test_the_completion_script_is_clicks_own(shell: str) -> None:
    done = fleet_sync([], completing(shell, "source"))
    assert done.code == 0, done.err
    assert done.err == ""
    comp = get_completion_class(shell)
    assert comp is not None
    assert done.out == comp(cli, {}, "fleet-sync", "_FLEET_SYNC_COMPLETE").source()
    assert "_FLEET_SYNC_COMPLETE" in done.out


# click's documented protocol: COMP_WORDS is the line, COMP_CWORD the index of the word being
# completed (fish: the word itself). Each answer holds the candidates in the shell's format.
@pytest.mark.parametrize(
    ("shell", "cword", "answer"),
    [
        ("bash", "1", "plain,plan\n"),
        ("zsh", "1", "plain\nplan\n"),
        ("fish", "pl", "plain,plan\t"),
    ],
)
def test_a_command_completes(shell: str, cword: str, answer: str) -> None:
    done = fleet_sync(
        [], completing(shell, "complete", COMP_WORDS="fleet-sync pl", COMP_CWORD=cword)
    )
    assert done.code == 0, done.err
    assert answer in done.out, done.out
    assert "validate" not in done.out  # only what starts with "pl"


@pytest.mark.parametrize(("shell", "cword"), [("bash", "2"), ("zsh", "2"), ("fish", "--det")])
def test_an_option_completes(shell: str, cword: str) -> None:
    words = {"COMP_WORDS": "fleet-sync plan --det", "COMP_CWORD": cword}
    done = fleet_sync([], completing(shell, "complete", **words))
    assert done.code == 0, done.err
    assert "--detailed-exitcode" in done.out, done.out
    if shell == "fish":  # value, a tab, its help: the tab is fish's separator, kept as written
        assert "plain,--detailed-exitcode\tExit 2 when there are changes." in done.out


def test_bash_completes_through_the_script(tmp_path: Path) -> None:
    """The recipe end to end in a real bash: the script eval'ed, the shell's function asked."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "fleet-sync").exists():
        pytest.skip(f"no fleet-sync script beside {sys.executable} (not installed with pip -e)")
    bash = shutil.which("bash")
    assert bash is not None, "bash is needed for this test"
    line = (
        'eval "$(_FLEET_SYNC_COMPLETE=bash_source fleet-sync)"; '
        "COMP_WORDS=(fleet-sync plan --form); COMP_CWORD=2; "
        '_fleet_sync_completion fleet-sync; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [bash, "-c", line], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["--format"], done.stdout + done.stderr


def test_bytes_written_are_scrubbed_like_text() -> None:
    """The binary side of the scrubbed stdout masks secrets (even split over two writes),
    escapes controls and keeps characters split between writes whole."""
    inner = io.StringIO()
    stream = scrub.ScrubbedStream(inner, scrub.Scrubber([SECRET]))
    half = len(SECRET) // 2
    stream.buffer.write(f"key {SECRET[:half]}".encode())
    stream.buffer.write(f"{SECRET[half:]} é\x1b[2J\n".encode()[:-6])
    stream.buffer.write(f"{SECRET[half:]} é\x1b[2J\n".encode()[-6:])
    stream.finish()
    assert inner.getvalue() == f"key {scrub.MASK} é\\u001b[2J\n"


def test_completion_keeps_tabs_and_masks_secrets() -> None:
    """In a completion session the tab passes (fish's separator), a secret never does."""
    inner = io.StringIO()
    stream = scrub.ScrubbedStream(inner, scrub.Scrubber([SECRET]), scrub.COMPLETION_SEPARATORS)
    stream.buffer.write(f"plain,--x\thelp {SECRET}\x07\n".encode())
    stream.finish()
    assert inner.getvalue() == f"plain,--x\thelp {scrub.MASK}\\u0007\n"
