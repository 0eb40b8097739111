"""validate: check fleet files against the schema and the rules; reads no proxy."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sync.commands.options import fleet_option, format_option
from sync.run.console import EXIT_ERROR, Exit
from sync.secrets import scrub


@click.command()
@fleet_option
@click.argument("more_files", nargs=-1, type=click.Path(path_type=Path))
@format_option("text", "github", "json", help="github prints ::error annotations on the lines.")
def validate(fleet_file: Path, more_files: tuple[Path, ...], fmt: str) -> None:
    """Check fleet.yaml against the schema and the semantic rules; every problem, located.

    FILES, when given, are validated instead of -f (pre-commit passes changed files so).
    Validated together: no host of one may name a target variable of any (one job holds them
    all).
    """
    from sync.core.render import render
    from sync.fleet.model import load_fleet
    from sync.fleet.problems import FleetError, Problem
    from sync.report.formats import format_named

    files = [*more_files] or [fleet_file]
    problems: list[Problem] = []
    valid: list[str] = []
    for path in files:
        scrub.active().remember_fleet(path, os.environ)
    held = frozenset().union(*(_target_variables(p) for p in files))
    for path in files:
        try:
            fleet = load_fleet(path, str(path), held)
        except FleetError as exc:
            problems.extend(exc.problems)
            continue
        drained = sum(not h.enabled for m in fleet.models for h in m.hosts)
        paused = f", {drained} drained host(s) paused" if drained else ""
        valid.append(
            f"{path}: valid (fleet {fleet.name}: {len(fleet.models)} models, "
            f"{len(render(fleet))} routes{paused})"
        )
    shown = format_named(fmt).show_problems(problems, valid)
    if shown.annotations:
        # Lines meant as workflow commands: the final scrub lets these through (every other
        # line starting with `::` is shown, not run).
        scrub.write_annotations(shown.annotations)
    click.echo(shown.text, nl=False)
    if problems:
        click.echo(f"{len(problems)} problem(s)", err=True)
        raise Exit(EXIT_ERROR)


def _target_variables(path: Path) -> frozenset[str]:
    """A file's target variables; none when it cannot be read (its own problem says why)."""
    from sync.fleet.model import file_target_variables
    from sync.fleet.problems import FleetError

    try:
        return file_target_variables(path)
    except FleetError:
        return frozenset()
