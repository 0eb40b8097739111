"""`fleet-sync validate` on bad fleet files: every problem found, located and worded exactly.

The corpus is data: each tests/cases/invalid/*.yaml opens with `# expect: LINE:COL: message`
lines (the complete set of problems the file must produce) and, where the file holds a
plaintext credential, `# secret: VALUE` lines (text that must never appear in any output).
Inputs that cannot be committed as small text files (huge, binary, alias bombs, missing paths)
are generated here instead.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sync.commands.main import main
from sync.core.render import render
from sync.fleet.model import address_problem, load_fleet, schema
from sync.fleet.problems import FleetError, Problem
from sync.secrets.credentials import written_out

from .support.proxyharness import crashed
from .test_credentials import MUST_PASS

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases" / "invalid"
CORPUS = sorted(CASES.glob("*.yaml"))
EXAMPLE = ROOT / "fleet.yaml"
EXPECT = "# expect: "
SECRET = "# secret: "
# A sample run through a real `fleet-sync` process (the rest run in-process, faster).
CLI_SAMPLE = [
    p
    for p in CORPUS
    if p.name.split("-", 1)[1]
    in {
        "bad-indentation.yaml",
        "empty-file.yaml",
        "two-documents.yaml",
        "duplicate-key-nested.yaml",
        "credentials-in-address.yaml",
        "plaintext-api-key-defaults.yaml",
        "secret-in-litellm-params.yaml",
        "several-problems.yaml",
        "control-character.yaml",
        "token-in-api-base-path.yaml",
    }
]


@dataclass(frozen=True)
class Header:
    expected: frozenset[str]
    secrets: tuple[str, ...]


def header(path: Path) -> Header:
    """The leading comment lines of a corpus file: expected problems and secrets."""
    expected: list[str] = []
    secrets: list[str] = []
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        if line.startswith(EXPECT):
            expected.append(line.removeprefix(EXPECT))
        elif line.startswith(SECRET):
            secrets.append(line.removeprefix(SECRET))
        else:
            break
    assert len(set(expected)) == len(expected), f"{path.name}: an expect line is repeated"
    return Header(frozenset(expected), tuple(secrets))


def located(problems: Sequence[Problem]) -> list[str]:
    return [f"{p.line}:{p.col}: {p.message}" for p in problems]


def problems_of(path: Path, display: str) -> tuple[Problem, ...]:
    with pytest.raises(FleetError) as caught:
        load_fleet(path, display)
    return caught.value.problems


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def cli_in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> Run:
    capsys.readouterr()
    with pytest.raises(SystemExit) as caught:
        main(args)
    captured = capsys.readouterr()
    code = caught.value.code
    return Run(code if isinstance(code, int) else 1, captured.out, captured.err)


def fleet_sync_command() -> list[str]:
    script = Path(sys.executable).with_name("fleet-sync")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sync"]


def cli_subprocess(args: list[str]) -> Run:
    # The timeout only guards against a hang; it asserts nothing about speed.
    done = subprocess.run(
        [*fleet_sync_command(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def text_problems(run: Run, file: str) -> list[str]:
    """`file:LINE:COL: message` lines of stdout, with the file prefix checked and removed."""
    lines = run.out.splitlines()
    prefix = f"{file}:"
    assert all(line.startswith(prefix) for line in lines), run.out
    return [line.removeprefix(prefix) for line in lines]


def assert_clean_failure(run: Run, secrets: Sequence[str] = ()) -> None:
    assert run.code == 1, (run.code, run.out, run.err)
    assert not crashed(run.out + run.err)
    for secret in secrets:
        assert secret not in run.out + run.err


# --- the corpus -------------------------------------------------------------------------------


def test_corpus_is_complete() -> None:
    assert len(CORPUS) >= 35
    for path in CORPUS:
        assert re.fullmatch(r"\d\d-[a-z0-9-]+\.yaml", path.name), path.name
        assert header(path).expected, f"{path.name} has no '# expect:' line"
    assert len(CLI_SAMPLE) == 10


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_load_fleet(path: Path) -> None:
    head = header(path)
    problems = problems_of(path, path.name)
    got = located(problems)
    assert set(got) == head.expected
    assert len(got) == len(head.expected), "a problem is reported twice"
    assert {p.file for p in problems} == {path.name}
    for secret in head.secrets:
        assert all(secret not in p.message for p in problems), secret


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_cli(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = header(path)
    run = cli_in_process(["validate", "-f", str(path)], capsys)
    assert_clean_failure(run, head.secrets)
    assert set(text_problems(run, str(path))) == head.expected
    assert f"{len(head.expected)} problem(s)" in run.err


@pytest.mark.parametrize("path", CLI_SAMPLE, ids=[p.name for p in CLI_SAMPLE])
def test_corpus_cli_subprocess(path: Path) -> None:
    head = header(path)
    relative = str(path.relative_to(ROOT))
    run = cli_subprocess(["validate", "-f", relative])
    assert_clean_failure(run, head.secrets)
    assert set(text_problems(run, relative)) == head.expected


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_render_refuses(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """render reads the same file the same way: the same problems, nothing rendered."""
    head = header(path)
    run = cli_in_process(["render", "-f", str(path)], capsys)
    assert_clean_failure(run, head.secrets)
    assert run.out == ""
    prefix = f"{path}:"
    reported = {
        line.removeprefix(prefix)
        for line in run.err.splitlines()
        if re.match(rf"{re.escape(prefix)}\d+:\d+: ", line)
    }
    assert reported == head.expected


# --- generated inputs -------------------------------------------------------------------------

SMALL_FLEET = """\
version: 1
fleet: gpu-fleet
models:
  qwen3-8b:
    served_model: Qwen/Qwen3-8B
    hosts:
      - name: runpod-a
        api_base: http://103.196.86.105:17140/v1
