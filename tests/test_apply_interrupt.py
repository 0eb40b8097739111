"""An interrupted apply (sync/live/interrupt.py, sync/run/interrupt.py) on a transport that
answers from memory: after the request no write starts, each change is named with what became
of it, nothing is written back; and what SIGINT / SIGTERM do before and during the writes. The
real proxy and real signals: tests/test_interrupt_live.py."""

from __future__ import annotations

import signal
import threading
from typing import Any

import httpx
import pytest
import yaml

from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import render
from sync.core.result import Result
from sync.fleet.model import fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient
from sync.live.interrupt import Interrupt
from sync.report.text import result_text
from sync.run.interrupt import Interrupted, Signals
from sync.run.outcome import attempt

from .support.owner import owner_of

POD = "http://127.0.0.1:4001"


def plan_of(hosts: int) -> Plan:
    doc = {
        "version": 1,
        "fleet": "f1",
        "models": {
            "mist": {
                "served_model": "org/mist",
                "hosts": [
                    {"name": f"h{i}", "api_base": f"http://127.0.0.1:{41000 + i}/v1"}
                    for i in range(hosts)
                ],
            }
        },
    }
    fleet = fleet_from_doc(parse_yaml(yaml.safe_dump(doc), "fleet.yaml"), "fleet.yaml")
    return make_plan(fleet, render(fleet), [], litellm_version="1.108.7")


class Proxy:
    """Creates answered from memory and listed at once; the `stop_at`-th write requests the
    interrupt before it answers; the write of the id `hang` answers only once `release`d."""

    def __init__(self, interrupt: Interrupt, stop_at: int, hang: str = "") -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.interrupt, self.stop_at, self.hang = interrupt, stop_at, hang
        self.writes: list[str] = []
        self.release = threading.Event()
        self.hang_listings = False  # once interrupted, a listing answers only when released
        self.lock = threading.Lock()

    def answer(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            if self.hang_listings and self.interrupt.requested:
                self.release.wait(30)
            with self.lock:
                rows = list(self.rows.values())
            return httpx.Response(200, json={"data": rows, "total_count": len(rows)})
        body: dict[str, Any] = httpx.Response(200, content=request.content).json()
        rid = body["model_info"]["id"]
        with self.lock:
            self.writes.append(rid)
            count = len(self.writes)
        if count == self.stop_at:
            self.interrupt.request()
        if rid == self.hang:
            self.release.wait(30)
        with self.lock:
            self.rows[rid] = body
        return httpx.Response(200, json={})


def run(plan: Plan, proxy: Proxy) -> Result:
    with LiteLLMClient([POD], "k", transport=httpx.MockTransport(proxy.answer)) as client:
        return apply_plan(
            plan, client, owner_of(plan.fleet), concurrency=1, confirm_timeout=0,
            sleep=lambda _: None, interrupt=proxy.interrupt,
        )  # fmt: skip


def test_no_write_starts_after_the_interrupt_and_each_change_is_named() -> None:
    plan = plan_of(10)
    proxy = Proxy(Interrupt(), stop_at=3)
    result = run(plan, proxy)
    assert len(proxy.writes) == 3  # the third was in flight at the request: it finished
    statuses = [o.status for o in result.outcomes]
    assert statuses.count("done") == 3 and statuses.count("not started") == 7
    text = result_text(result)
    assert "fleet f1: 3 done, 0 failed, 0 unconfirmed, 0 skipped, 7 not started" in text
    assert text.count("not started: the apply was interrupted before this write") == 7
    assert not result.complete


def test_a_write_still_in_flight_is_left_to_read_back_and_those_behind_it_never_start() -> None:
    plan = plan_of(6)
    ids = [c.id for c in plan.changes]
    proxy = Proxy(Interrupt(in_flight=0.0), stop_at=2, hang=ids[1])  # not waited for
    try:
        result = run(plan, proxy)
    finally:
        proxy.release.set()
    by_id = {o.change.id: o for o in result.outcomes}
    assert by_id[ids[0]].status == "done"
    assert by_id[ids[1]].status == "unconfirmed"
    assert "in flight when the apply was interrupted" in by_id[ids[1]].detail
    assert {by_id[i].status for i in ids[2:]} == {"not started"}
    assert proxy.writes == ids[:2]


def test_an_apply_nobody_interrupts_writes_everything() -> None:
    plan = plan_of(4)
    proxy = Proxy(Interrupt(), stop_at=0)
    result = run(plan, proxy)
    assert [o.status for o in result.outcomes] == ["done"] * 4
    assert "not started" not in result_text(result)


def test_a_signal_before_any_write_stops_the_run_at_once() -> None:
    signals = Signals()
    with pytest.raises(Interrupted) as stopped:
        signals.handle(signal.SIGTERM, None)
    assert stopped.value.exit_code == 143
    assert "nothing was sent to the proxy" in str(stopped.value)


def test_during_the_writes_the_first_signal_settles_and_the_second_ends_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ended: list[int] = []

    def exit_now(code: int) -> None:
        ended.append(code)
        raise SystemExit(code)

    monkeypatch.setattr("sync.run.interrupt.os._exit", exit_now)
    signals = Signals()
    interrupt = signals.writes()
    signals.handle(signal.SIGINT, None)
    assert interrupt.requested and signals.exit_code == 130
    assert "SIGINT: no new write starts" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        signals.handle(signal.SIGTERM, None)
    assert ended == [130]
    assert capsys.readouterr().err.startswith("error: SIGTERM again: stopped at once")


def test_a_listing_that_does_not_answer_is_given_up_at_the_interrupts_deadline() -> None:
    """A slow proxy must not keep the account from being printed: once interrupted, read-back
    gives up a listing at the deadline (settle 0 here) and says so."""
    plan = plan_of(4)
    proxy = Proxy(Interrupt(settle=0.0), stop_at=2)
    proxy.hang_listings = True
    try:
        result = run(plan, proxy)
    finally:
        proxy.release.set()
    statuses = [o.status for o in result.outcomes]
    assert statuses == ["unconfirmed", "unconfirmed", "not started", "not started"]
    assert "no listing before the interrupted apply's deadline" in result.outcomes[0].detail


def test_an_interrupt_before_any_write_is_no_targets_error() -> None:
    """attempt() turns a target's errors into its outcome; an interrupt is the run's."""

    def stopped() -> None:
        raise Interrupted(signal.SIGINT)

    with pytest.raises(Interrupted):
        attempt(None, stopped)


def test_after_a_write_a_signal_during_a_later_targets_read_stops_that_read() -> None:
    """A target's read after an earlier target wrote is abandoned at once (an outside attack:
    a slow proxy kept the run 77 s past SIGINT); outside reads and writes the signal only asks
    the run to start no further target, so an account being printed is never cut."""
    signals = Signals()
    signals.writes()
    with pytest.raises(Interrupted) as stopped, signals.reads():
        signals.handle(signal.SIGTERM, None)
    assert stopped.value.exit_code == 143
    assert "while the next target was read" in str(stopped.value)
    between = Signals()
    between.writes()
    between.handle(signal.SIGINT, None)  # printing a result, posting a comment: no raise
    assert between.interrupt.requested and between.exit_code == 130
