"""The output formats, looked up by the name --format gives: each shows a plan, an apply
result and validation problems its own way (text.py, markdown.py, json_format.py,
github_annotations.py), or not at all where no command offers that name for that output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from sync.core.plan import Plan
from sync.fleet.problems import Problem
from sync.report import github_annotations, json_format, markdown, text

if TYPE_CHECKING:  # validate prints problems through here; it needs no proxy client
    from sync.core.health import Verified
    from sync.core.result import Result

# (plan, refusals, colour): refusals are what apply would refuse without --force.
PlanView = Callable[[Plan, Sequence[str], bool], str]
# (result, what the proxy answered when asked or None, the proxy's URL)
ResultView = Callable[["Result", "Sequence[Verified] | None", str], str]


@dataclass(frozen=True)
class Validation:
    """What validate prints: workflow commands (written as annotations) and plain lines."""

    annotations: str
    text: str


ProblemsView = Callable[[Sequence[Problem], Sequence[str]], Validation]


@dataclass(frozen=True)
class Format:
    name: str
    plan: PlanView | None
    result: ResultView | None
    problems: ProblemsView | None  # (problems, a line per valid file)
    # apply prints the plan before it writes (a terminal reader sees what is coming; a JSON
    # reader gets one document)
    plan_before_apply: bool = False

    def show_plan(self, plan: Plan, refusals: Sequence[str] = (), colour: bool = False) -> str:
        return _offered(self.plan, self.name, "a plan")(plan, refusals, colour)

    def show_result(
        self, result: Result, verified: Sequence[Verified] | None, proxy_url: str
    ) -> str:
        return _offered(self.result, self.name, "a result")(result, verified, proxy_url)

    def show_problems(self, problems: Sequence[Problem], valid: Sequence[str]) -> Validation:
        return _offered(self.problems, self.name, "problems")(problems, valid)


V = TypeVar("V")


def _offered(view: V | None, name: str, what: str) -> V:
    if view is None:  # the commands' --format choices only offer what a format has
        raise LookupError(f"the {name} format shows no {what}")
    return view


FORMATS = {
    f.name: f
    for f in (
        Format(
            "text",
            plan=lambda plan, refusals, colour: text.plan_text(plan, colour, refusals),
            result=text.apply_text,
            problems=lambda problems, valid: Validation("", text.problems_text(problems, valid)),
            plan_before_apply=True,
        ),
        Format(
            "markdown",
            plan=lambda plan, refusals, _colour: markdown.plan_markdown(plan, refusals=refusals),
            result=None,
            problems=None,
        ),
        Format(
            "json",
            plan=lambda plan, refusals, _colour: json_format.plan_document(plan, refusals),
            result=lambda result, verified, _url: json_format.result_document(result, verified),
            problems=lambda problems, _valid: Validation(
                "", json_format.problems_document(problems)
            ),
        ),
        Format(
            "github",
            plan=None,
            result=None,
            problems=lambda problems, valid: Validation(
                github_annotations.problems_github(problems), "".join(f"{line}\n" for line in valid)
            ),
        ),
    )
}


def format_named(name: str) -> Format:
    return FORMATS[name]