"""


def alias_bomb() -> str:
    """Billion laughs: 9 levels of 10 aliases each, 10**9 strings if expanded."""
    lines = [SMALL_FLEET.rstrip("\n"), "    model_info:", '      l0: &l0 ["lol", "lol"]']
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"      l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Generated:
    name: str
    line: int
    col: int
    message: str  # a regular expression the whole message must match


def make_input(name: str, tmp_path: Path) -> Path:
    rng = random.Random(20240601)
    path = tmp_path / "fleet.yaml"
    if name == "larger-than-5mb":
        padding = "# " + "x" * 97 + "\n"
        path.write_text(SMALL_FLEET + padding * 55_000, encoding="utf-8")
        assert path.stat().st_size > 5 * 1024 * 1024
    elif name == "alias-bomb":
        path.write_text(alias_bomb(), encoding="utf-8")
    elif name == "binary-with-nuls":
        # Valid UTF-8 (bytes below 0x80): NULs, then random bytes with more control characters.
        junk = bytes(rng.randrange(0, 0x80) for _ in range(4096))
        path.write_bytes(b"version: 1\nfleet: gpu-fleet\n  \0\0\0\0" + junk)
    elif name == "invalid-utf8":
        junk = bytes(rng.randrange(0x80, 0x100) for _ in range(4096))
        path.write_bytes(b"version: 1\nfleet: gpu-\n" + junk)
    elif name == "utf16":
        path.write_bytes(SMALL_FLEET.encode("utf-16"))
    elif name == "route-too-large":
        # 2 KiB in defaults, 31 KiB on the host: 33 KiB of JSON for that route (32 KiB allowed).
        note = "x" * 2048
        text = SMALL_FLEET.replace("models:", f"defaults:\n  model_info: {{note: {note}}}\nmodels:")
        path.write_text(text + f"        model_info: {{big: {'y' * 31 * 1024}}}\n", "utf-8")
    elif name == "zero-bytes":
        path.write_bytes(b"")
    elif name == "missing-file":
        path = tmp_path / "no-such-fleet.yaml"
    elif name == "directory":
        path = tmp_path
    else:
        raise AssertionError(name)
    return path


GENERATED = [
    Generated("larger-than-5mb", 1, 1, r"file is 5,\d{3},\d{3} bytes; the limit is 4,194,304"),
    Generated(
        "alias-bomb",
        0,  # somewhere inside the aliases: checked below
        0,
        r"document expands to more than 200000 nodes \(alias bomb\?\); "
        r"write the values out instead of nesting aliases",
    ),
    Generated(
        "binary-with-nuls",
        3,
        3,
        r"invalid YAML: control character U\+0000 is not allowed; is this a YAML file\?",
    ),
    Generated(
        "invalid-utf8", 3, 1, r"not UTF-8 text \(byte 0x[89a-f][0-9a-f]\); is this a YAML file\?"
    ),
    Generated("utf16", 1, 1, r"not UTF-8 text \(byte 0xff\); is this a YAML file\?"),
    Generated(
        "route-too-large",
        9,
        9,
        r"models\.qwen3-8b\.hosts\[0\]: its route's litellm_params and model_info come to "
        r"33,\d{3} bytes of JSON; at most 32,768 \(fleet-sync reads the proxy's routes 200 to a "
        r"page, at most 16 MiB a page, and a larger route would make every read of the proxy "
        r"fail\)",
    ),
    Generated("zero-bytes", 1, 1, r"file is empty; expected version, fleet and models"),
    Generated("missing-file", 1, 1, r"file not found"),
    Generated("directory", 1, 1, r"is a directory, not a fleet file"),
]


def check_generated(case: Generated, problems: Sequence[Problem]) -> None:
    assert len(problems) == 1, problems
    (problem,) = problems
    assert re.fullmatch(case.message, problem.message), problem.message
    if case.name == "alias-bomb":
        assert 9 <= problem.line <= 19 and problem.col > 1, problem
    else:
        assert (problem.line, problem.col) == (case.line, case.col), problem


@pytest.mark.parametrize("case", GENERATED, ids=[c.name for c in GENERATED])
def test_generated_load_fleet(case: Generated, tmp_path: Path) -> None:
    path = make_input(case.name, tmp_path)
    check_generated(case, problems_of(path, "fleet.yaml"))


@pytest.mark.parametrize("case", GENERATED, ids=[c.name for c in GENERATED])
def test_generated_cli(case: Generated, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_input(case.name, tmp_path)
    run = cli_in_process(["validate", "-f", str(path), "--format", "json"], capsys)
    assert_clean_failure(run)
    body = json.loads(run.out)
    assert body["valid"] is False
    problems = [Problem(**p) for p in body["problems"]]
    assert {p.file for p in problems} == {str(path)}
    check_generated(case, problems)


@pytest.mark.parametrize("name", ["alias-bomb", "larger-than-5mb", "binary-with-nuls"])
def test_generated_cli_subprocess(name: str, tmp_path: Path) -> None:
    """A real process ends (no hang, no memory blow-up) with one located message."""
    path = make_input(name, tmp_path)
    run = cli_subprocess(["validate", "-f", str(path)])
    assert_clean_failure(run)
    (line,) = run.out.splitlines()
    assert re.fullmatch(rf"{re.escape(str(path))}:\d+:\d+: .+", line), line


# --- output formats ---------------------------------------------------------------------------

SEVERAL = CASES / "50-several-problems.yaml"


def test_several_problems_in_one_run() -> None:
    assert len(header(SEVERAL).expected) >= 5


def test_format_github(capsys: pytest.CaptureFixture[str]) -> None:
    head = header(SEVERAL)
    run = cli_in_process(["validate", "-f", str(SEVERAL), "--format", "github"], capsys)
    assert_clean_failure(run, head.secrets)
    annotation = re.compile(
        r"::error file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+)::(?P<msg>.+)"
    )
    got = set()
    for line in run.out.splitlines():
        match = annotation.fullmatch(line)
        assert match, line
        assert match["file"] == str(SEVERAL)
        got.add(f"{match['line']}:{match['col']}: {match['msg']}")
    assert got == head.expected


def test_format_github_escapes_file_property(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a,b:c.yaml"
    path.write_text("version: 2\n", encoding="utf-8")
    run = cli_in_process(["validate", "-f", str(path), "--format", "github"], capsys)
    assert_clean_failure(run)
    escaped = str(path).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    for line in run.out.splitlines():
        assert line.startswith(f"::error file={escaped},line="), line


def test_format_json(capsys: pytest.CaptureFixture[str]) -> None:
    head = header(SEVERAL)
    run = cli_in_process(["validate", "-f", str(SEVERAL), "--format", "json"], capsys)
    assert_clean_failure(run, head.secrets)
    body = json.loads(run.out)
    assert set(body) == {"valid", "problems"}
    assert body["valid"] is False
    for problem in body["problems"]:
        assert set(problem) == {"file", "line", "col", "message"}
        assert problem["file"] == str(SEVERAL)
    got = {f"{p['line']}:{p['col']}: {p['message']}" for p in body["problems"]}
    assert got == head.expected


# --- the example ------------------------------------------------------------------------------


def test_example_fleet_is_valid() -> None:
    """The example at the repository root is what users copy: it must stay valid."""
    run = cli_subprocess(["validate", "-f", "fleet.yaml"])
    assert run.code == 0, run.out + run.err
    assert re.fullmatch(
        r"fleet\.yaml: valid \(fleet [a-z0-9-]+: \d+ models, \d+ routes"
        r"(, \d+ drained host\(s\) paused)?\)\n",
        run.out,
    )
    assert run.err == ""
    fleet = load_fleet(EXAMPLE)
    assert fleet.models and render(fleet)


def test_example_fleet_json(capsys: pytest.CaptureFixture[str]) -> None:
    run = cli_in_process(["validate", "-f", str(EXAMPLE), "--format", "json"], capsys)
    assert run.code == 0, run.out + run.err
    body = json.loads(run.out)
    assert body["valid"] is True and body["problems"] == []


def test_example_fleet_breaks_are_caught(tmp_path: Path) -> None:
    """The check above has teeth: the same example with one typo is refused, located."""
    broken = tmp_path / "fleet.yaml"
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "    served_model:" in text
    broken.write_text(text.replace("    served_model:", "    served_modle:", 1), encoding="utf-8")
    run = cli_subprocess(["validate", "-f", str(broken)])
    assert_clean_failure(run)
    assert "unknown key 'served_modle' (did you mean 'served_model'?)" in run.out


# --- credentials by shape: what must pass -----------------------------------------------------


def lookalikes_fleet() -> dict[str, Any]:
    """A fleet holding every value that must not be taken for a credential (the table in
    tests/test_credentials.py) in every place validate looks: model_info and litellm_params
    strings at any depth, served_model, api_base, host and model names, source."""

    def fits(definition: str, value: str) -> bool:
        return re.fullmatch(schema()["$defs"][definition]["pattern"][1:-7], value) is not None

    host_pattern = schema()["$defs"]["host"]["properties"]["name"]["pattern"][1:-7]
    source_pattern = schema()["properties"]["source"]["pattern"][1:-7]
    addresses = [v for v in MUST_PASS if re.fullmatch(r"https?://[^?#\s@]+", v)]
    names = [v for v in MUST_PASS if re.fullmatch(host_pattern, v)]
    models: dict[str, Any] = {}
    for index, name in enumerate(v for v in MUST_PASS if fits("model_name", v)):
        models[name] = {
            "served_model": MUST_PASS[index],
            "litellm_params": {
                "organization": MUST_PASS[-index - 1],
                # References pass only at the top level (LiteLLM resolves none below it).
                "extra_body": {"x": [v for v in MUST_PASS if not v.startswith("os.environ/")]},
            },
            # As keys too, but those the key-name rules read as secret (Password reset...).
            "model_info": {
                "notes": MUST_PASS,
                "by": {v: v for v in MUST_PASS if not written_out(v, v)},
            },
            "hosts": [
                {"name": names[index % len(names)], "api_base": addresses[index % len(addresses)]}
            ],
        }
    source = next(v for v in MUST_PASS if re.fullmatch(source_pattern, v) and "/" in v)
    return {"version": 1, "fleet": "gpu-fleet", "source": source, "models": models}


def test_values_that_only_resemble_credentials_pass(tmp_path: Path) -> None:
    fleet = lookalikes_fleet()
    assert len(fleet["models"]) >= 10
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet, sort_keys=False), encoding="utf-8")
    loaded = load_fleet(path)
    assert len(loaded.models) == len(fleet["models"])


TOKEN = "sk-abcdef0123456789abcdef"


@pytest.mark.parametrize(
    "address",
    [
        f"ftp://10.0.0.1:8000/{TOKEN}/v1",
        f"http://10.0.0.1:8000/{TOKEN}/v1 ",
        f"http://10.0.0.1:80x0/{TOKEN}/v1",
        f"http:///{TOKEN}",
        f"http://10.0.0.1:8000/{TOKEN}/v1#frag",
        f"http://[::1/{TOKEN}",
    ],
)
def test_an_address_problem_never_quotes_a_credential(address: str) -> None:
    """set-host and import ask address_problem directly: it must not quote one either."""
    problem = address_problem(address)
    assert problem is not None and TOKEN not in problem, problem


@pytest.mark.parametrize(
    "pasted",
    [
        "GHMCS1UYUVJCSQQADZ7LJEN485HA4VPO",  # a RunPod key: credential-shaped
        "q3gQdooEKGQKcFpg938E4b6e",  # 24 random characters: too short for a shape
        "6fda865a-30a5-1a8e-cda0-434c44919d49",  # a vLLM --api-key
        "http://h:8000/v1 q3gQdooEKGQKcFpg938E4b6e",
    ],
)
def test_a_key_pasted_as_an_address_is_never_quoted(pasted: str) -> None:
    """A key pasted where the address goes is not an address, and the message saying so does
    not quote it (validate, set-host and import all ask address_problem)."""
    problem = address_problem(pasted)
    assert problem is not None and "q3gQdoo" not in problem and pasted not in problem, problem
    assert "(hidden: looks like a credential)" in problem


FALSE_POSITIVES = """\
version: 1
fleet: valtest
models:
  cf-gateway:
    served_model: Qwen/Qwen3-8B
    # (litellm_credential_name is no credential either, but validate refuses it for another
    # reason: the named credential may carry base_url; tests/cases/invalid/91-*.)
    litellm_params:
      extra_headers: {X-Trace-Token: request-id-from-gateway}
    hosts:
      - name: a
        api_base: https://gateway.ai.cloudflare.com/v1/0123456789abcdef0123456789abcdef/gw/openai
      - {name: r2, api_base: "https://e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6.r2.cloudflarestorage.com"}
  special-tokens:
    served_model: Qwen/Qwen3-8B
    model_info: {eos_token: "<|im_end|>", pad_token: "<|endoftext|>", auth_type: bearer}
    hosts:
      - {name: rk-3588-npu-node-01, api_base: "http://10.0.0.7:8000/v1"}
      - {name: sk-production-fleet, api_base: "http://10.0.0.8:8000/v1"}
"""


def test_what_the_attack_saw_refused_that_is_no_credential_passes(tmp_path: Path) -> None:
    """A Cloudflare AI Gateway (its account id: 32 hex in the path) and an R2 host, LiteLLM's
    own reference to its credential store, special tokens under *_token keys, and host names
    that start like a key: none is a credential."""
    path = tmp_path / "fleet.yaml"
    path.write_text(FALSE_POSITIVES, encoding="utf-8")
    fleet = load_fleet(path)
    assert [m.name for m in fleet.models] == ["cf-gateway", "special-tokens"]
