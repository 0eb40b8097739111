"""The host-moved workflows run as GitHub Actions would run them: the dispatch payload in the
event, `${{ … }}` filled from it, the action's composite steps under bash
(tests/support/actionrunner.py; fleet-sync installed from the action's own checkout, not editable),
against the real LiteLLM and the fake GitHub: branch, commit, pull request and a plan comment with
exactly one in-place update, for this repository's own workflow (`uses: ./`) and the example config
repository's (`uses: fleet-sync-dev/fleet-sync@v1`). The job holds only a read-only key made through
the proxy's key API. An injection payload stops at set-host."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from sync.core.render import route_id
from sync.gitops.host_moved import branch_name

from .support.actionrunner import JobRun, Runner
from .support.fake_github import FakeGitHub
from .support.keys import read_only_key
from .support.proxyharness import Proxy, crashed, fleet_sync
from .support.upstream import Upstream, silent_address
from .test_workflows import SETS, path_of

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
# yaml-language-server: $schema=https://raw.githubusercontent.com/fleet-sync-dev/fleet-sync/v1/schema/fleet.schema.json
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


@pytest.fixture(scope="module")
def installed() -> dict[str, dict[str, str]]:
    """The action's install step runs for real in the first job; later jobs reuse its venv."""
    return {}


@pytest.fixture(scope="module")
def read_key(proxy: Proxy) -> str:
    return read_only_key(proxy)  # propose only reads


def runner_path(tmp: Path) -> str:
    """PATH as setup-python leaves it, with no fleet-sync but the one the action installs."""
    python = tmp / "python-bin"
    python.mkdir(exist_ok=True)
    if not (python / "python").exists():
        (python / "python").symlink_to(sys.executable)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "fleet-sync").exists()]
    return os.pathsep.join([str(python), *path])


class Repo:
    """A checkout of main with fleet.yaml, known to the fake GitHub as the same commit."""

    def __init__(
        self,
        tmp: Path,
        github: FakeGitHub,
        fleet: str,
        model: str,
        read_key: str,
        installed: dict[str, dict[str, str]],
    ) -> None:
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
        self.read_key, self.installed = read_key, installed
        self.runs = 0

    def fresh_checkout(self) -> None:
        """Every workflow run starts from a clean checkout of main."""
        self.fleet.write_bytes(self.original)

    def dispatch(
        self,
        proxy: Proxy,
        tmp: Path,
        payload: dict[str, str],
        *,
        automerge: bool = False,
        which: str = "project",
    ) -> JobRun:
        """One run of the workflow's job on a fresh checkout of main."""
        self.runs += 1
        temp = tmp / f"runner-temp-{self.runs}"
        temp.mkdir()
        event = {"action": "host-moved", "client_payload": payload}
        (temp / "event.json").write_text(json.dumps(event), encoding="utf-8")
        drop = ("LITELLM_PROXY_", "GITHUB_", "FLEET_SYNC_", "RUNNER_", "VIRTUAL_ENV")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(
            self.github.env(
                GITHUB_EVENT_PATH=str(temp / "event.json"),
                GITHUB_EVENT_NAME="repository_dispatch",
                GITHUB_REF_NAME="main",
                GITHUB_SHA=self.head,
                GITHUB_RUN_ATTEMPT="1",
            ),
            PATH=runner_path(tmp),
            NO_COLOR="1",
        )
        env.pop("GITHUB_TOKEN")  # the action passes it only to its fleet-sync step
        contexts = {f"github.event.client_payload.{k}": v for k, v in payload.items()}
        contexts.update(
            {
                "github.token": self.github.token,
                "secrets.LITELLM_PROXY_URL": proxy.url,
                "secrets.LITELLM_PROXY_READ_API_KEY": self.read_key,
            }
        )
        if automerge:
            contexts["vars.FLEET_SYNC_AUTOMERGE_HOST_MOVES"] = "true"
        self.fresh_checkout()
        run = Runner(self.work, temp, env, contexts, reuse=self.installed).run_job(
            path_of(which, "host-moved.yml")
        )
        assert not crashed(run.stderr), run.stderr
        assert proxy.api_key not in run.stdout + run.stderr + run.summary
        return run


def as_apply_yml(proxy: Proxy, repo: Repo) -> dict[str, str]:
    """apply.yml's environment: the proxy, and the repository that tags the routes it writes."""
    return {**proxy.env(), "GITHUB_REPOSITORY": repo.github.repo}


def apply_base(proxy: Proxy, repo: Repo) -> None:
    done = fleet_sync(["apply", "-f", str(repo.fleet)], as_apply_yml(proxy, repo))
    assert done.code == 0, done.out + done.err


def proposed(run: JobRun) -> str:
    """The job's output, once it is known to have proposed (result `proposed`)."""
    output = run.stdout + run.stderr
    assert run.success and run.outputs["result"] == "proposed", output
    return output


def plan_comment(github: FakeGitHub, number: int) -> str:
    (comment,) = github.comments_on(number)
    body: str = comment["body"]
    assert body.startswith("<!-- fleet-sync:plan fleet=")
    return body


@pytest.mark.parametrize("which", SETS)
def test_dispatch_opens_then_updates_one_pull_request_with_one_in_place_update(
    which: str,
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    new: str,
    newer: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
) -> None:
    fleet_name = f"{which}-{fleet_name}"  # the two cases share a proxy
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model, read_key, installed)
    apply_base(proxy, repo)

    moved = {"model": model, "host": "a", "api_base": new}
    run = repo.dispatch(proxy, tmp_path, moved, which=which)
    proposed(run)
    # The action's outputs count the plan propose commented (its report file, uploaded).
    assert (run.outputs["create"], run.outputs["update"], run.outputs["prune"]) == ("0", "1", "0")
    assert run.outputs["plan-hash"].startswith("sha256:") and len(run.uploads) == 1

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
    output = proposed(
        repo.dispatch(
            proxy, tmp_path, {"model": model, "host": "a", "api_base": newer}, which=which
        )
    )
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
    assert f"pull request #{pull['number']} updated" in output


