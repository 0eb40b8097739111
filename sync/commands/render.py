"""render: the LiteLLM config.yaml fragment fleet.yaml means; reads no proxy."""

from __future__ import annotations

from pathlib import Path

import click

from sync.commands.options import fleet_option, target_option
from sync.run.console import fail
from sync.run.reading import read_fleet, select
from sync.secrets import scrub


@click.command(name="render")
@fleet_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the config.yaml fragment here instead of stdout.",
)
@target_option
def render_command(fleet_file: Path, output: Path | None, target_names: tuple[str, ...]) -> None:
    """Print the LiteLLM config.yaml fragment ({model_list: [...]}) fleet.yaml means (with
    targets:, the one target --target names)."""
    from sync.core.render import render, render_config
    from sync.fleet.targets import for_target

    fleet = read_fleet(fleet_file)
    targets = select(fleet, target_names)
    if len(targets) > 1:
        # Each target has its own model_list: one fragment is one proxy's config.
        declared = ", ".join(t.name for t in targets)
        fail(f"render shows one target's model_list: give --target NAME once ({declared})")
    text = render_config(render(for_target(fleet, targets[0].name) if targets else fleet))
    if output:
        scrub.write_text(output, text)
    else:
        click.echo(text, nl=False)
