"""The host-moved workflow's own `run:` scripts, executed as GitHub Actions would (payload in
the event file, `${{ … }}` filled from it, bash -e, one step after another, a failing step
ending the job) against the real LiteLLM and the fake GitHub: branch, commit, pull request and a
plan comment with exactly one in-place update; an injection payload stops at set-host."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from sync.host_moved import branch_name
from sync.render import route_id

from .fake_github import FakeGitHub
from .keys import read_only_key
from .proxyharness import REPO, Proxy, fleet_sync
from .upstream import Upstream, silent_address

SERVED = "Qwen/Qwen3-8B"
# propose --probe asks every host's /models: every address here is on 127.0.0.1.
OLD = silent_address()
OTHER = silent_address()


@pytest.fixture(scope="module")
def new() -> Iterator[str]:
    """The pod's new address: an upstream serving the declared model."""
    upstream = Upstream("new", [SERVED]).start()
    yield upstream.url
    upstream.stop()


@pytest.fixture(scope="module")
def newer() -> Iterator[str]:
    upstream = Upstream("newer", [SERVED]).start()
    yield upstream.url
    upstream.stop()


FLEET = """\
# yaml-language-server: $schema=schema/fleet.schema.json
version: 1
fleet: {fleet}
defaults:
  litellm_params: {{timeout: 600}}   # shared by every host
models:
  {model}:
    served_model: {served}
    hosts:
      - name: a            # RunPod pod, recreated often
        api_base: {old}
      - name: b
        api_base: "{other}"
"""


def steps() -> list[dict[str, Any]]:
    doc = yaml.safe_load((REPO / ".github" / "workflows" / "host-moved.yml").read_text())
    (job,) = doc["jobs"].values()
    return [s for s in job["steps"] if "fleet-sync " in str(s.get("run", ""))]


def evaluate(expression: str, context: dict[str, Any]) -> str:
    """`a.b.c || d.e` as GitHub evaluates it: the first operand that is set and not empty."""
    for operand in expression.split("||"):
        value: Any = context
        for part in operand.strip().split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value not in (None, ""):
            return value if isinstance(value, str) else json.dumps(value)
    return ""


def run_job(context: dict[str, Any], env: dict[str, str], cwd: Path) -> list[tuple[int, str]]:
    """Each fleet-sync step in order until one fails; (exit code, output) per step run."""
    results = []

    def fill(text: str) -> str:
        return re.sub(r"\$\{\{\s*(.+?)\s*\}\}", lambda m: evaluate(m.group(1), context), text)

    for step in steps():
        step_env = {k: fill(str(v)) for k, v in step.get("env", {}).items()}
        assert "${{" not in step["run"]  # nothing from the payload is pasted into the script
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", step["run"]],
            env={**env, **step_env},
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        results.append((done.returncode, done.stdout + done.stderr))
        if done.returncode:
            break
    return results


class Repo:
    """A checkout of main with fleet.yaml, known to the fake GitHub as the same commit."""

    def __init__(self, tmp: Path, github: FakeGitHub, fleet: str, model: str) -> None:
        self.git = git.Repo.init(tmp / "repo", initial_branch="main")
        with self.git.config_writer() as config:
            config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
        self.work = Path(self.git.working_tree_dir or "")
        self.fleet = self.work / "fleet.yaml"
        self.original = FLEET.format(
            fleet=fleet, model=model, old=OLD, other=OTHER, served=SERVED
        ).encode()
        self.fleet.write_bytes(self.original)
        self.git.index.add(["fleet.yaml"])
        self.head = self.git.index.commit("fleet").hexsha
        github.git.seed_commit(self.head, {"fleet.yaml": self.original}, "main")
        self.github = github

    def fresh_checkout(self) -> None:
        """Every workflow run starts from a clean checkout of main."""
        self.fleet.write_bytes(self.original)

    def dispatch(
        self, proxy: Proxy, tmp: Path, payload: dict[str, str], automerge: bool = False
    ) -> list[tuple[int, str]]:
        event = {"action": "host-moved", "client_payload": payload}
        (tmp / "event.json").write_text(json.dumps(event), encoding="utf-8")
        (tmp / "summary.md").touch()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM_", "GITHUB_"))}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env.update(
            self.github.env(
                GITHUB_EVENT_PATH=str(tmp / "event.json"),
                GITHUB_EVENT_NAME="repository_dispatch",
                GITHUB_REF_NAME="main",
                GITHUB_SHA=self.head,
                GITHUB_STEP_SUMMARY=str(tmp / "summary.md"),
            ),
            NO_COLOR="1",
        )
        env.pop("GITHUB_TOKEN")
        context = {
            "github": {"event": event, "token": self.github.token},
            "inputs": {},
            "secrets": {
                "LITELLM_PROXY_URL": proxy.url,
                "LITELLM_PROXY_READ_API_KEY": read_only_key(proxy),  # propose only reads
            },
            "vars": {"FLEET_SYNC_AUTOMERGE_HOST_MOVES": "true"} if automerge else {},
        }
        self.fresh_checkout()
        return run_job(context, env, self.work)


def apply_base(proxy: Proxy, repo: Repo) -> None:
    done = fleet_sync(["apply", "-f", str(repo.fleet)], proxy.env())
    assert done.code == 0, done.out + done.err


def plan_comment(github: FakeGitHub, number: int) -> str:
    (comment,) = github.comments_on(number)
    body: str = comment["body"]
    assert body.startswith("<!-- fleet-sync:plan fleet=")
    return body


