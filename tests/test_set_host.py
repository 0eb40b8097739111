"""set-host on a corpus of fleet files (comments, anchors and aliases, flow style, quoting,
unusual indentation, no final newline; each also as CRLF and with a BOM): the output is compared
byte for byte with a reviewed expected file, so any byte outside the edited value that moved
fails the test. Edits that cannot be made without touching other values, and results that would
be invalid, are refused with a located message and leave the file as it was."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sync.edit.writer import HostEdit, edit_host
from sync.fleet.problems import FleetError

from .support.proxyharness import fleet_sync

CASES_DIR = Path(__file__).parent / "cases" / "set_host"
EXPECTED = CASES_DIR / "expected"

# (case id, corpus file, edit): tests/cases/set_host/expected/<case id>.yaml is the result.
EDITS: list[tuple[str, str, HostEdit]] = [
    (
        "comments-move",
        "comments.yaml",
        HostEdit("qwen3.8-27b", "runpod-a", "http://10.9.0.1:8000/v1"),
    ),
    ("comments-enable", "comments.yaml", HostEdit("qwen3.8-27b", "runpod-b", enabled=True)),
    ("comments-disable", "comments.yaml", HostEdit("llama4-scout", "runpod-c", enabled=False)),
    (
        "comments-add",
        "comments.yaml",
        HostEdit("llama4-scout", "runpod-e", "https://xyz-8000.proxy.runpod.net/v1", add=True),
    ),
    ("anchors-tagged-value", "anchors.yaml", HostEdit("qwen", "b", "http://10.9.0.2:8000/v1")),
    (
        "anchors-drain-beside-shared-value",
        "anchors.yaml",
        HostEdit("qwen-shadow", "c", enabled=False),
    ),
    (
        "anchors-unused-anchor",
        "anchors.yaml",
        HostEdit("qwen-solo", "e", "http://10.9.0.0:8000/v1"),
    ),
    ("flow-move-plain", "flow.yaml", HostEdit("small", "b", "http://10.9.0.3:8000/v1")),
    (
        "flow-move-and-drain",
        "flow.yaml",
        HostEdit("small", "a", "http://10.9.0.4:8000/v1", enabled=False),
    ),
    ("flow-add", "flow.yaml", HostEdit("small", "c", "http://10.9.0.5:8000/v1", add=True)),
    ("flow-add-to-empty", "flow.yaml", HostEdit("empty", "e", "http://10.9.0.6:8000/v1", add=True)),
    ("flow-item-add", "flow.yaml", HostEdit("mixed", "y", "http://10.9.0.7:8000/v1", add=True)),
    ("quoted-single", "quoted.yaml", HostEdit("q-model", "single", "http://10.9.0.8:8000/it's")),
    ("quoted-double", "quoted.yaml", HostEdit("q-model", "double", 'http://10.9.0.9:8000/a"b')),
    ("quoted-multiline", "quoted.yaml", HostEdit("q-model", "multi", "http://10.9.1.0:8000/v1")),
    ("quoted-add", "quoted.yaml", HostEdit("q-model", "new", "http://10.9.1.1:8000/v1", add=True)),
    ("indent-move", "indentation.yaml", HostEdit("wide", "w1", "http://10.9.1.2:8000/v1")),
    ("indent-disable-nested", "indentation.yaml", HostEdit("wide", "w2", enabled=False)),
    (
        "indent-add-drained",
        "indentation.yaml",
        HostEdit("narrow", "n2", "http://10.9.1.3:8000/v1", enabled=False, add=True),
    ),
    ("no-newline-move", "no-final-newline.yaml", HostEdit("m", "last", "http://10.9.1.4:8000/v1")),
    (
        "no-newline-add",
        "no-final-newline.yaml",
        HostEdit("m", "next", "http://10.9.1.5:8000/v1", add=True),
    ),
]

# (corpus file, edit, where the message points, what it says): refused, nothing changes.
REFUSALS: list[tuple[str, HostEdit, str, str]] = [
    (
        "anchors.yaml",
        HostEdit("qwen-mirror", "d", "http://10.9.2.1:8000/v1"),
        "25:9",
        "shared through &shared (line 20) by 2 places",
    ),
    (
        "anchors.yaml",
        HostEdit("qwen", "a", "http://10.9.2.2:8000/v1"),
        "10:9",
        "models.qwen.hosts[0] is shared through &primary",
    ),
    (
        "comments.yaml",
        HostEdit("qwen3.9", "runpod-a", "http://10.9.2.3:8000/v1"),
        "11:1",
        "model 'qwen3.9' not found in models (did you mean 'qwen3.8-27b'?)",
    ),
    (
        "comments.yaml",
        HostEdit("qwen3.8-27b", "runpod-z", "http://10.9.2.4:8000/v1"),
        "16:5",
        "host 'runpod-z' not found (hosts: 'runpod-a', 'runpod-b'); pass --add to add it",
    ),
    (
        "comments.yaml",
        HostEdit("qwen3.8-27b", "runpod-a", "https://abc123-8000.proxy.runpod.net/v1"),
        "21:19",
        "after the edit: models.qwen3.8-27b.hosts[1].api_base: same address as hosts[0]",
    ),
    (
        "comments.yaml",
        HostEdit("qwen3.8-27b", "bad$(touch x)", "http://10.9.2.5:8000/v1", add=True),
        "24:15",
        "host name 'bad$(touch x)' must be letters, digits",
    ),
]


def variants(text: str) -> dict[str, tuple[str, bool]]:
    """The same document as written (LF), with CRLF line ends, and with CRLF plus a BOM."""
    crlf = text.replace("\n", "\r\n")
    return {"lf": (text, False), "crlf": (crlf, False), "crlf-bom": (crlf, True)}


@pytest.mark.parametrize(("case", "name", "edit"), EDITS, ids=[c[0] for c in EDITS])
def test_only_the_edited_value_changes(case: str, name: str, edit: HostEdit) -> None:
    source = (CASES_DIR / name).read_bytes().decode("utf-8")
    expected = (EXPECTED / f"{case}.yaml").read_bytes().decode("utf-8")
    assert source != expected
    for label, (text, _) in variants(source).items():
        want = expected.replace("\n", "\r\n") if label != "lf" else expected
        assert edit_host(text, edit, name).text == want, label


@pytest.mark.parametrize(("case", "name", "edit"), EDITS, ids=[c[0] for c in EDITS])
def test_an_edit_applied_twice_changes_nothing_more(case: str, name: str, edit: HostEdit) -> None:
    expected = (EXPECTED / f"{case}.yaml").read_text(encoding="utf-8")
    again = edit_host(expected, HostEdit(edit.model, edit.host, edit.api_base, edit.enabled), name)
    assert again.text == expected
    assert again.summary == ()


@pytest.mark.parametrize(("name", "edit", "at", "message"), REFUSALS)
def test_refused_edits_say_where_and_why(name: str, edit: HostEdit, at: str, message: str) -> None:
    text = (CASES_DIR / name).read_text(encoding="utf-8")
    with pytest.raises(FleetError) as caught:
        edit_host(text, edit, name)
    shown = "\n".join(str(p) for p in caught.value.problems)
    assert message in shown
    assert f"{name}:{at}:" in shown


def test_bad_address_is_refused_before_the_file_is_read() -> None:
    for address, reason in [
        ('http://x"; rm -rf /tmp/pwned; "', "contains whitespace"),
        ("http://user:secret@10.0.0.1/v1", "credentials in the address are refused"),
        ("ftp://10.0.0.1/v1", "must start with http:// or https://"),
        ("http://10.0.0.1:99999/v1", "outside 1-65535"),
    ]:
        with pytest.raises(ValueError, match="--api-base: ") as caught:
            edit_host("not even yaml: [", HostEdit("m", "h", address), "fleet.yaml")
        assert reason in str(caught.value)
        assert "secret" not in str(caught.value)


def test_an_address_with_invisible_or_control_characters_is_refused_and_named() -> None:
    """Found by the outside attack: a payload api_base carrying ESC ... BEL passed set-host and
    its summary line wrote it raw to the log (a terminal title, the PR title). Refused, with
    the character named and the address escaped."""
    for address, named in [
        ("http://127.0.0.1:2/v1\x1b]0;pwned\x07", "U+001B at position 22"),
        ("http://a\u00ad.example/v1", "U+00AD SOFT HYPHEN"),
        ("http://10.0.0.1/\u202ev1", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("http://10.0.0.1/v1\udcff", "U+DCFF"),  # an argument's invalid UTF-8 byte
    ]:
        with pytest.raises(ValueError, match="--api-base: ") as caught:
            edit_host("not even yaml: [", HostEdit("m", "h", address), "fleet.yaml")
        assert named in str(caught.value) and str(caught.value).isprintable()


def test_the_summary_shows_an_old_address_escaped(tmp_path: Path) -> None:
    """The address being replaced comes from the file, where a YAML escape can hold anything:
    the summary line shows it escaped, never raw."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "version: 1\nfleet: x\nmodels:\n  m:\n    served_model: a/b\n    hosts:\n"
        '      - name: a\n        api_base: "http://127.0.0.1:1/v1\\e]0;x\\a"\n',
        encoding="utf-8",
    )
    run = fleet_sync(
        ["set-host", "m", "a", "--api-base", "http://127.0.0.1:2/v1", "-f", str(fleet)], cli_env()
    )
    assert run.code == 0, run.err
    assert run.err == (
        "models.m.hosts[0].api_base: 'http://127.0.0.1:1/v1\\x1b]0;x\\x07' -> "
        "http://127.0.0.1:2/v1\n"
    )


