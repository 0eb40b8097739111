"""Who put a label on a pull request, and whether they may write to the repository: the REST
facts a reviewed force rests on (sync/gitops/force.py).

The label must be on the pull request now (GET /issues/N); who added it is the actor of its
latest `labeled` event (GET /issues/N/events, GitHub's own record, which nobody can edit); their
access is what GET /collaborators/LOGIN/permission answers (`admin`, `write` — `maintain`
reads as `write` there — count; `read`, `none`, or no answer do not). A login that is not a
plain user login (an app's `name[bot]`) never counts: a workflow or an app cannot review.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sync.github.actions import GitHubError, decode
from sync.github.client import GitHubClient

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


@dataclass(frozen=True)
class Labelled:
    """A label on a pull request: who added it last (None: GitHub's events do not say), the id
    of that event, and that person's permission on the repository."""

    name: str
    login: str | None
    event: int | None
    permission: str
    at: str | None = None  # when it was added (GitHub's created_at, ISO 8601 UTC)

    @property
    def by_writer(self) -> bool:
        return self.login is not None and self.permission in WRITE_PERMISSIONS


def label_on(github: GitHubClient, number: int, name: str) -> Labelled | None:
    """The label `name` on pull request `number`, or None when it is not on it now."""
    repo = f"repos/{github.config.repository}"
    issue = decode(github._request("GET", f"{repo}/issues/{number}"), f"GET /issues/{number}")
    labels = issue.get("labels") if isinstance(issue, dict) else None
    names = {lb.get("name") for lb in labels or () if isinstance(lb, dict)}
    if name not in names:
        return None
    last = None
    for item in github._paginate(f"{repo}/issues/{number}/events"):
        label = item.get("label")
        named = isinstance(label, dict) and label.get("name") == name
        if named and item.get("event") in ("labeled", "unlabeled"):
            last = item
    if last is None or last.get("event") != "labeled":
        return Labelled(name, None, None, "none")
    actor = last.get("actor")
    login = actor.get("login") if isinstance(actor, dict) else None
    event_id, created = last.get("id"), last.get("created_at")
    event = event_id if isinstance(event_id, int) and not isinstance(event_id, bool) else None
    at = created if isinstance(created, str) else None
    if not isinstance(login, str) or not _LOGIN.fullmatch(login):
        return Labelled(name, None, event, "none", at)
    return Labelled(name, login, event, permission_of(github, login), at)


def permission_of(github: GitHubClient, login: str) -> str:
    """`login`'s permission on the repository as GitHub names it; "none" when GitHub says the
    login is no collaborator (404)."""
    path = f"repos/{github.config.repository}/collaborators/{login}/permission"
    try:
        answer = decode(github._request("GET", path), f"GET /collaborators/{login}/permission")
    except GitHubError as exc:
        if exc.status == 404:
            return "none"
        raise
    permission = answer.get("permission") if isinstance(answer, dict) else None
    role = answer.get("role_name") if isinstance(answer, dict) else None
    if role == "maintain":
        return "maintain"
    return permission if isinstance(permission, str) else "none"