def test_dispatch_opens_then_updates_one_pull_request_with_one_in_place_update(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str, newer: str
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model)
    apply_base(proxy, repo)

    results = repo.dispatch(proxy, tmp_path, {"model": model, "host": "a", "api_base": new})
    assert [code for code, _ in results] == [0, 0], results

    branch = branch_name(model, "a")
    commit = fake_github.git.refs[branch]
    assert fake_github.git.commits[commit]["parents"] == [repo.head]
    expected = repo.original.replace(OLD.encode(), new.encode())
    assert fake_github.git.file_at(commit, "fleet.yaml") == expected  # only the address moved
    (pull,) = fake_github.git.pulls()
    assert (pull["state"], pull["head"]["ref"], pull["base"]["ref"]) == ("open", branch, "main")
    assert pull["title"] == f"Move {model}/a to {new}"
    body = plan_comment(fake_github, pull["number"])
    assert "**+0 create, ~1 update, -0 prune**" in body
    assert "This PR changes (1)" in body
    assert f'litellm_params.api_base: "{OLD}" -> "{new}"' in body
    assert body.count("~ update ") == 1
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == OLD  # no apply before merge

    # The pod moves again before anyone merged: the same pull request, moved branch, one comment.
    results = repo.dispatch(proxy, tmp_path, {"model": model, "host": "a", "api_base": newer})
    assert [code for code, _ in results] == [0, 0], results
    (again,) = fake_github.git.pulls()
    assert again["number"] == pull["number"] and again["state"] == "open"
    commit = fake_github.git.refs[branch]
    assert fake_github.git.commits[commit]["parents"] == [repo.head]
    assert fake_github.git.file_at(commit, "fleet.yaml") == repo.original.replace(
        OLD.encode(), newer.encode()
    )
    body = plan_comment(fake_github, pull["number"])
    assert f'litellm_params.api_base: "{OLD}" -> "{newer}"' in body
    assert "**+0 create, ~1 update, -0 prune**" in body
    assert "pull request" in results[1][1] and "updated" in results[1][1]


def test_automerge_merges_a_pure_move_and_starts_apply_which_moves_the_route(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model)
    apply_base(proxy, repo)

    results = repo.dispatch(
        proxy, tmp_path, {"model": model, "host": "a", "api_base": new}, automerge=True
    )
    assert [code for code, _ in results] == [0, 0], results
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "closed" and pull["merged_at"]
    assert fake_github.git.dispatches == [{"workflow": "apply.yml", "ref": "main"}]
    merged = fake_github.git.refs["main"]
    assert fake_github.git.file_at(merged, "fleet.yaml") == repo.original.replace(
        OLD.encode(), new.encode()
    )

    # The dispatched apply.yml runs on main as merged: the route moves in place.
    repo.fleet.write_bytes(fake_github.git.file_at(merged, "fleet.yaml") or b"")
    done = fleet_sync(["apply", "-f", str(repo.fleet)], proxy.env())
    assert done.code == 0, done.out + done.err
    assert "~1 update, -0 prune" in done.out
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == new


def test_automerge_leaves_a_plan_with_other_changes_for_review(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model)
    apply_base(proxy, repo)
    with proxy.http() as http:  # someone edits host b by hand: drift the plan would repair
        answer = http.patch(
            f"/model/{route_id(fleet_name, model, 'b')}/update", json={"litellm_params": {"rpm": 7}}
        )
        assert answer.status_code == 200, answer.text

    results = repo.dispatch(
        proxy, tmp_path, {"model": model, "host": "a", "api_base": new}, automerge=True
    )
    assert [code for code, _ in results] == [0, 0], results
    assert "not merged automatically: the plan changes 1 other route(s) too" in results[1][1]
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "open" and not pull["merged_at"]
    assert fake_github.git.dispatches == []
    assert "~2 update" in plan_comment(fake_github, pull["number"])


def test_injection_payloads_are_refused_by_set_host_and_nothing_runs(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str, new: str
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model)
    pwned = tmp_path / "pwned"
    for payload in [
        {"model": model, "host": f"$(touch {pwned})", "api_base": new},
        {"model": model, "host": "a", "api_base": f'http://x"; touch {pwned}; echo "'},
        {"model": model, "host": "a", "api_base": f"http://x/`touch {pwned}`"},
        {"model": "--file=/etc/passwd", "host": "a", "api_base": new},
        {"model": model, "host": "a\n::error::injected", "api_base": new},
    ]:
        results = repo.dispatch(proxy, tmp_path, payload)
        assert len(results) == 1, payload  # set-host failed: the job ends there
        code, output = results[0]
        assert code == 1, (payload, output)
        assert "was not changed" in output
        assert "\n::error::injected" not in output  # untrusted text is shown escaped
        assert not pwned.exists()
        assert repo.fleet.read_bytes() == repo.original
    assert fake_github.writes() == []
    assert fake_github.calls == []


def test_automerge_waits_when_the_new_address_serves_another_model(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model)
    apply_base(proxy, repo)
    wrong = Upstream("wrong", ["org/something-else"]).start()
    try:
        results = repo.dispatch(
            proxy, tmp_path, {"model": model, "host": "a", "api_base": wrong.url}, automerge=True
        )
    finally:
        wrong.stop()
    assert [code for code, _ in results] == [0, 0], results
    assert "not merged automatically: the new address does not serve the model" in results[1][1]
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "open"
    assert fake_github.git.dispatches == []
    assert "serves something else" in plan_comment(fake_github, pull["number"])
