"""The GitHub annotations format of validation problems (validate --format github): the one
output whose lines are meant as workflow commands (sync/secrets/scrub.py lets them through)."""

from __future__ import annotations

from collections.abc import Sequence

from sync.fleet.problems import Problem


def problems_github(problems: Sequence[Problem]) -> str:
    """GitHub workflow commands: each problem becomes an annotation on its line."""

    def esc(text: str, prop: bool = False) -> str:
        text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return text.replace(":", "%3A").replace(",", "%2C") if prop else text

    return "".join(
        f"::error file={esc(p.file, True)},line={p.line},col={p.col}::{esc(p.message)}\n"
        for p in problems
    )
