"""An interrupted apply leaves an account (issue 24): GitHub cancels a job with SIGINT, then
SIGTERM 7.5 s later, then SIGKILL. On the first signal no new write starts, the writes in flight
settle, the result is printed as usual (each change done / unconfirmed / not started) and the
command exits 130 (SIGINT) or 143 (SIGTERM); a second signal ends it at once with one line. The
next apply converges. The signal is sent once the proxy has taken the n-th write (an event of
the recording proxy in front of it, never a timer)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import Proxy, fleet_sync, remove_fleet, write_fleet

HOSTS = 24


def fleet_file(tmp_path: Path, fleet_name: str) -> tuple[Path, str]:
    model = f"{fleet_name}-m"
    hosts = {f"h{i:02}": f"http://216.243.220.245:{21000 + i}/v1" for i in range(HOSTS)}
    return write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": hosts}}), model


def start_apply(fleet: Path, env: dict[str, str], url: str) -> subprocess.Popen[str]:
    # One write at a time: the signal lands with most of the plan still to write.
    return subprocess.Popen(
        [sys.executable, "-m", "sync", "apply", "-f", str(fleet), "--concurrency", "1",
         "--proxy-url", url],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def listed(proxy: Proxy, model: str) -> int:
    return len(proxy.ids(model))


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_apply_prints_its_account_and_the_next_converges(
    proxy: Proxy, tmp_path: Path, fleet_name: str, signum: signal.Signals, code: int
) -> None:
    fleet, model = fleet_file(tmp_path, fleet_name)
    try:
        with FaultProxy(proxy.url) as fp:
            apply = start_apply(fleet, proxy.env(), fp.url)
            fp.on_forwarded_write(3, lambda: apply.send_signal(signum))
            out, err = apply.communicate(timeout=120)
        assert apply.returncode == code, err
        assert f"{signum.name}: no new write starts" in err
        assert "Traceback" not in err
        counts = re.search(r"(\d+) done, (\d+) failed, (\d+) unconfirmed, 0 skipped, "
                           r"(\d+) not started", out)  # fmt: skip
        assert counts is not None, out
        done, failed, unconfirmed, unstarted = (int(n) for n in counts.groups())
        assert failed == 0 and done >= 3 and unstarted > 0
        assert done + unconfirmed + unstarted == HOSTS
        # Each change is named with what became of it.
        assert len(re.findall(r"^  not started +create ", out, re.M)) == unstarted
        assert len(re.findall(r"^  done +create ", out, re.M)) == done
        # Nothing was written after the signal: the proxy lists what the account says is done
        # (a write in flight at the signal is done or unconfirmed, never more).
        assert done <= listed(proxy, model) <= done + unconfirmed
        again = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
        assert again.code == 0, again.err
        assert listed(proxy, model) == HOSTS
        assert fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode"], proxy.env()).code == 0
    finally:
        remove_fleet(proxy, fleet_name)


def test_a_second_signal_stops_at_once_with_one_line(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    fleet, model = fleet_file(tmp_path, fleet_name)
    first_said = threading.Event()
    lines: list[str] = []

    def read_stderr(stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line)
            if "SIGINT: no new write starts" in line:
                first_said.set()

    try:
        with FaultProxy(proxy.url) as fp:
            # The 4th create is taken by the proxy and its answer held: a write in flight that
            # the settling waits for while the second signal comes.
            fp.add_rule("POST", r"/model/new", Fault.forward_then_delay(60),
                        body_regex=r'"fleet_sync_host":\s*"h03"')  # fmt: skip
            apply = start_apply(fleet, proxy.env(), fp.url)
            reader = threading.Thread(target=read_stderr, args=(apply.stderr,), daemon=True)
            reader.start()
            fp.on_forwarded_write(4, lambda: apply.send_signal(signal.SIGINT))
            assert first_said.wait(120), "".join(lines)
            apply.send_signal(signal.SIGTERM)
            assert apply.stdout is not None
            out = apply.stdout.read()
            apply.wait(timeout=60)
            reader.join(timeout=60)
        assert apply.returncode == 130, "".join(lines)
        assert lines[-1].startswith("error: SIGTERM again: stopped at once"), lines
        assert "not started" not in out  # no account: the second signal ended it
        assert "Traceback" not in "".join(lines)
        again = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
        assert again.code == 0, again.err
        assert listed(proxy, model) == HOSTS
    finally:
        remove_fleet(proxy, fleet_name)
