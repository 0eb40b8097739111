"""gitpython at the edge: fleet.yaml as it was at a ref, the merge base of a pull request, and
the repository fleet.yaml belongs to.

The git program gitpython runs is chosen here, not by a PATH lookup: the first `git` on PATH
whose directory and file both lie outside the working tree being read, skipping relative and
empty entries (they name the current directory). A checkout cannot answer as git, even when a
step put one of its directories on PATH. Importing gitpython already runs `git version`, so the
choice is made before the import."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sync.errors import FleetSyncError
from sync.secrets import display

if TYPE_CHECKING:
    import git


class GitRefError(FleetSyncError):
    """A git revision or repository fleet-sync needs cannot be read; the message says which."""


class GitNotFound(FleetSyncError):
    """No git outside the tree: the command stops (exit 1) with this message."""


def git_executable(tree: Path, search_path: str) -> str:
    """The first `git` on `search_path` (PATH's form) outside `tree`: entries that are relative
    or empty, or that lie inside `tree` (symbolic links followed, the directory's and the
    program's), are skipped."""
    inside = tree.resolve()
    for entry in search_path.split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        candidate = Path(entry, "git")
        try:
            places = (Path(entry).resolve(strict=True), candidate.resolve(strict=True))
        except (OSError, RuntimeError):  # missing, or a loop of links
            continue
        if any(p.is_relative_to(inside) for p in places):
            continue
        if places[1].is_file() and os.access(places[1], os.X_OK):
            return str(candidate)
    raise GitNotFound(
        f"no git program on PATH outside {inside} (relative entries, empty ones and the "
        "repository's own directories are not searched): install git or put its directory "
        "on PATH"
    )


def _tree_of(start: Path) -> Path:
    """The working tree holding `start`: the nearest directory with a `.git`."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    raise GitRefError(f"{start} is not inside a git repository")


def _repo(start: Path) -> git.Repo:
    tree = _tree_of(start)
    executable = git_executable(tree, os.environ.get("PATH", ""))
    # Read by gitpython's import-time `git version`; a value the environment already had is
    # replaced, so no earlier step chooses the program either.
    os.environ["GIT_PYTHON_GIT_EXECUTABLE"] = executable
    try:
        import git
    except ImportError as exc:  # the chosen program does not answer `git version`
        raise GitNotFound(f"{executable} does not run as git ({exc})") from exc
    if executable != git.Git.GIT_PYTHON_GIT_EXECUTABLE:  # imported earlier for another tree
        try:
            git.refresh(executable)
        except (ImportError, git.GitCommandNotFound) as exc:
            raise GitNotFound(f"{executable} does not run as git ({exc})") from exc
    try:
        return git.Repo(tree)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise GitRefError(f"{start} is not inside a git repository") from exc


def checked_ref(ref: str) -> str:
    """A ref as given (an event's base.sha, --base-ref): one git reads as a revision, never as
    an option (`--independent` made `git merge-base` answer HEAD itself: the pull request's
    own fleet.yaml became the trusted one). GitRefError otherwise."""
    if not ref or ref.startswith("-") or not ref.isprintable() or any(c.isspace() for c in ref):
        shown = display.text(ref)[:100]
        raise GitRefError(f"{shown!r} is not a git revision (empty, '-' first, or blanks)")
    return ref


def _end_of_options(repo: git.Repo) -> list[str]:
    """`--end-of-options` where git knows it (2.24+): what follows is never an option, even
    should a ref that starts with '-' get past checked_ref."""
    return ["--end-of-options"] if repo.git.version_info >= (2, 24) else []


# The functions below call _repo before they import gitpython: it picks the program first.


def merge_base(start: Path, base: str, head: str = "HEAD") -> str:
    """The commit a pull request branched from (what 'this PR changes' is measured against)."""
    checked_ref(base)
    checked_ref(head)
    repo = _repo(start)
    import git

    try:
        found = str(repo.git.merge_base(*_end_of_options(repo), base, head)).split()
    except git.GitCommandError as exc:
        if exc.status == 1 and not str(exc.stderr).strip():  # git's answer for "none"
            found = []
        else:
            raise GitRefError(
                f"cannot find the merge base of {display.text(base)[:100]} and {head}: "
                f"{display.text(str(exc.stderr).strip())[:300]}"
            ) from exc
    if not found:
        raise GitRefError(f"{base} and {head} share no history (fetch with fetch-depth: 0)")
    return found[0]


def file_at(path: Path, ref: str) -> str | None:
    """The text of `path` at `ref`, or None when the file did not exist there."""
    checked_ref(ref)
    repo = _repo(path.resolve().parent)
    import git

    relative = path.resolve().relative_to(Path(repo.working_tree_dir or ".").resolve())
    try:
        blob = repo.commit(ref).tree / relative.as_posix()
    except KeyError:
        return None
    except (git.BadName, ValueError) as exc:
        raise GitRefError(f"unknown git ref {ref!r}") from exc
    data: bytes = blob.data_stream.read()
    return data.decode("utf-8", errors="replace")


def head_commit(path: Path) -> tuple[str, str]:
    """(HEAD's sha, path's location in the repository as a/b.yaml): what a commit made through
    the API on top of the checkout needs."""
    repo = _repo(path.resolve().parent)
    relative = path.resolve().relative_to(Path(repo.working_tree_dir or ".").resolve())
    try:
        return str(repo.head.commit.hexsha), relative.as_posix()
    except ValueError as exc:  # a repository without commits
        raise GitRefError(f"{path}: the repository has no commit yet") from exc


EMPTY_BLOB = "0" * 40


def each_version(path: Path, use: Callable[[str], object]) -> bool:
    """Call `use` with the text of every version of `path` in the history reachable from HEAD,
    each distinct one once (one `git log` names them, git's object database reads them).
    Returns whether that history is whole: False for a shallow clone, or a version the clone
    does not hold. Raises GitRefError outside a repository."""
    repo = _repo(path.resolve().parent)
    import git

    relative = path.resolve().relative_to(Path(repo.working_tree_dir or ".").resolve())
    log = ["--full-history", "-m", "--no-renames", "--format=", "--raw", "--no-abbrev", "HEAD"]
    try:
        raw = repo.git.log(*log, "--", relative.as_posix())
    except git.GitCommandError:
        return True  # no commit yet: no history, and nothing missing from it
    whole: bool = str(repo.git.rev_parse("--is-shallow-repository")).strip() != "true"
    for sha in _blobs(raw):
        try:
            data: bytes = repo.odb.stream(bytes.fromhex(sha)).read()
        except (ValueError, git.GitCommandError):  # not in the clone (cut off by a shallow one)
            whole = False
            continue
        use(data.decode("utf-8", errors="replace"))
    return whole


def _blobs(raw: str) -> list[str]:
    """The file's versions in `git log --raw` output: `:mode mode old new status<TAB>path`."""
    out: dict[str, None] = {}
    for line in raw.splitlines():
        if line.startswith(":"):
            fields = line.split("\t", 1)[0].split()
            for sha in fields[2:4]:
                if sha != EMPTY_BLOB:
                    out[sha] = None
    return list(out)


# owner/name at the end of a remote URL: https://host/owner/name(.git), git@host:owner/name.git,
# ssh://git@host[:port]/owner/name.git
_REMOTE_REPOSITORY = re.compile(r"[:/]([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def repository_of(path: Path) -> str | None:
    """owner/name of the `origin` remote of the repository holding `path` (what
    GITHUB_REPOSITORY says for the same repository in GitHub Actions), or None."""
    try:
        repo = _repo(path.resolve().parent)
    except GitRefError:
        return None
    import git

    try:
        urls = list(repo.remote("origin").urls)
    except (ValueError, git.GitCommandError):
        return None
    match = _REMOTE_REPOSITORY.search(urls[0]) if urls else None
    return match.group(1) if match else None
