"""The model groups fleet.yaml's git history declared (sync/gitops/history.py): read from real git
repositories made in the test (gitpython), and the quick read of a version's `models:` keys
checked against a full YAML parse of every fleet file the tests and examples hold."""

from __future__ import annotations

import subprocess
from pathlib import Path

import git
import pytest
import yaml

from sync.gitops.history import _parsed, _scanned, declared_groups, model_keys

ROOT = Path(__file__).resolve().parent.parent
FLEET_FILES = sorted(
    [*ROOT.glob("tests/cases/**/*.yaml"), *ROOT.glob("examples/**/*.yaml"), ROOT / "fleet.yaml"]
)

TRICKY = [
    "version: 1\nmodels:\n  a: {served_model: x}\n  'b c': {}\n  \"d\": {}\nowns: tagged\n",
    "models:\n    # a comment\n    qwen3:8b:\n      hosts: []\n\n    e:   # trailing\n      x: 1\n",
    "models: {a: 1, b: 2}\n",
    "models: &m\n  a: 1\nother: *m\n",
    "base: &b\n  a: 1\nmodels:\n  <<: *b\n  c: 2\n",
    "models:\n  ? complex\n  : 1\n",
    "models:\n  a: |\n    b: not a key\n  c: 1\n",
    "models:\n- a\n- b\n",
    "models:\r\n  a: 1\r\n",
    "\ufeffversion: 1\nmodels:\n  a:\n    hosts: []\n",
    "models:\n  a: {x: 1,\n  y: 2}\n",
    "version: 1\n",
    "models:\n\ta: 1\n",
    "models: [unclosed\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_the_quick_read_never_misses_a_group_yaml_reads(text: str) -> None:
    """Reading one group too many costs one request; missing one would leave a row of ours
    unseen. (A flow mapping continued on a line of its own reads as one key more.)"""
    scanned = _scanned(text)
    assert scanned is None or scanned >= _parsed(text), (scanned, _parsed(text))
    assert model_keys(text) >= _parsed(text)


def test_the_quick_read_agrees_with_yaml_on_every_fleet_file_of_the_repository() -> None:
    read = 0
    for path in FLEET_FILES:
        text = path.read_text(encoding="utf-8", errors="replace")
        scanned = _scanned(text)
        if scanned is not None:
            read += 1
            assert scanned >= _parsed(text), path
            if "invalid" not in path.parts:  # a file YAML cannot read may read as more
                assert scanned == _parsed(text), path
        assert model_keys(text) >= _parsed(text), path
    assert read >= 20  # most of them are plain block style: the quick read does the work


def commit(repo: git.Repo, path: Path, text: str, message: str) -> None:
    path.write_text(text, encoding="utf-8")
    repo.index.add([str(path)])
    repo.index.commit(message)


def fleet_text(*groups: str) -> str:
    models = {g: {"served_model": f"org/{g}", "hosts": []} for g in groups}
    return yaml.safe_dump({"version": 1, "fleet": "f", "models": models})


def test_every_group_any_version_declared_is_found(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path, initial_branch="main")
    fleet = tmp_path / "fleet.yaml"
    assert declared_groups(fleet) == declared_groups(fleet).__class__()  # no commit: nothing
    commit(repo, fleet, fleet_text("a", "b"), "first")
    commit(repo, fleet, "models: [not: valid\n", "broken")  # skipped
    commit(repo, fleet, fleet_text("a", "typo-group"), "typo")
    commit(repo, tmp_path / "other.yaml", fleet_text("not-this-file"), "another file")
    # A side branch declared a group, then dropped it; its merge takes main's version.
    repo.create_head("side").checkout()
    commit(repo, fleet, fleet_text("a", "typo-group", "side-only"), "side adds")
    commit(repo, fleet, fleet_text("a", "typo-group"), "side drops")
    repo.heads.main.checkout()
    commit(repo, fleet, fleet_text("a"), "main drops typo-group")
    repo.git.merge("side", "-s", "ours", "-m", "merge side")
    fleet.write_text(fleet_text("a", "uncommitted"), encoding="utf-8")  # the caller's
    past = declared_groups(fleet)
    assert past.note is None
    assert past.groups == {"a", "b", "typo-group", "side-only"}


def test_a_fleet_file_in_a_subdirectory_is_found_by_its_path(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path, initial_branch="main")
    (tmp_path / "deploy").mkdir()
    fleet = tmp_path / "deploy" / "fleet.yaml"
    commit(repo, fleet, fleet_text("x"), "one")
    commit(repo, fleet, fleet_text("y"), "two")
    assert declared_groups(fleet).groups == {"x", "y"}


def test_a_shallow_clone_or_no_repository_is_said_never_silent(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    repo = git.Repo.init(origin, initial_branch="main")
    for groups in (("old",), ("old", "gone"), ("now",)):
        commit(repo, origin / "fleet.yaml", fleet_text(*groups), "step")
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow)], check=True
    )
    past = declared_groups(shallow / "fleet.yaml")
    assert past.groups == {"now"}
    assert past.note is not None and "shallow" in past.note and "fetch-depth: 0" in past.note

    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "fleet.yaml").write_text(fleet_text("a"), encoding="utf-8")
    past = declared_groups(alone / "fleet.yaml")
    assert past.groups == frozenset() and past.note is not None
    assert "not in a git repository" in past.note and "were not looked for" in past.note


def test_versions_before_a_rename_or_a_copy_count(tmp_path: Path) -> None:
    """attack-b f3 (ii): a group declared (and applied) while fleet.yaml lived at another path
    and removed there, then the file moved back. Renames and copies are followed through the
    commits that added the file, on any branch merged into HEAD, edited in the same commit or
    not; a file that only shares a name later is read too (one request more, never one less)."""
    repo = git.Repo.init(tmp_path, initial_branch="main")
    fleet = tmp_path / "fleet.yaml"
    commit(repo, fleet, fleet_text("a"), "one")
    (tmp_path / "fleets").mkdir()
    repo.index.move(["fleet.yaml", "fleets/prod.yaml"])
    repo.index.commit("move")
    moved = tmp_path / "fleets" / "prod.yaml"
    commit(repo, moved, fleet_text("a", "typo-mv"), "add a group")
    commit(repo, moved, fleet_text("a"), "drop it")
    repo.index.move(["fleets/prod.yaml", "fleet.yaml"])
    repo.index.commit("move back")
    # A side branch copies it, declares a group in the copy, drops it, and renames the copy
    # over another name; the merge brings the copy in as fleets/staging.yaml.
    repo.create_head("side").checkout()
    staging = tmp_path / "fleets" / "staging.yaml"
    staging.write_text(fleet_text("a") + "# copied\n", encoding="utf-8")
    repo.index.add([str(staging)])
    repo.index.commit("copy")
    commit(repo, staging, fleet_text("a", "side-copy") + "# copied\n", "group in the copy")
    commit(repo, staging, fleet_text("b") + "# copied\n", "other groups")
    repo.heads.main.checkout()
    repo.git.merge("side", "--no-ff", "-m", "merge side")
    assert declared_groups(fleet).groups == {"a", "typo-mv"}
    # The copy's history goes on through the file it was copied from.
    assert declared_groups(staging).groups == {"a", "typo-mv", "side-copy", "b"}
