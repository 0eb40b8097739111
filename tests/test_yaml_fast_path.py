"""fleet.yaml is composed by libyaml when PyYAML has it; the result (data, line marks, problems,
error wording) must be exactly what the pure-Python composer gives, for every file we know."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from benchmarks.synthetic import fleet_text
from sync.fleet import yamlmarks
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import YamlDoc, parse_yaml

ROOT = Path(__file__).resolve().parent.parent
FILES = [*sorted((ROOT / "tests" / "cases" / "invalid").glob("*.yaml")), ROOT / "fleet.yaml"]
SNIPPETS = {
    "unicode and astral characters": 'a: "é😀x"\nbé😀: {c: 1, d: [x, y]}\n',
    "crlf line ends": "version: 1\r\nfleet: x\r\nmodels: {}\r\n",
    "lone cr line ends": "version: 1\rfleet: x\r",
    "nel and line separators": "a: x\x85b: y\u2028c: z\u2029d: w\n",
    "byte order mark inside": "a: \ufeffx\n",
    "tab after a value": "a: 1\t\nb:\t2\n",
    "tab inside a flow": "a: [1,\t2]\n",
    "escapes": "a: \"\\x41\\u00e9\\t\\n\"\nb: 'it''s'\n",
    "block scalars": "a: |\n  one\n  two\nb: >-\n  folded\n  text\nc: |+\n  kept\n\n",
    "anchors and aliases": "d: &d {x: 1}\ne: *d\nf: [*d, *d]\n",
    "merge key": "d: &d {x: 1}\ne:\n  <<: *d\n  y: 2\n",
    "explicit tags": "a: !!str 1\nb: !custom x\nc: !!binary aGk=\n",
    "timestamps and odd scalars": "a: 2024-01-01\nb: 0x1f\nc: 1e3\nd: .nan\ne: ~\nf: yes\n",
    "complex key": "? [a, b]\n: c\n",
    "duplicate keys": "a: 1\na: 2\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "document markers": "---\na: 1\n...\n",
    "directive": "%YAML 1.1\n---\na: 1\n",
    "unclosed quote": 'a: "x\nb: 2\n',
    "bad indentation": "a:\n  b: 1\n c: 2\n",
    "tab indentation": "a:\n\tb: 1\n",
    "control character": "a: \x07\n",
    "colon in a plain value": "a: b: c\n",
    "empty": "",
    "comments only": "# nothing\n",
    "plain scalar document": "just text\n",
    "deep flow": "a: " + "[" * 50 + "]" * 50 + "\n",
    "undefined alias": "a: *nope\n",
    "synthetic fleet": fleet_text(120),
}


def outcome(text: str) -> YamlDoc | list[str]:
    try:
        return parse_yaml(text, "fleet.yaml")
    except FleetError as exc:
        return [str(p) for p in exc.problems]


def pure_python(text: str, monkeypatch: pytest.MonkeyPatch) -> YamlDoc | list[str]:
    with monkeypatch.context() as patch:
        patch.setattr(yamlmarks, "_FAST_LOADER", None)
        return outcome(text)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_files_read_the_same_either_way(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8-sig")
    assert outcome(text) == pure_python(text, monkeypatch)


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippets_read_the_same_either_way(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = SNIPPETS[name]
    assert outcome(text) == pure_python(text, monkeypatch)


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML was built without libyaml")
def test_valid_fleets_take_the_fast_path() -> None:
    for text in (SNIPPETS["synthetic fleet"], (ROOT / "fleet.yaml").read_text(encoding="utf-8")):
        assert yamlmarks._compose_fast(text) is not None


# What a slip of the keyboard makes of a fleet file: a few characters inserted or deleted.
TYPOS = [" ", "\n", ":", ": ", "- ", "[", "]", "{", "}", ",", '"', "'", "#", "&a ", "*a", "|", ">"]
TYPOS += ["?", "%", "@", "`", "\\", "é", "0", "\r\n", "...", "---", "~", "<<", "|-", ">+", "$"]


def test_mistyped_files_read_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    texts = [p.read_text(encoding="utf-8") for p in FILES]
    for _ in range(1500):
        text = rng.choice(texts)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(text) + 1)
            if rng.random() < 0.5:
                text = text[:at] + rng.choice(TYPOS) + text[at:]
            else:
                text = text[:at] + text[at + rng.randint(1, 3) :]
        assert outcome(text) == pure_python(text, monkeypatch), text


def test_the_scrub_reads_as_much_of_fleet_yaml_as_the_loader_accepts() -> None:
    from sync.secrets import scrub

    assert scrub.FLEET_READ_LIMIT == yamlmarks.MAX_BYTES


@pytest.mark.parametrize("levels", [200, 500, 5_000, 100_000])
def test_a_document_nested_too_deep_is_a_problem_never_a_recursion_error(
    levels: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both composers recurse once per level: past what the converter counts, Python's
    recursion limit would be a traceback."""
    text = "x: " + "[" * levels + "]" * levels + "\n"
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(yamlmarks, "_FAST_LOADER", None)
        with pytest.raises(FleetError) as caught:
            parse_yaml(text, "fleet.yaml")
        (problem,) = caught.value.problems
        assert "nested more than 128 levels deep" in problem.message
