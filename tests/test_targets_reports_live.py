"""What a run over targets tells on stderr, in the job summary and on stdout, on two real LiteLLM
proxies behind recording proxies (tests/test_targets_live.py's Pair): progress lines carry the
target (attack F5), a held target is in the job summary and the report files (F7), drift --fix
--format json prints one JSON document (F8.8, with and without targets), and an update answered
500 that LiteLLM never received is not said to be stored (F8.8)."""

from __future__ import annotations

import json
from pathlib import Path

from .support.fake_github import FakeGitHub
from .support.faultproxy import Fault
from .support.proxyharness import Proxy, fleet_sync, remove_fleet, write_fleet
from .test_targets_live import ONE_HOST, OUTPUTS, Pair, pair, write

__all__ = ["pair"]  # the fixture, shared


def progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "fleet-sync: " in line]


def model_with_rpm(fleet: str, rpm: int) -> dict[str, object]:
    return {f"{fleet}-m": {"served_model": "org/m", "litellm_params": {"rpm": rpm},
                           "hosts": [ONE_HOST]}}  # fmt: skip


def test_a_held_target_is_in_the_summary_and_progress_names_its_target(
    pair: Pair, fleet_name: str, tmp_path: Path, fake_github: FakeGitHub
) -> None:
    write(pair.fleet_file, fleet_name, model_with_rpm(fleet_name, 100))
    assert pair.run("apply").code == 0
    write(pair.fleet_file, fleet_name, model_with_rpm(fleet_name, 200))
    # staging answers 500 to every update, never passing it on: LiteLLM receives none.
    pair.staging_fp.add_rule("PATCH", r"^/model/.*/update", Fault.fail_500(), times=None)
    summary, reports = tmp_path / "summary.md", tmp_path / "reports"
    summary.touch()
    pair.extra = fake_github.env(
        GITHUB_STEP_SUMMARY=str(summary), FLEET_SYNC_REPORT_DIR=str(reports), GITHUB_SHA="a" * 40
    )
    pair.prod_fp.clear_log()
    done = pair.run("apply", "--github-comment", "--confirm-timeout", "2")
    assert done.code == 4, done.out + done.err
    lines = progress_lines(done.err)
    assert "[staging] fleet-sync: update: 1 to write" in lines, done.err
    assert all(line.startswith("[staging] ") for line in lines), done.err
    assert (
        "the update did not load (every pod still lists the previous values after 2s)" in done.out
    )
    assert "LiteLLM may have stored it without loading it (inferred from the read-back" in done.out
    assert "LiteLLM stored the update" not in done.out
    assert pair.writes(pair.prod_fp) == []
    text = summary.read_text(encoding="utf-8")
    assert "prod: held: staging did not converge; nothing was sent to it." in text
    held = json.loads((reports / f"{fleet_name}.prod.apply.json").read_text(encoding="utf-8"))
    assert held == {"fleet": fleet_name, "target": "prod", "exit": 4,
                    "held": "held: staging did not converge"}  # fmt: skip
    OUTPUTS.append(text)


def test_drift_fix_json_over_targets_is_one_document(pair: Pair, fleet_name: str) -> None:
    write(pair.fleet_file, fleet_name, model_with_rpm(fleet_name, 100))
    assert pair.run("apply").code == 0
    write(pair.fleet_file, fleet_name, model_with_rpm(fleet_name, 200))
    fixed = pair.run("drift", "--fix", "--format", "json")
    assert fixed.code == 0, fixed.out + fixed.err
    document = json.loads(fixed.out)  # the drift found, nothing after it
    assert [t["target"] for t in document["targets"]] == ["staging", "prod"]
    lines = progress_lines(fixed.err)
    assert "[staging] fleet-sync: update: 1 to write" in lines
    assert "[prod] fleet-sync: update: 1 to write" in lines
    assert all(line.startswith(("[staging] ", "[prod] ")) for line in lines), fixed.err


def test_drift_fix_json_without_targets_is_one_document(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    path = tmp_path / "fleet.yaml"
    model = {f"{fleet_name}-m": {"hosts": {"a": "http://127.0.0.1:9/v1"}}}
    write_fleet(path, fleet_name, model)
    try:
        assert fleet_sync(["apply", "-f", str(path)], proxy.env()).code == 0
        write_fleet(path, fleet_name, model, defaults={"litellm_params": {"rpm": 5}})
        fixed = fleet_sync(["drift", "--fix", "--format", "json", "-f", str(path)], proxy.env())
        assert fixed.code == 0, fixed.out + fixed.err
        assert [c["action"] for c in json.loads(fixed.out)["changes"]] == ["update"]
        assert "1 done" in fixed.err  # the result is told on stderr
    finally:
        remove_fleet(proxy, fleet_name)
