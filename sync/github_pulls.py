"""GitHub REST for proposing a change as a pull request: a commit through the git data API
(blob, tree, commit, branch ref), the pull request itself, its merge, and a workflow dispatch.

Everything goes through the REST API rather than `git push`, so the workflow needs no
credential in the checkout (persist-credentials: false) and tests prove each call against the
fake GitHub. Git objects are content-addressed: sending a blob, tree or commit twice is harmless.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from .github import JSON, GitHubClient
from .github_config import GitHubError, decode


class PullRequestClient(GitHubClient):
    """GitHubClient plus branches, commits and pull requests of the same repository."""

    @property
    def _repo(self) -> str:
        return f"repos/{self.config.repository}"

    # ------------------------------------------------------------------ commits

    def commit_file(self, parent: str, path: str, content: bytes, message: str) -> str:
        """A new commit on top of `parent` whose only change is `path` = `content`; its sha."""
        parent_commit = self._get(f"{self._repo}/git/commits/{parent}")
        base_tree = str(parent_commit["tree"]["sha"])
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
                "tree": [{"path": path, "mode": "100644", "type": "blob", "sha": blob["sha"]}],
            },
        )
        commit = self._json(
            "POST",
            f"{self._repo}/git/commits",
            body={"message": message, "tree": tree["sha"], "parents": [parent]},
        )
        return str(commit["sha"])

    def branch_sha(self, branch: str) -> str | None:
        try:
            ref = self._get(f"{self._repo}/git/ref/heads/{branch}")
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return str(ref["object"]["sha"])

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
        """The open pull request whose head is `branch` in this repository, if any."""
        owner = self.config.repository.partition("/")[0]
        pulls = list(
            self._paginate(f"{self._repo}/pulls", {"head": f"{owner}:{branch}", "state": "open"})
        )
        return pulls[0] if pulls else None

    def create_pull(self, branch: str, base: str, title: str, body: str) -> JSON:
        return self._json(
            "POST",
            f"{self._repo}/pulls",
            body={"title": title, "head": branch, "base": base, "body": body},
        )

    def edit_pull(self, number: int, **fields: Any) -> JSON:
        return self._json("PATCH", f"{self._repo}/pulls/{number}", body=fields)

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