def test_automerge_merges_a_pure_move_and_starts_apply_which_moves_the_route(
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
    new: str,
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model, read_key, installed)
    apply_base(proxy, repo)

    proposed(
        repo.dispatch(
            proxy, tmp_path, {"model": model, "host": "a", "api_base": new}, automerge=True
        )
    )
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "closed" and pull["merged_at"]
    assert fake_github.git.dispatches == [{"workflow": "apply.yml", "ref": "main"}]
    merged = fake_github.git.refs["main"]
    assert fake_github.git.file_at(merged, "fleet.yaml") == repo.original.replace(
        OLD.encode(), new.encode()
    )

    # The dispatched apply.yml runs on main as merged: the route moves in place.
    repo.fleet.write_bytes(fake_github.git.file_at(merged, "fleet.yaml") or b"")
    done = fleet_sync(["apply", "-f", str(repo.fleet)], as_apply_yml(proxy, repo))
    assert done.code == 0, done.out + done.err
    assert "~1 update, -0 prune" in done.out
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == new


def test_automerge_leaves_a_plan_with_other_changes_for_review(
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
    new: str,
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model, read_key, installed)
    apply_base(proxy, repo)
    with proxy.http() as http:  # someone edits host b by hand: drift the plan would repair
        answer = http.patch(
            f"/model/{route_id(fleet_name, model, 'b')}/update",
            json={"litellm_params": {"timeout": 7}},  # a key fleet.yaml sets
        )
        assert answer.status_code == 200, answer.text

    output = proposed(
        repo.dispatch(
            proxy, tmp_path, {"model": model, "host": "a", "api_base": new}, automerge=True
        )
    )
    assert "not merged automatically: the plan changes 1 other route(s) too" in output
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "open" and not pull["merged_at"]
    assert fake_github.git.dispatches == []
    assert "~2 update" in plan_comment(fake_github, pull["number"])


def test_injection_payloads_are_refused_by_set_host_and_nothing_runs(
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
    new: str,
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model, read_key, installed)
    pwned = tmp_path / "pwned"
    for payload in [
        {"model": model, "host": f"$(touch {pwned})", "api_base": new},
        {"model": model, "host": "a", "api_base": f'http://x"; touch {pwned}; echo "'},
        {"model": model, "host": "a", "api_base": f"http://x/`touch {pwned}`"},
        {"model": "--file=/etc/passwd", "host": "a", "api_base": new},
        {"model": model, "host": "a\n::error::injected", "api_base": new},
    ]:
        run = repo.dispatch(proxy, tmp_path, payload)
        output = run.stdout + run.stderr
        assert not run.success and run.outputs["result"] == "error", (payload, output)
        assert "was not changed" in output  # set-host failed: the job ends there
        assert "\n::error::injected" not in output  # untrusted text is shown escaped
        assert not pwned.exists()
        assert repo.fleet.read_bytes() == repo.original
    assert fake_github.writes() == []
    assert fake_github.calls == []


def test_a_payload_address_no_client_can_reach_stops_at_set_host_before_github(
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
) -> None:
    """Found by the outside attack: such an address passed set-host, the pull request was
    opened, then the probe raised (httpx or the resolver cannot build the request) and the job
    failed; a payload with terminal escapes was printed raw in set-host's summary line. Each is
    refused by set-host (sync/fleet/addresses.py): the job ends there, GitHub is never called, and
    nothing unprintable reaches the log."""
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model, read_key, installed)
    for api_base in [
        "http://xn--/v1",
        "http://xn--a.com/v1",
        "http://a\u00ad.com/v1",
        "http://ex\u200dample.com/v1",
        "http://\u2488x/v1",
        "http://[v1.abc]/v1",
        f"http://{'a' * 64}.example/v1",
        "http://127.0.0.1:2/v1\x1b]0;pwned\x07",
    ]:
        run = repo.dispatch(proxy, tmp_path, {"model": model, "host": "a", "api_base": api_base})
        output = run.stdout + run.stderr
        assert not run.success and run.outputs["result"] == "error", (api_base, output)
        assert "--api-base: " in output and "was not changed" in output, output
        assert all(c.isprintable() or c in "\n\t" for c in output), ascii(output)
        assert repo.fleet.read_bytes() == repo.original
    assert fake_github.writes() == []
    assert fake_github.calls == []


def test_automerge_waits_when_the_new_address_serves_another_model(
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    read_key: str,
    installed: dict[str, dict[str, str]],
) -> None:
    model = f"{fleet_name}-m"
    repo = Repo(tmp_path, fake_github, fleet_name, model, read_key, installed)
    apply_base(proxy, repo)
    wrong = Upstream("wrong", ["org/something-else"]).start()
    try:
        output = proposed(
            repo.dispatch(
                proxy,
                tmp_path,
                {"model": model, "host": "a", "api_base": wrong.url},
                automerge=True,
            )
        )
    finally:
        wrong.stop()
    assert "not merged automatically: the new address does not serve the model" in output
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "open"
    assert fake_github.git.dispatches == []
    assert "serves something else" in plan_comment(fake_github, pull["number"])
