"""A located problem in an input file, and the error that carries a list of them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sync.errors import FleetSyncError


@dataclass(frozen=True, order=True)
class Problem:
    """One error at a place in a file; 1-based line and column, like compilers print them."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "col": self.col, "message": self.message}


class FleetError(FleetSyncError):
    """fleet.yaml is unreadable or invalid; carries every problem found in one run."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(sorted(set(problems)))
        super().__init__("\n".join(str(p) for p in self.problems))
