"""Runs a workflow job the way a GitHub-hosted runner does, for the tests.

`run:` steps go through `bash --noprofile --norc -eo pipefail <script file>` (GitHub's `shell:
bash`, `bash` looked up on PATH with the GITHUB_PATH additions first, as the runner does) with
`${{ … }}` filled in first (`a || b` too: the first operand set and not empty), and each step
gets its own GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY files, read back as
the runner does (GITHUB_ENV's variables reach later steps, under their own `env:`). A step using
this repository's action (`./` in the project's workflows, `fleet-sync-dev/fleet-sync@v1` in the
example config repository) runs action.yml's composite steps with its inputs (defaults, then
`with:` filled in the caller's context), GITHUB_ACTION_PATH at this checkout, and the calling
step's `env:`. The steps that need the internet stand in: actions/checkout does nothing (the
test prepares the workspace), actions/setup-python finds `python` already on PATH,
actions/upload-artifact records what it would upload. An expression the runner would not know
fails the test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
THIS_ACTION = ("./", "fleet-sync-dev/fleet-sync@v1")
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


@dataclass
class StepRun:
    name: str
    outcome: str  # success | failure | skipped
    code: int = 0
    outputs: dict[str, str] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""


@dataclass
class JobRun:
    steps: list[StepRun]
    outputs: dict[str, str]  # the action step's outputs (action.yml `outputs:`)
    uploads: list[dict[str, str]]  # actions/upload-artifact `with:` as evaluated
    summary: str  # every step's summary, in order

    @property
    def success(self) -> bool:
        return all(s.outcome != "failure" for s in self.steps)

    @property
    def stderr(self) -> str:
        return "".join(s.stderr for s in self.steps)

    @property
    def stdout(self) -> str:
        return "".join(s.stdout for s in self.steps)


@dataclass
class Runner:
    """One job's runner: `env` is the machine's environment (GITHUB_* variables included),
    `contexts` maps expressions (`secrets.X`, `github.token`, …) to their values."""

    workspace: Path
    temp: Path  # RUNNER_TEMP
    env: dict[str, str]
    contexts: dict[str, str]
    # The install step runs for real once per test session; later jobs reuse the venv it made
    # (share one dict between runners). Keyed by step name: the step's outputs.
    reuse: dict[str, dict[str, str]] = field(default_factory=dict)
    _path: list[str] = field(default_factory=list)  # GITHUB_PATH additions so far
    _env: dict[str, str] = field(default_factory=dict)  # GITHUB_ENV additions so far
    _count: int = 0
    _summary: list[str] = field(default_factory=list)
    _uploads: list[dict[str, str]] = field(default_factory=list)

    def run_job(self, workflow: Path, job_id: str | None = None) -> JobRun:
        """The job `job_id` of the workflow (default: its first); what it `needs:` is the
        test's to run first."""
        doc = yaml.safe_load(workflow.read_text(encoding="utf-8"))
        job_id = job_id or next(iter(doc["jobs"]))
        job = doc["jobs"][job_id]
        env = {**self.env, **doc.get("env", {}), **job.get("env", {})}
        env.update(
            GITHUB_JOB=job_id, RUNNER_TEMP=str(self.temp), GITHUB_WORKSPACE=str(self.workspace)
        )
        steps: list[StepRun] = []
        outputs: dict[str, str] = {}
        for step in job["steps"]:
            uses = str(step.get("uses", ""))
            failed = any(s.outcome == "failure" for s in steps)
            if not self._should_run(step.get("if"), {}, failed):
                steps.append(StepRun(str(step.get("name", uses)), "skipped"))
            elif uses in THIS_ACTION:
                run, outputs = self._action(step, env, failed)
                steps += run
            elif uses.startswith("actions/checkout@"):
                steps.append(StepRun("checkout", "success"))
            else:
                steps.append(self._run(step, env, {}, {}))
        return JobRun(steps, outputs, list(self._uploads), "".join(self._summary))

    # -- composite action ----------------------------------------------------------------

    def _action(
        self, call: Mapping[str, Any], job_env: Mapping[str, str], failed: bool
    ) -> tuple[list[StepRun], dict[str, str]]:
        action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
        assert action["runs"]["using"] == "composite"
        context = {**self.contexts}
        unknown = set(call.get("with") or {}) - set(action["inputs"])
        assert not unknown, f"inputs the action does not declare: {unknown}"
        for name, spec in action["inputs"].items():
            if name in (call.get("with") or {}):  # the caller's expressions, in its context
                context[f"inputs.{name}"] = self._fill(str(call["with"][name]), self.contexts)
            else:
                context[f"inputs.{name}"] = self._fill(str(spec.get("default", "")), context)
        call_env = self._fill_map(call.get("env") or {}, context)
        call_env["GITHUB_ACTION_PATH"] = str(REPO)
        runs: list[StepRun] = []
        for step in action["runs"]["steps"]:
            failed = failed or any(s.outcome == "failure" for s in runs)
            uses = str(step.get("uses", ""))
            if not self._should_run(step.get("if"), context, failed):
                runs.append(StepRun(str(step.get("name", uses)), "skipped"))
            elif uses.startswith("actions/setup-python@"):
                runs.append(StepRun("setup-python", "success"))
            elif uses.startswith("actions/upload-artifact@"):
                self._uploads.append(self._fill_map(step.get("with") or {}, context))
                runs.append(StepRun("upload-artifact", "success"))
            else:
                runs.append(self._run(step, job_env, context, call_env))
            if step.get("id"):
                made = runs[-1].outputs.items()
                context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in made})
        outputs = {k: self._fill(str(v["value"]), context) for k, v in action["outputs"].items()}
        return runs, outputs

    @staticmethod
    def _should_run(condition: Any, context: Mapping[str, str], failed: bool) -> bool:
        """The `if:` forms the action uses: always(), success(), `x != ''`, joined by &&."""
        if condition is None:
            return not failed
        verdict, always = True, False
        for term in (t.strip() for t in str(condition).split("&&")):
            if term == "always()":
                always = True
            elif term == "success()":
                verdict = verdict and not failed
            elif match := re.fullmatch(r"(\S+)\s*(!=|==)\s*'([^']*)'", term):
                value = context.get(match.group(1), "")
                verdict = verdict and ((value == match.group(3)) == (match.group(2) == "=="))
            else:
                raise AssertionError(f"the test runner cannot evaluate if: {term}")
        return verdict and (always or not failed)

    # -- one run: step -------------------------------------------------------------------

    def _run(
        self,
        step: Mapping[str, Any],
        base_env: Mapping[str, str],
        context: Mapping[str, str],
        call_env: Mapping[str, str],
    ) -> StepRun:
        """One `run:` step; `call_env` is the `env:` of the step that uses the action."""
        name = str(step.get("name") or str(step.get("run", ""))[:40])
        if name in self.reuse:
            return StepRun(name, "success", outputs=dict(self.reuse[name]))
        assert step.get("shell", "bash") == "bash", "the action's steps run under bash"
        self._count += 1
        files = {n: self.temp / f"{n.lower()}-{self._count}" for n in _FILES}
        for path in files.values():
            path.write_text("", encoding="utf-8")
        script = self.temp / f"step-{self._count}.sh"
        script.write_text(self._fill(str(step["run"]), context), encoding="utf-8")
        env = {
            **base_env,
            **self._env,
            **call_env,
            **self._fill_map(step.get("env") or {}, context),
        }
        env.update({n: str(p) for n, p in files.items()})
        env["PATH"] = os.pathsep.join([*self._path, env["PATH"]])
        bash = shutil.which("bash", path=env["PATH"])
        assert bash, "no bash on the step's PATH"
        done = subprocess.run(
            [bash, "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            env=env,
            cwd=self.workspace,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        added = [p for p in files["GITHUB_PATH"].read_text(encoding="utf-8").splitlines() if p]
        self._path[:0] = list(reversed(added))
        for key, value in _read_outputs(files["GITHUB_ENV"].read_text(encoding="utf-8")).items():
            if not key.startswith(("GITHUB_", "RUNNER_")):  # the runner's own stay its own
                self._env[key] = value
        self._summary.append(files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8"))
        outputs = _read_outputs(files["GITHUB_OUTPUT"].read_text(encoding="utf-8"))
        outcome = "success" if done.returncode == 0 else "failure"
        if name.startswith("Install fleet-sync") and outcome == "success":
            self.reuse[name] = outputs
        return StepRun(name, outcome, done.returncode, outputs, done.stdout, done.stderr)

    def _fill(self, text: str, context: Mapping[str, str]) -> str:
        known = {**self.contexts, **context}

        def operand(expr: str, alternatives: bool) -> str:
            if expr in known:
                return known[expr]
            if expr.startswith(("secrets.", "steps.", "vars.")):
                return ""  # GitHub gives an empty string for an unset secret, output, variable
            if alternatives and expr.startswith(("github.event.", "inputs.")):
                return ""  # `a || b`: a payload field or input this event does not have
            raise AssertionError(f"the test runner does not know ${{{{ {expr} }}}}")

        def value(match: re.Match[str]) -> str:
            # `a || b`: the first operand that is set and not empty, as GitHub evaluates it.
            operands = [o.strip() for o in match.group(1).split("||")]
            return next((v for o in operands if (v := operand(o, len(operands) > 1))), "")

        return EXPRESSION.sub(value, text)

    def _fill_map(self, data: Mapping[str, Any], context: Mapping[str, str]) -> dict[str, str]:
        return {str(k): self._fill(str(v), context) for k, v in data.items()}


_FILES = ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")


def _read_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's (and GITHUB_ENV's) two forms: `name=value` lines and `name<<DELIMITER`
    blocks."""
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            for item in lines:
                if item == delimiter:
                    break
                block.append(item)
            outputs[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs
