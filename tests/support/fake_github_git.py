"""The repository side of the fake GitHub: git data (blobs, trees, commits, branch refs), pull
requests (list by head, create, edit, merge) and workflow dispatches, for the host-moved loop.

Trees are flat {path: blob sha} maps; shas are sha1 over the content like git's, so the same
content gives the same sha. Seed a commit with a known sha (a local checkout's HEAD) through
``seed_commit`` so commits made through the API can sit on top of it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fake_github import FakeGitHub

JSON = dict[str, Any]
Answer = tuple[int, Any, dict[str, str]]


def _sha(kind: str, data: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data).hexdigest()


@dataclass
class FakeGitData:
    github: FakeGitHub
    blobs: dict[str, bytes] = field(default_factory=dict)
    trees: dict[str, dict[str, str]] = field(default_factory=dict)
    commits: dict[str, JSON] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)  # branch -> commit sha
    dispatches: list[JSON] = field(default_factory=list)
    merge_refusal: str | None = None  # a message to answer merges with 405 (branch protection)

    # ------------------------------------------------------------------ seeding / inspection

    def seed_commit(self, sha: str, files: dict[str, bytes], branch: str) -> None:
        tree = self._tree({path: self._blob(data) for path, data in files.items()})
        self.commits[sha] = {"tree": tree, "parents": [], "message": "seed"}
        self.refs[branch] = sha

    def file_at(self, commit: str, path: str) -> bytes | None:
        blob = self.trees[self.commits[commit]["tree"]].get(path)
        return None if blob is None else self.blobs[blob]

    def pulls(self) -> list[JSON]:
        return [i for i in self.github.issues.values() if "head" in i]

    def open_pull_by(self, branch: str, base: str, user: str) -> int:
        """Seed an open pull request from ``branch`` (which must exist) by another ``user``."""
        gh = self.github
        with gh.lock:
            number = gh.add_pull_request(user=user)
            pull = gh.issues[number]
            pull.update(title=f"by {user}", head={"ref": branch}, base={"ref": base})
            pull["html_url"] = f"https://github.invalid/{gh.repo}/pull/{number}"
            return number

    # ------------------------------------------------------------------ internals

    def _blob(self, data: bytes) -> str:
        sha = _sha("blob", data)
        self.blobs[sha] = data
        return sha

    def _tree(self, entries: dict[str, str]) -> str:
        sha = _sha("tree", json.dumps(entries, sort_keys=True).encode())
        self.trees[sha] = dict(entries)
        return sha

    def handle(
        self, method: str, rest: str, query: dict[str, str], body: Any, user: JSON
    ) -> Answer | None:
        """Answer one request (sent by ``user``) of this part of the API, or None when it is
        not ours."""
        body = body if isinstance(body, dict) else {}
        if m := re.fullmatch(r"/git/ref/heads/(.+)", rest):
            if method != "GET":
                return 405, {"message": "Method Not Allowed"}, {}
            sha = self.refs.get(m.group(1))
            if sha is None:
                return 404, {"message": "Not Found"}, {}
            ref = {"ref": f"refs/heads/{m.group(1)}", "object": {"sha": sha, "type": "commit"}}
            return 200, ref, {}
        if rest == "/git/refs" and method == "POST":
            name = str(body.get("ref", "")).removeprefix("refs/heads/")
            if name in self.refs:
                return 422, {"message": "Reference already exists"}, {}
            if body.get("sha") not in self.commits:
                return 422, {"message": "Object does not exist"}, {}
            self.refs[name] = body["sha"]
            return 201, {"ref": body["ref"], "object": {"sha": body["sha"]}}, {}
        if (m := re.fullmatch(r"/git/refs/heads/(.+)", rest)) and method == "PATCH":
            if m.group(1) not in self.refs:
                return 422, {"message": "Reference does not exist"}, {}
            if body.get("sha") not in self.commits or body.get("force") is not True:
                return 422, {"message": "Update is not a fast forward"}, {}
            self.refs[m.group(1)] = body["sha"]
            return 200, {"ref": f"refs/heads/{m.group(1)}", "object": {"sha": body["sha"]}}, {}
        if (m := re.fullmatch(r"/git/commits/([0-9a-f]+)", rest)) and method == "GET":
            commit = self.commits.get(m.group(1))
            if commit is None:
                return 404, {"message": "Not Found"}, {}
            parents = [{"sha": p} for p in commit["parents"]]
            answer = {"sha": m.group(1), "tree": {"sha": commit["tree"]}, "parents": parents}
            return 200, {**answer, "message": commit["message"]}, {}
        if rest == "/git/blobs" and method == "POST":
            if body.get("encoding") != "base64":
                return 422, {"message": "encoding must be base64 here"}, {}
            return 201, {"sha": self._blob(base64.b64decode(body["content"]))}, {}
        if rest == "/git/trees" and method == "POST":
            base = self.trees.get(str(body.get("base_tree")))
            if base is None:
                return 422, {"message": "base_tree does not exist"}, {}
            entries = dict(base)
            for entry in body["tree"]:
                if entry["sha"] not in self.blobs:
                    return 422, {"message": "blob does not exist"}, {}
                entries[entry["path"]] = entry["sha"]
            return 201, {"sha": self._tree(entries)}, {}
        if rest == "/git/commits" and method == "POST":
            if body["tree"] not in self.trees or any(
                p not in self.commits for p in body["parents"]
            ):
                return 422, {"message": "tree or parent does not exist"}, {}
            commit = {"tree": body["tree"], "parents": body["parents"], "message": body["message"]}
            sha = _sha("commit", json.dumps({**commit, "n": len(self.commits)}).encode())
            self.commits[sha] = commit
            return 201, {"sha": sha}, {}
        if m := re.fullmatch(r"/actions/workflows/([^/]+)/dispatches", rest):
            if method != "POST" or not isinstance(body, dict) or "ref" not in body:
                return 422, {"message": "ref is required"}, {}
            self.dispatches.append({"workflow": m.group(1), "ref": body["ref"]})
            return 204, None, {}
        return self._pulls(method, rest, query, body, user)

    def _pulls(
        self, method: str, rest: str, query: dict[str, str], body: Any, user: JSON
    ) -> Answer | None:
        gh = self.github
        if rest == "/pulls" and method == "GET":
            owner = gh.repo.partition("/")[0]
            found = [
                p
                for p in self.pulls()
                if query.get("state", "open") in ("all", p["state"])
                and (not query.get("head") or query["head"] == f"{owner}:{p['head']['ref']}")
            ]
            return gh._page(f"/repos/{gh.repo}/pulls", query, found)
        if rest == "/pulls" and method == "POST":
            head, base = body.get("head"), body.get("base")
            if head not in self.refs or base not in self.refs:
                return 422, {"message": "head or base branch does not exist"}, {}
            if any(p["head"]["ref"] == head and p["state"] == "open" for p in self.pulls()):
                return 422, {"message": f"A pull request already exists for {head}."}, {}
            number = gh.add_pull_request(
                body=str(body.get("body") or ""), user=user["login"], user_type=user["type"]
            )
            pull = gh.issues[number]
            pull.update(title=body["title"], head={"ref": head}, base={"ref": base})
            pull["html_url"] = f"https://github.invalid/{gh.repo}/pull/{number}"
            return 201, self._shown(pull), {}
        if (m := re.fullmatch(r"/pulls/(\d+)", rest)) and method == "PATCH":
            existing = gh.issues.get(int(m.group(1)))
            if existing is None or "head" not in existing:
                return 404, {"message": "Not Found"}, {}
            for key in ("title", "body", "state"):
                if key in body:
                    existing[key] = body[key]
            return 200, self._shown(existing), {}
        if (m := re.fullmatch(r"/pulls/(\d+)/merge", rest)) and method == "PUT":
            return self._merge(int(m.group(1)), body)
        return None

    def _shown(self, pull: JSON) -> JSON:
        """A pull request as GitHub shows it: head.sha is where the branch is now."""
        head = dict(pull["head"], sha=self.refs.get(pull["head"]["ref"]))
        return {**pull, "head": head}

    def _merge(self, number: int, body: Any) -> Answer:
        pull = self.github.issues.get(number)
        if pull is None or "head" not in pull:
            return 404, {"message": "Not Found"}, {}
        if self.merge_refusal:
            return 405, {"message": self.merge_refusal}, {}
        head = self.refs[pull["head"]["ref"]]
        if pull["state"] != "open":
            return 405, {"message": "Pull Request is not mergeable"}, {}
        if body.get("sha") != head:
            return 409, {"message": "Head branch was modified. Review and try the merge again."}, {}
        base = pull["base"]["ref"]
        tree = self.commits[head]["tree"]
        commit = {"tree": tree, "parents": [self.refs[base], head], "message": body["commit_title"]}
        sha = _sha("commit", json.dumps({**commit, "n": len(self.commits)}).encode())
        self.commits[sha] = commit
        self.refs[base] = sha
        pull.update(state="closed", merged_at="2026-01-01T00:00:00Z")
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}, {}
