"""Which proxy secrets a plan job lacks, one variable name a line on stdout (nothing: the plan
can run). A pull request from a fork gets no secrets; the action then skips the plan instead of
failing it. Arguments: the target the job plans ("" for every target) and the fleet files.

Without `targets:` in a fleet file, the proxy is LITELLM_PROXY_URL or LITELLM_PROXY_URLS, as
before targets existed. With them, each target the job plans names its proxy in fleet.yaml
(`proxy_url`: an address, a list of pod addresses, or `os.environ/NAME` references): the
variables it refers to, or, for an address written out, the variables of the key a plan reads
with (`read_api_key`, else `api_key`). A file this cannot read counts as one without targets; a
target it cannot find says nothing (the plan runs and fleet-sync reports the problem).

This reads the pull request's files; the plan itself reads each target at the proxy_url and
with the keys of fleet.yaml at the pull request's base (docs: "Keys follow trust"), so a
pull request that names other variables here at worst makes the plan run and stop on the
base's variables (exit 1, "not set") instead of being skipped. A variable GitHub Actions sets
itself (GITHUB_TOKEN, GITHUB_*, ...) counts as missing: it is never a proxy secret (validate
refuses it there), so a fork naming one is skipped, never planned with the job's token.

The action runs it with its own virtualenv's Python, isolated (`python -I`); it reads the fleet
files as data (yaml.safe_load) and never prints a variable's value."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

REFERENCE = "os.environ/"
# A pull request writes fleet.yaml: only a plain variable name reaches the log and the summary.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# As sync/fleet/placement.py GITHUB_VARIABLES (this runs isolated, without sync importable).
GITHUB_OWN = re.compile(r"(?i)GITHUB_TOKEN|GH_TOKEN|(GITHUB|ACTIONS|RUNNER)_.*")


def references(value: Any) -> list[str]:
    """The variable names an address or key (or a list of them) refers to."""
    items = value if isinstance(value, list) else [value]
    return [
        item.removeprefix(REFERENCE)
        for item in items
        if isinstance(item, str)
        and item.startswith(REFERENCE)
        and NAME.fullmatch(item.removeprefix(REFERENCE))
    ]


def needed(doc: Any, target: str) -> list[str]:
    """The variables whose absence means this job got no secrets."""
    targets = doc.get("targets") if isinstance(doc, dict) else None
    if not targets:
        return ["LITELLM_PROXY_URL"]
    if not isinstance(targets, dict):
        return []
    names = [target] if target else list(targets)
    out: list[str] = []
    for name in names:
        spec = targets.get(name)
        if not isinstance(spec, dict):
            continue
        proxy = references(spec.get("proxy_url"))
        key = spec.get("read_api_key") or spec.get("api_key")
        out += proxy or ([] if spec.get("proxy_url") is None else references(key))
    return out


def missing(target: str, files: list[str], environ: dict[str, str]) -> list[str]:
    out: list[str] = []
    for file in files:
        try:
            doc = yaml.safe_load(Path(file).read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError):
            doc = None  # read as a fleet without targets, as before targets existed
        for name in needed(doc, target):
            absent = not environ.get(name) or bool(GITHUB_OWN.fullmatch(name))
            if name == "LITELLM_PROXY_URL":
                absent = absent and not environ.get("LITELLM_PROXY_URLS")
            if absent and name not in out:
                out.append(name)
    return out


if __name__ == "__main__":
    print("\n".join(missing(sys.argv[1], sys.argv[2:], dict(os.environ))))
