"""The model groups fleet.yaml ever declared, from its git history (read through
sync/gitops/gitref.py, which runs the git program it finds outside the working tree).

A row LiteLLM stored but cannot serve (a provider typo: "saved to the database, but ...") is
found only by a search of its model group (`/v2/model/info?model=G&search=G`), so a plan looks
in every group the fleet could have written rows in: those fleet.yaml declares now, those with
listed routes of the fleet, and those any version of fleet.yaml in the history reachable from
HEAD declared, under its path or any path it was renamed or copied from (`git mv fleet.yaml
fleets/prod.yaml`: the versions before the move count too). Nothing is cached across runs. The
read is cheap for long histories: one `git log` lists the versions (blobs) of the file at each
of its paths, each distinct blob is read once through git's object database, and the keys of
its top-level `models:` mapping are read from the text where
the layout is plain block style (libyaml parses the version otherwise, and a version it cannot
read is skipped). The quick read never misses a key YAML reads; on a broken version it may read
one more, which costs one request (tests/test_history.py). When the history cannot be read
whole (not a git repository, a shallow clone), the groups found are still looked in, and the
plan says what could not be.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sync.live.state import PastGroups

# A top-level `models:` whose value starts on the next line (block style).
_MODELS = re.compile(r"^models:[ \t]*(#.*)?$", re.MULTILINE)
_TOP_LEVEL = re.compile(r"\n[^\s#]")
_CONTENT = re.compile(r"\n( *)[^ \n#]")  # the first line that is not blank or a comment
# A block mapping key on its own line: plain (no indicator first, `:` only before a non-space),
# or quoted without escapes.
_KEY = re.compile(
    r"(?P<plain>[^\s#'\"{}\[\],&*!|>%@`?:<-](?:[^:#\n]|:(?=\S)|(?<=\S)#)*?)[ \t]*:(?:[ \t]|$)"
    r"|\"(?P<double>[^\"\\\n]*)\"[ \t]*:(?:[ \t]|$)"
    r"|'(?P<single>[^'\n]*)'[ \t]*:(?:[ \t]|$)"
)


# A rename or copy in `git show --name-status -z`: R or C and the similarity, then two paths.
_STATUS = re.compile(r"[RC][0-9]{1,3}")


def declared_groups(fleet_file: Path) -> PastGroups:
    """Every model group any version of `fleet_file` in the history reachable from HEAD
    declared (the working tree's version is the caller's: it has the fleet). The git program
    is the one sync/gitops/gitref.py chooses, outside the working tree."""
    from sync.gitops.gitref import GitRefError, each_version

    unread = (
        "rows LiteLLM stored but does not list, in model groups only earlier versions of "
        "fleet.yaml declared, were not looked for"
    )
    groups: set[str] = set()
    try:
        read = [
            each_version(p, lambda text: groups.update(model_keys(text))) for p in paths(fleet_file)
        ]
    except GitRefError:
        return PastGroups(note=f"{fleet_file} is not in a git repository: {unread}")
    whole = all(read)
    if whole:
        return PastGroups(frozenset(groups))
    return PastGroups(
        frozenset(groups),
        "fleet.yaml's git history is cut short (a shallow clone: check out with "
        f"fetch-depth: 0): {unread}",
    )


def paths(fleet_file: Path) -> list[Path]:
    """`fleet_file` and every path it was renamed or copied from in the history reachable from
    HEAD, followed back through each commit that added it under a path (a rename or copy is
    found within that commit, whatever else it changed: git's rename and copy detection, copies
    from any file). Raises GitRefError outside a repository."""
    from sync.gitops.gitref import _repo

    repo = _repo(fleet_file.resolve().parent)
    import git

    root = Path(repo.working_tree_dir or ".").resolve()
    start = fleet_file.resolve().relative_to(root).as_posix()
    found, todo = {start}, [start]
    while todo:
        name = todo.pop()
        try:  # each commit that added the file under this name (any branch merged into HEAD)
            added = repo.git.log(
                "--full-history",
                "-m",
                "--no-renames",
                "--diff-filter=A",
                "--format=%H",
                "HEAD",
                "--",
                name,
            )
        except git.GitCommandError:
            return [fleet_file]  # no commit yet: no history
        for sha in sorted(set(added.split())):
            shown = repo.git.show(
                "-m",
                "-M",
                "-C",
                "--find-copies-harder",
                "--diff-filter=RC",
                "--format=",
                "--name-status",
                "-z",
                sha,
            )
            fields = shown.split("\0")
            for at, status in enumerate(fields[:-2]):
                old, new = fields[at + 1], fields[at + 2]
                if _STATUS.fullmatch(status.strip()) and new == name and old not in found:
                    found.add(old)
                    todo.append(old)
    return [root / name for name in sorted(found)]


def model_keys(text: str) -> frozenset[str]:
    """The keys of the top-level `models:` mapping of one version of fleet.yaml (empty when it
    does not parse)."""
    found = _scanned(text)
    return found if found is not None else _parsed(text)


def _scanned(text: str) -> frozenset[str] | None:
    """Read from the text when the layout is plain block style; None when it is not (a flow
    mapping, an anchor or merge key, a complex or escaped key, tabs: libyaml decides). The
    lines are picked by regular expressions (a version of 10,000 hosts is 1 MB)."""
    start = _MODELS.search(text)
    if start is None:
        return None
    rest = text[start.end() :]  # from the end of the `models:` line, its newline first
    end = _TOP_LEVEL.search(rest)  # the next top-level key, or the end of the document
    section = rest[: end.start()] if end else rest
    if "\t" in section:
        return None
    first = _CONTENT.search(section)
    if first is None:
        return frozenset()
    indent = len(first[1])
    # Each pattern starts with the newline of its line: re finds a literal first char fast.
    if re.search(rf"\n {{0,{indent - 1}}}[^ \n#]", section):
        return None  # a line less indented than the first key: not a plain block mapping
    keys: set[str] = set()
    for body in re.findall(rf"\n {{{indent}}}([^ \n#][^\n]*)", section):
        match = _KEY.match(body)
        if match is None:
            return None
        keys.add(match["plain"] or match["double"] or match["single"] or "")
    return frozenset(keys)


def _parsed(text: str) -> frozenset[str]:
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = yaml.load(text, Loader=loader)  # a safe loader, libyaml's where there is one
    except yaml.YAMLError:
        return frozenset()
    models = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(models, dict):
        return frozenset()
    return frozenset(str(k) for k in models)