# -- the command ---------------------------------------------------------------------------


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("label", ["lf", "crlf", "crlf-bom"])
def test_command_writes_the_file_in_place_and_prints_the_diff(tmp_path: Path, label: str) -> None:
    text, bom = variants((CASES_DIR / "comments.yaml").read_text(encoding="utf-8"))[label]
    fleet = tmp_path / "fleet.yaml"
    fleet.write_bytes(("\ufeff" if bom else "").encode() + text.encode())
    fleet.chmod(0o640)
    run = fleet_sync(
        [
            "set-host",
            "qwen3.8-27b",
            "runpod-a",
            "--api-base",
            "http://10.9.0.1:8000/v1",
            "-f",
            str(fleet),
        ],
        cli_env(),
    )
    assert run.code == 0, run.err
    expected = (EXPECTED / "comments-move.yaml").read_text(encoding="utf-8")
    if label != "lf":
        expected = expected.replace("\n", "\r\n")
    assert fleet.read_bytes() == ("\ufeff" if bom else "").encode() + expected.encode()
    assert fleet.stat().st_mode & 0o777 == 0o640
    changed = [
        line for line in run.out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert [line.rstrip("\r") for line in changed] == [
        "-        api_base: http://103.196.86.105:17140/v1   # current pod",
        "+        api_base: http://10.9.0.1:8000/v1   # current pod",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yaml"]  # no temp file left


def test_command_refusals_exit_1_and_leave_the_file_alone(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    original = (CASES_DIR / "anchors.yaml").read_bytes()
    fleet.write_bytes(original)
    for args, message in [
        (["qwen-mirror", "d", "--api-base", "http://10.9.2.1:8000/v1"], "shared through &shared"),
        (["nope", "d", "--api-base", "http://10.9.2.1:8000/v1"], "model 'nope' not found"),
        (["qwen", "b", "--api-base", "http://10.9.2.1:8000/v1?token=abc"], "query or fragment"),
        (["qwen", "b"], "nothing to change"),
        (["qwen", "zz", "--add", "--disable"], "--add needs --api-base"),
    ]:
        run = fleet_sync(["set-host", *args, "-f", str(fleet)], cli_env())
        assert run.code == 1, (args, run.out, run.err)
        assert message in run.err
        assert "was not changed" in run.err or "nothing to change" in run.err
        assert "abc" not in run.err
        assert run.out == ""
        assert fleet.read_bytes() == original


def test_command_without_a_change_says_so(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    original = (CASES_DIR / "comments.yaml").read_bytes()
    fleet.write_bytes(original)
    run = fleet_sync(
        [
            "set-host",
            "qwen3.8-27b",
            "runpod-a",
            "--api-base",
            "http://103.196.86.105:17140/v1",
            "--enable",
            "-f",
            str(fleet),
        ],
        cli_env(),
    )
    assert run.code == 0, run.err
    assert "no change" in run.out
    assert fleet.read_bytes() == original
