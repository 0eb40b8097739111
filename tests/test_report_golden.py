"""The text and markdown reports, byte for byte, against golden files in tests/cases/report/.

Each input below is a plan (from a tests/cases/plan case, or gated by probe results) or an apply
result; each renders to `<name>.txt` (the terminal text, with what apply would refuse) and
`<name>.md` (the markdown of the drift issue and the step summary; for a result, the merge
commit's comment). After an intended change of a report, regenerate the files and review their
diff:

    FLEET_SYNC_REGENERATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_report_golden.py
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from sync.core.plan import Plan
from sync.core.result import Outcome, Result, Status
from sync.core.safety import refusals
from sync.report.markdown import plan_markdown, pr_markdown, result_markdown
from sync.report.text import plan_text, result_text
from tests.test_health import withheld_plan
from tests.test_plan_cases import CASES, plan_for

GOLDEN = Path(__file__).parent / "cases" / "report"
REGENERATE = os.environ.get("FLEET_SYNC_REGENERATE_GOLDEN") == "1"


def case(stem: str, empty_live: bool = False) -> tuple[Plan, tuple[str, ...]]:
    """A tests/cases/plan case's plan and what apply would refuse without --force."""
    (path,) = [p for p in CASES if p.stem == stem]
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    if empty_live:  # nothing on the proxy: every route is a create
        spec["live"] = []
    plan, max_prune = plan_for(spec)
    return plan, tuple(refusals(plan, max_prune))


def plan_reports(plan: Plan, refused: tuple[str, ...]) -> dict[str, str]:
    return {"txt": plan_text(plan, False, refused), "md": plan_markdown(plan, refusals=refused)}


def plan_input(stem: str, empty_live: bool = False) -> Callable[[], dict[str, str]]:
    return lambda: plan_reports(*case(stem, empty_live))


def failed_apply() -> dict[str, str]:
    """An apply whose changes end in every status: done, failed, unconfirmed, skipped."""
    plan, _ = case("13-removals")
    statuses: tuple[Status, ...] = ("done", "failed", "unconfirmed", "skipped")
    details = {
        "done": "confirmed on 2 pod(s)",
        "failed": "HTTP 500: database is locked",
        "unconfirmed": "not listed by http://127.0.0.1:4001 within 30s",
        "skipped": "waits for its model group's creates, one of which failed",
    }
    outcomes = tuple(
        Outcome(c, statuses[i % 4], details[statuses[i % 4]]) for i, c in enumerate(plan.changes)
    )
    result = Result(plan, outcomes)
    return {"txt": result_text(result), "md": result_markdown(result, "applied on merge")}


def withheld_apply() -> dict[str, str]:
    plan = withheld_plan()
    result = Result(plan, tuple(Outcome(c, "done", "updated") for c in plan.changes))
    return {"txt": result_text(result), "md": result_markdown(result)}


def pull_request() -> dict[str, str]:
    """The PR comment: this PR's changes apart from drift already live, refusals on top."""
    plan, refused = case("09-sources")
    return {"md": pr_markdown(plan, plan.changes[:1], plan.changes[1:], "against `main`", refused)}


INPUTS: dict[str, Callable[[], dict[str, str]]] = {
    "in-sync": plan_input("01-in-sync-with-litellm-enrichment"),
    "creates": plan_input("01-in-sync-with-litellm-enrichment", empty_live=True),
    "updates-with-field-diffs": plan_input("07-hand-edits-and-key-reference"),
    "prunes-refused": plan_input("05-prune-threshold"),
    "replacements": plan_input("27-replacement-carries-and-drops"),
    "removals-and-generations": plan_input("13-removals"),
    "conflicts-and-ignored": plan_input("25-conflict-only-without-a-route-of-its-own"),
    "stored-not-listed": plan_input("12-stored-not-listed"),
    "pauses-and-resumes": plan_input("34-drain-pauses-and-resumes"),
    "withheld-by-health": lambda: plan_reports(withheld_plan(), ()),
    "pull-request": pull_request,
    "apply-with-failures": failed_apply,
    "apply-withheld": withheld_apply,
}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_report_matches_its_golden_file(name: str) -> None:
    for ext, rendered in INPUTS[name]().items():
        golden = GOLDEN / f"{name}.{ext}"
        if REGENERATE:
            golden.write_bytes(rendered.encode())
        assert golden.exists(), f"{golden} is missing: regenerate (see this module's docstring)"
        assert rendered.encode() == golden.read_bytes(), f"{golden} differs from the report"


def test_every_golden_file_has_an_input() -> None:
    """A golden file left behind by a renamed input would be checked by nothing."""
    expected = {f"{name}.{ext}" for name, make in INPUTS.items() for ext in make()}
    assert {p.name for p in GOLDEN.iterdir()} == expected
