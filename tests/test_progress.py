"""Progress of an apply: plain lines for CI logs, one rewritten line on a terminal."""

from __future__ import annotations

import io

from sync.live.progress import ProgressWriter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_ci_logs_get_a_line_per_stage_start_and_end_and_every_interval() -> None:
    out, clock = io.StringIO(), Clock()
    progress = ProgressWriter(out, live=False, interval=10, clock=clock)
    progress.stage("create", 5)
    for state in ("written", "written", "failed"):
        clock.now += 2
        progress.step("create", state)
    clock.now += 5  # 11 s since the last line: time for one
    progress.step("create", "ambiguous")
    clock.now += 1
    progress.step("create", "written")
    progress.stage_done("create")
    progress.waiting(3, 5, 0.4, 40)
    progress.waiting(4, 5, 1.4, 40)  # within the interval: not shown
    progress.waiting(5, 5, 2.4, 40)  # all confirmed: always shown
    progress.finish()
    assert out.getvalue().splitlines() == [
        "fleet-sync: create: 5 to write",
        "fleet-sync: create: 2 written, 1 ambiguous, 1 failed, 1 left of 5 (11 s)",
        "fleet-sync: create done: 3 written, 1 ambiguous, 1 failed of 5 in 12 s",
        "fleet-sync: read-back: 3 of 5 changes shown by every pod (0 s of at most 40 s)",
        "fleet-sync: read-back: 5 of 5 changes shown by every pod (2 s of at most 40 s)",
    ]
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    out, clock = io.StringIO(), Clock()
    progress = ProgressWriter(out, live=True, clock=clock)
    progress.stage("update", 2)
    clock.now += 1
    progress.step("update", "written")
    clock.now += 0.01  # faster than a terminal needs: skipped
    progress.step("update", "written")
    progress.stage_done("update")
    progress.waiting(2, 2, 0.5, 40)
    progress.finish()
    text = out.getvalue()
    frames = [f for f in text.split("\r\033[K") if f]
    assert frames == [
        "update: 2 to write",
        "update: 1 written, 0 failed, 1 left of 2 (1 s)",
        "update done: 2 written, 0 failed of 2 in 1 s\n",
        "read-back: 2 of 2 changes shown by every pod (0 s of at most 40 s)\n",
    ]


def test_steps_of_another_stage_are_ignored() -> None:
    out = io.StringIO()
    progress = ProgressWriter(out, live=False, clock=Clock())
    progress.step("delete", "written")
    progress.stage_done("delete")
    progress.finish()
    assert out.getvalue() == ""
