"""The supported-versions table the README carries, from a matrix run: per LiteLLM version what
ran, what passed, how long it took, and how a removed key is taken away there. Printed at the
end of every pytest run that set up versions (tests/conftest.py) and by scripts/matrix.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sync.litellm.releases import LiteLLMRelease


@dataclass(frozen=True)
class VersionResult:
    version: str
    passed: int
    failed: int
    skipped: int
    seconds: float  # its matrix tests, proxy starts included

    @property
    def tests(self) -> int:
        return self.passed + self.failed + self.skipped


def removal(version: str) -> str:
    if LiteLLMRelease(version).removes_params_in_place:
        return "in place (PATCH `litellm_params_to_remove`)"
    return "replaced: the next generation of its id created, then the old route deleted (no gap)"


def table(results: Sequence[VersionResult], day: str) -> str:
    lines = [
        f"| LiteLLM | matrix tests ({day}) | time | a key removed from fleet.yaml is taken away |",
        "|---|---|---|---|",
    ]
    for r in results:
        outcome = f"{r.passed}/{r.tests} passed"
        outcome += f", {r.failed} failed" if r.failed else ""
        outcome += f", {r.skipped} skipped" if r.skipped else ""
        minutes = f"{r.seconds / 60:.1f} min"
        lines.append(f"| {r.version} | {outcome} | {minutes} | {removal(r.version)} |")
    return "\n".join(lines) + "\n"
