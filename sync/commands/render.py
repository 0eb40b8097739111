"""render: the LiteLLM config.yaml fragment fleet.yaml means; reads no proxy."""

from __future__ import annotations

from pathlib import Path

import click

from sync.commands.common import read_fleet
from sync.commands.options import fleet_option
from sync.secrets import scrub


@click.command(name="render")
@fleet_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the config.yaml fragment here instead of stdout.",
)
def render_command(fleet_file: Path, output: Path | None) -> None:
    """Print the LiteLLM config.yaml fragment ({model_list: [...]}) fleet.yaml means."""
    from sync.core.render import render, render_config

    text = render_config(render(read_fleet(fleet_file)))
    if output:
        scrub.write_text(output, text)
    else:
        click.echo(text, nl=False)
