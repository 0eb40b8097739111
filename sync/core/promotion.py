"""Decisions of a run over several targets (fleet.yaml's `targets:`), on plain data: the exit
code of the run from each target's, and which target a promotion gate holds.

Exit codes as the commands use them: 0 ok, 1 error, 2 changes/drift, 3 refused, 4 incomplete.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

# Most severe first: the run's code is the first of these any target has. 1 first: a target
# that could not be read, or whose apply stopped (possibly after writes), is a state nobody
# knows; then 4, a target written only in part or a rollout held part-way; then 3, a plan
# refused for a person to decide; then 2, changes or drift waiting; 0 last. The same order as
# the action's over several fleet files (action.yml), so a job's code is the worst over every
# file and target whichever way it is grouped.
SEVERITY: tuple[int, ...] = (1, 4, 3, 2, 0)

# The exit code of a target a gate holds: it was not applied, so the apply is incomplete.
HELD_CODE = 4


def worst(codes: Iterable[int]) -> int:
    """The run's exit code: the most severe of its targets' (0 for no target)."""
    seen = set(codes)
    unknown = seen - set(SEVERITY)
    if unknown:
        raise ValueError(f"exit codes outside {SEVERITY}: {sorted(unknown)}")
    return next((code for code in SEVERITY if code in seen), 0)


def converged(code: int) -> bool:
    """A target converged in this run when its apply (and its probe and verify, which make the
    code 4 when they fail) ended 0: failed, unconfirmed, withheld, refused, unreachable did not."""
    return code == 0


@dataclass(frozen=True)
class Hold:
    """A target not touched because predecessors of it in this run did not converge."""

    target: str
    waiting_on: tuple[str, ...]

    @property
    def message(self) -> str:
        return f"held: {', '.join(self.waiting_on)} did not converge"


def hold(
    target: str, after: Sequence[str], selected: Collection[str], codes: Mapping[str, int]
) -> Hold | None:
    """The gate in front of `target`: its predecessors (`after`) that run in this run
    (`selected`) and did not converge (their code in `codes`; one without a code has not run,
    which promotion order rules out, and counts as not converged). A predecessor this run does
    not select is no gate: selecting `--target prod` alone applies prod, the job that runs it
    (its workflow's `needs:`) is the gate then."""
    blocking = tuple(
        name for name in after if name in selected and not converged(codes.get(name, 1))
    )
    return Hold(target, blocking) if blocking else None
