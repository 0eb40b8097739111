"""A run's GitHub steps (comment, issue, label): a failure is exit 1 for the target it was for,
whatever was already printed stays printed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from sync.run.console import err, fail
from sync.run.outcome import Outcome, attempt
from sync.secrets import display

if TYPE_CHECKING:
    from sync.run.reading import TargetPlan

T = TypeVar("T")


def on_github(call: Callable[[], str]) -> None:
    """Run one GitHub step; its failure is an error (exit 1) but the plan is already printed."""
    github_value(lambda: (call(), None))


def github_value(call: Callable[[], tuple[str, T]]) -> T:
    """on_github for a step that also answers something (its line is logged)."""
    from sync.github.actions import GitHubError
    from sync.github.artifact import ReportDirError

    try:
        line, value = call()
    except ReportDirError as exc:
        fail(str(exc))
    except GitHubError as exc:
        fail(f"GitHub: {exc}")
    err(display.text(line))
    return value


def each_github(
    outcomes: Sequence[Outcome[TargetPlan]], call: Callable[[TargetPlan], str]
) -> dict[str | None, int]:
    """A GitHub step per planned target (its own comment or issue); a failure is exit 1 for
    that target, the others still posted."""
    codes: dict[str | None, int] = {}
    for outcome in outcomes:
        if (value := outcome.value) is not None:
            done = attempt(outcome.target, partial(on_github, partial(call, value)))
            codes[outcome.target] = done.code
    return codes
