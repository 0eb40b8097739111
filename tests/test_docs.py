"""The docs site: built strictly by scripts/docs (every warning an error, every internal link
resolved, nothing fetched), and its reference pages generated from the code, so a new command,
option, fleet.yaml key, exit code or action input appears without anyone writing it."""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fleet_sync_reference", DOCS / "_ext" / "fleet_sync_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = generator()


def build(out: Path, source: Path = DOCS) -> subprocess.CompletedProcess[str]:
    if (
        importlib.util.find_spec("sphinx") is None
        or importlib.util.find_spec("myst_parser") is None
    ):
        message = "sphinx and myst-parser not installed: pip install -e '.[dev]'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    env = {
        **os.environ,
        "FLEET_SYNC_DOCS_PYTHON": sys.executable,
        "FLEET_SYNC_DOCS_SRC": str(source),
    }
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "docs"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


# ------------------------------------------------------------------------------------ the build


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    run = build(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    html = tmp_path / "html"
    for page in REF.PAGES:
        assert (html / "reference" / "generated" / f"{page}.html").is_file()
    served = (html / "schema" / "fleet.schema.json").read_bytes()
    assert served == (ROOT / "schema" / "fleet.schema.json").read_bytes()
    assert not (DOCS / "reference" / "generated").exists(), "the build wrote into the tree"


def test_a_broken_internal_link_fails_the_build(tmp_path: Path) -> None:
    """Guards the test above: a link to a heading that does not exist is an error."""
    source = tmp_path / "docs"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns("_build", "generated"))
    page = source / "guides" / "known-limits.md"
    page.write_text(page.read_text() + "\nSee [nowhere](fleet-yaml.md#no-such-heading).\n")
    run = build(tmp_path / "out", source)
    assert run.returncode != 0
    assert "no-such-heading" in run.stdout + run.stderr


# ------------------------------------------------------------------------------------ the CLI


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    group = REF.command_group()
    page = REF.cli_page()
    ctx = click.Context(group, info_name="fleet-sync")
    names = group.list_commands(ctx)
    assert {"validate", "plan", "apply", "drift", "import", "set-host"} <= set(names)
    for name in names:
        command = group.get_command(ctx, name)
        assert command is not None
        assert f"## `fleet-sync {name}`" in page
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert opt in page, f"{name} {opt}"
            envvar = getattr(param, "envvar", None)
            if isinstance(envvar, str):
                assert envvar in page


def test_a_new_command_and_option_appear_in_the_cli_reference() -> None:
    @click.command(name="frobnicate", help="Frobnicate the routes <carefully>.")
    @click.option("--widget-count", default=3, envvar="FLEET_SYNC_WIDGETS", help="How many.")
    @click.argument("model")
    def frobnicate(widget_count: int, model: str) -> None: ...

    group = click.Group("fleet-sync", commands=[frobnicate])
    page = REF.cli_page(group)
    assert "## `fleet-sync frobnicate`" in page
    assert (
        "`--widget-count INTEGER`: How many. (default: `3`; environment: `FLEET_SYNC_WIDGETS`)"
        in page
    )
    assert "`MODEL` (argument, required)" in page
    assert r"Frobnicate the routes \<carefully\>." in page  # help text cannot open a tag


# --------------------------------------------------------------------------------- fleet.yaml


def every_property(node: Any, schema: dict[str, Any]) -> set[str]:
    """Every property name declared anywhere in the schema."""
    found: set[str] = set()
    if isinstance(node, dict):
        found |= set(node.get("properties", {}))
        for value in node.values():
            found |= every_property(value, schema)
    elif isinstance(node, list):
        for value in node:
            found |= every_property(value, schema)
    return found


def test_every_fleet_yaml_key_is_in_the_reference() -> None:
    schema = REF.load_schema()
    page = REF.fleet_yaml_page(schema)
    paths = [path for path, _ in REF.schema_keys(schema)]
    for path in paths:
        assert f"`{path}`" in page
    leaves = {path.rsplit(".", 1)[-1].removesuffix("[]") for path in paths}
    assert every_property(schema, schema) <= leaves
    assert {"models.<model>.hosts[].api_base", "targets.<target>.proxy_url"} <= set(paths)
    assert "defaults.targets.<overlay>.litellm_params" in paths


def test_a_new_fleet_yaml_key_appears_in_the_reference() -> None:
    schema = copy.deepcopy(REF.load_schema())
    schema["$defs"]["host"]["properties"]["region"] = {
        "type": "string",
        "description": "Where the host runs <eu|us>.",
    }
    page = REF.fleet_yaml_page(schema)
    assert "### `models.<model>.hosts[].region`" in page
    assert r"Where the host runs \<eu\|us\>." in page


def test_the_schema_is_one_source() -> None:
    """validate reads the packaged copy; the reference reads schema/: they are the same file."""
    packaged = ROOT / "sync" / "fleet" / "fleet.schema.json"
    assert packaged.read_bytes() == (ROOT / "schema" / "fleet.schema.json").read_bytes()


# ----------------------------------------------------------------- exit codes, plan, the action


def test_every_exit_code_is_in_the_reference() -> None:
    codes = REF.exit_codes()
    assert [value for _, value in codes] == [0, 1, 2, 3, 4, 130, 143]
    page = REF.exit_codes_page()
    for name, value in codes:
        assert f"| {value} | `{name}` |" in page


def test_an_exit_code_without_a_meaning_stops_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(REF, "exit_codes", lambda: [("EXIT_NEW", 5)])
    with pytest.raises(RuntimeError, match="EXIT_NEW"):
        REF.exit_codes_page()


def test_the_plan_json_reference_is_a_real_plan() -> None:
    plan = REF.example_plan_json()
    assert plan["summary"] == {"create": 0, "update": 1, "delete": 1}
    page = REF.plan_json_page()
    for key in plan:
        assert f"`{key}`" in page, key  # every top-level key is explained


def test_every_action_input_and_output_is_in_the_reference() -> None:
    action = REF.load_action()
    page = REF.action_page()
    for name in [*action["inputs"], *action["outputs"]]:
        assert f"### `{name}`" in page
    action = copy.deepcopy(action)
    action["inputs"]["new-input"] = {"description": "Something new.", "required": False}
    assert "### `new-input`" in REF.action_page(action)
