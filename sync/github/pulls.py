"""GitHub REST for proposing a change as a pull request: a commit through the git data API
(blob, tree, commit, branch ref), the pull request itself, its merge, and a workflow dispatch.

Everything goes through the REST API rather than `git push`, so the workflow needs no
credential in the checkout (persist-credentials: false) and tests prove each call against the
fake GitHub. Git objects are content-addressed: sending a blob, tree or commit twice is harmless.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from sync.github.actions import GitHubError, decode
from sync.github.client import JSON, GitHubClient
from sync.github.identity import AUTHOR_VARIABLE
from sync.secrets.display import printable


class PullRequestClient(GitHubClient):
    """GitHubClient plus branches, commits and pull requests of the same repository."""

    @property
    def _repo(self) -> str:
        return f"repos/{self.config.repository}"

    # ------------------------------------------------------------------ commits

    def commit_file(self, parent: str, path: str, content: bytes, message: str) -> str:
        """A new commit on top of `parent` whose only change is `path` = `content`; its sha."""
        base_tree = _sha(self._get(f"{self._repo}/git/commits/{parent}"), "tree")
        blob = self._json(
            "POST",
            f"{self._repo}/git/blobs",
            body={"content": base64.b64encode(content).decode(), "encoding": "base64"},
        )
        tree = self._json(
            "POST",
            f"{self._repo}/git/trees",
            body={
                "base_tree": base_tree,
                "tree": [{"path": path, "mode": "100644", "type": "blob", "sha": _sha(blob)}],
            },
        )
        commit = self._json(
            "POST",
            f"{self._repo}/git/commits",
            body={"message": message, "tree": _sha(tree), "parents": [parent]},
        )
        return _sha(commit)

    def branch_sha(self, branch: str) -> str | None:
        try:
            ref = self._get(f"{self._repo}/git/ref/heads/{branch}")
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return _sha(ref, "object")

    def point_branch(self, branch: str, sha: str) -> Literal["created", "moved", "unchanged"]:
        """Create the branch at `sha`, or move it there (force: the branch is ours alone)."""
        current = self.branch_sha(branch)
        if current == sha:
            return "unchanged"
        if current is None:
            self._json(
                "POST", f"{self._repo}/git/refs", body={"ref": f"refs/heads/{branch}", "sha": sha}
            )
            return "created"
        self._json(
            "PATCH", f"{self._repo}/git/refs/heads/{branch}", body={"sha": sha, "force": True}
        )
        return "moved"

    # ------------------------------------------------------------------ pull requests

    def open_pull(self, branch: str) -> JSON | None:
        """Our open pull request whose head is `branch` in this repository, if any. One that
        someone else opened from it is never edited nor closed: a GitHubError says so."""
        owner = self.config.repository.partition("/")[0]
        pulls = [
            _pull(pull)
            for pull in self._paginate(
                f"{self._repo}/pulls", {"head": f"{owner}:{branch}", "state": "open"}
            )
        ]
        if not pulls:
            return None
        ours = self.ours(pulls)
        if ours:
            return ours[0]
        user = pulls[0].get("user")
        login = user.get("login") if isinstance(user, dict) else None
        author = printable(login)[:100] if isinstance(login, str) else "an unknown author"
        identity = self.identity()
        token = identity.login or f"unknown: {identity.source}"
        raise GitHubError(
            f"pull request #{pulls[0]['number']} from {branch} was opened by {author}, not by "
            f"this token ({token}): fleet-sync neither edits nor closes it; close it to let "
            f"fleet-sync propose the move, or set {AUTHOR_VARIABLE} to the token's login."
        )

    def create_pull(self, branch: str, base: str, title: str, body: str) -> JSON:
        return _pull(
            self._json(
                "POST",
                f"{self._repo}/pulls",
                body={"title": title, "head": branch, "base": base, "body": body},
            )
        )

    def edit_pull(self, number: int, **fields: Any) -> JSON:
        return _pull(self._json("PATCH", f"{self._repo}/pulls/{number}", body=fields))

    def merge_pull(self, number: int, head_sha: str, title: str) -> str:
        """Merge if the head is still `head_sha` (GitHub answers 409 otherwise); the merge sha."""
        data = self._json(
            "PUT",
            f"{self._repo}/pulls/{number}/merge",
            body={"sha": head_sha, "commit_title": title},
        )
        return str(data.get("sha") or "")

    def dispatch_workflow(self, workflow: str, ref: str) -> None:
        """Start a workflow_dispatch run (GitHub answers 204, no body)."""
        self._request(
            "POST",
            f"{self._repo}/actions/workflows/{workflow}/dispatches",
            json_body={"ref": ref},
        )

    def _get(self, path: str) -> JSON:
        data = decode(self._request("GET", path), f"GET /{path}")
        if not isinstance(data, dict):
            raise GitHubError(f"GitHub answered GET /{path} with something other than an object")
        return data


def _pull(data: JSON) -> JSON:
    """A pull request as GitHub answered it, checked to name its number."""
    number = data.get("number")
    if not isinstance(number, int) or isinstance(number, bool):
        raise GitHubError(
            "GitHub's answer about a pull request has no whole-number number: check "
            "GITHUB_API_URL points at the GitHub REST API."
        )
    return data


def _sha(data: JSON, within: str | None = None) -> str:
    """The ``sha`` of a git object GitHub answered with (of ``data[within]`` when given)."""
    holder = data.get(within) if within else data
    sha = holder.get("sha") if isinstance(holder, dict) else None
    if not isinstance(sha, str) or not sha:
        raise GitHubError(
            "GitHub's answer about a git object has no sha: check GITHUB_API_URL points at "
            "the GitHub REST API."
        )
    return sha
