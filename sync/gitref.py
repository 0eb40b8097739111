"""gitpython at the edge: fleet.yaml as it was at a ref, the merge base of a pull request, and
the repository fleet.yaml belongs to."""

from __future__ import annotations

import re
from pathlib import Path

import git


class GitRefError(Exception):
    pass


def _repo(start: Path) -> git.Repo:
    try:
        return git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise GitRefError(f"{start} is not inside a git repository") from exc


def merge_base(start: Path, base: str, head: str = "HEAD") -> str:
    """The commit a pull request branched from (what 'this PR changes' is measured against)."""
    repo = _repo(start)
    try:
        bases = repo.merge_base(base, head)
    except git.GitCommandError as exc:
        raise GitRefError(
            f"cannot find the merge base of {base} and {head}: {exc.stderr.strip()}"
        ) from exc
    if not bases:
        raise GitRefError(f"{base} and {head} share no history (fetch with fetch-depth: 0)")
    return str(bases[0].hexsha)


def file_at(path: Path, ref: str) -> str | None:
    """The text of `path` at `ref`, or None when the file did not exist there."""
    repo = _repo(path.resolve().parent)
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


# owner/name at the end of a remote URL: https://host/owner/name(.git), git@host:owner/name.git,
# ssh://git@host[:port]/owner/name.git
_REMOTE_REPOSITORY = re.compile(r"[:/]([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def repository_of(path: Path) -> str | None:
    """owner/name of the `origin` remote of the repository holding `path` (what
    GITHUB_REPOSITORY says for the same repository in GitHub Actions), or None."""
    try:
        repo = _repo(path.resolve().parent)
        urls = list(repo.remote("origin").urls)
    except (GitRefError, ValueError, git.GitCommandError):
        return None
    match = _REMOTE_REPOSITORY.search(urls[0]) if urls else None
    return match.group(1) if match else None
