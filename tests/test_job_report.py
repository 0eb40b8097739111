"""What a GitHub job keeps besides the comment: a step summary that stays under GitHub's 1 MiB
(with an honest note), the full report as files for the artifact, and result comments that keep
earlier runs. Plain data and the fake GitHub; no proxy needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import render
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.github.actions import SUMMARY_LIMIT, GitHubConfig, write_step_summary
from sync.github.artifact import ReportDirError, ReportFiles
from sync.github.comment import GITHUB_COMMENT_LIMIT, HEADER_RESERVE, RUN_SEPARATOR, add_run
from sync.gitops import loops as gitops

from .support.fake_github import FakeGitHub


def fleet_of(routes: int, port: int) -> Fleet:
    hosts = [
        {"name": f"h{i}", "api_base": f"http://10.0.{i // 250}.{i % 250}:{port}/v1"}
        for i in range(routes)
    ]
    doc = {"version": 1, "fleet": "big", "models": {"m": {"served_model": "org/m", "hosts": hosts}}}
    return fleet_from_doc(parse_yaml(json.dumps(doc), "fleet.yaml"), "fleet.yaml")


def big_plan(routes: int) -> Plan:
    """Every host moved: `routes` in-place updates."""
    fleet = fleet_of(routes, 8001)
    return make_plan(fleet, render(fleet), render(fleet_of(routes, 8000)))


def test_summary_is_capped_with_a_note_and_counts_bytes(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("x" * 900 + "\n", encoding="utf-8")  # an earlier fleet's summary
    config = GitHubConfig(token="t", repository="a/b", step_summary=str(summary))
    text = "".join(f"| ✅ done | route {i} |\n" for i in range(400))  # multi-byte characters
    assert not write_step_summary(config, text, note="see the artifact", limit=4096)
    written = summary.read_bytes()
    assert len(written) < 4096
    assert written.decode().endswith("see the artifact\n")
    assert "truncated:" in written.decode()
    assert write_step_summary(config, "short\n", limit=10**6)  # fits: written whole


def test_a_5200_route_drift_report_stays_under_1_mib_and_is_kept_whole_as_a_file(
    tmp_path: Path, fake_github: FakeGitHub
) -> None:
    plan = big_plan(5200)
    summary = tmp_path / "summary.md"
    environ = fake_github.env(
        GITHUB_STEP_SUMMARY=str(summary),
        RUNNER_TEMP=str(tmp_path),
        FLEET_SYNC_ARTIFACT="fleet-sync-drift-drift-1",
    )
    assert "opened" in gitops.report_drift(plan, environ)
    full = (tmp_path / "fleet-sync" / "big.drift.md").read_text(encoding="utf-8")
    assert len(full.encode()) > SUMMARY_LIMIT  # GitHub would drop a summary this big
    shown = summary.read_text(encoding="utf-8")
    assert len(shown.encode()) < SUMMARY_LIMIT
    note = "the full drift report is `big.drift.md` in the workflow artifact "
    note += "`fleet-sync-drift-drift-1`"
    assert shown.rstrip().endswith(note)
    saved = json.loads((tmp_path / "fleet-sync" / "big.drift.json").read_text(encoding="utf-8"))
    assert saved["hash"] == plan.hash and len(saved["changes"]) == 5200
    (issue,) = [i for i in fake_github.issues.values() if "pull_request" not in i]
    assert len(issue["body"]) < GITHUB_COMMENT_LIMIT and note in issue["body"]


def test_report_files_say_where_they_are(tmp_path: Path) -> None:
    plan = big_plan(1)
    files = ReportFiles.from_env({"FLEET_SYNC_REPORT_DIR": str(tmp_path / "r")})
    where = files.save("big", "plan", "# plan\n", plan.unredacted_json())
    assert where == f"the full plan was written to `{tmp_path / 'r' / 'big.plan.md'}` on the runner"
    assert ReportFiles.from_env({}).directory is None
    blocked = tmp_path / "file"
    blocked.write_text("", encoding="utf-8")
    with pytest.raises(ReportDirError) as err:
        ReportFiles(blocked / "sub", None).save("big", "plan", "# plan\n", {})
    message = str(err.value)
    assert "\n" not in message and "FLEET_SYNC_REPORT_DIR names" in message
    assert "set FLEET_SYNC_REPORT_DIR to a writable directory, or unset it" in message
    runner = ReportFiles.from_env({"RUNNER_TEMP": str(blocked)})
    with pytest.raises(ReportDirError, match=r"^RUNNER_TEMP names"):
        runner.save("big", "plan", "# plan\n", {})


def test_add_run_keeps_earlier_runs_newest_first() -> None:
    first = "### apply: applied\n\n2 done\n"
    body = add_run(first, None)
    assert body == first
    rerun = "### apply: nothing to do\n"
    body = add_run(rerun, body)
    assert body == rerun + RUN_SEPARATOR + first
    assert add_run(rerun, body) == body  # the same run again adds nothing
    legacy = "### apply: applied (a comment from before runs were kept)\n"
    assert add_run(rerun, legacy).endswith(legacy)


def test_add_run_drops_the_oldest_runs_to_stay_under_the_limit() -> None:
    limit = HEADER_RESERVE + 1000
    runs = [f"### run {i}\n" + "x" * 300 + "\n" for i in range(5)]
    body: str | None = None
    for run in runs:
        body = add_run(run, body, limit=limit)
    assert body is not None and len(body) < limit - HEADER_RESERVE
    assert body.startswith("### run 4") and "### run 2" in body and "### run 0" not in body
