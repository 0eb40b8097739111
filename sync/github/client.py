"""GitHub REST client: sticky PR comment, drift issue, pull requests of a commit.

I/O only. Everything here talks to ``GITHUB_API_URL`` (default https://api.github.com) through
sync/github/http.py, so tests point it at a fake server on 127.0.0.1.

Only what the token wrote is fleet-sync's: the sticky comment and the drift issue are found by
their hidden header at the very start of the body *and* their author (sync/github/identity.py);
a comment or issue by anyone else is never edited, closed, commented on or copied, whatever it
carries, and a header quoted further down a body (a route named like one, shown in a plan) is
never taken for one.

Writes that create something (a comment, an issue) are not retried blindly: a 5xx on a POST may
mean GitHub stored it anyway, so the sticky-comment and drift-issue paths look again for their
marker before posting a second time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from sync.github import identity as github_identity
from sync.github.actions import GitHubError, decode, read_event
from sync.github.comment import GITHUB_COMMENT_LIMIT, PlanComment, target_field
from sync.github.http import JSON, GitHubHTTP
from sync.github.identity import Identity
from sync.secrets.display import printable

DRIFT_LABEL = "fleet-drift"
DRIFT_RESOLVED = "Drift resolved: live state matches fleet.yaml again."
__all__ = ["JSON", "CommentRef", "GitHubClient", "IssueAction", "drift_marker", "drift_title"]


@dataclass(frozen=True)
class CommentRef:
    id: int
    url: str
    action: Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class IssueAction:
    action: Literal["opened", "updated", "closed", "none"]
    number: int | None


def drift_marker(fleet: str, target: str | None = None) -> str:
    """The hidden marker that identifies a fleet's drift issue, or the drift issue of one of
    its targets (the whole first line of the issue: no marker is a prefix of another)."""
    return f"<!-- fleet-sync:drift fleet={fleet}{target_field(target)} -->"


def drift_title(fleet: str, target: str | None = None) -> str:
    where = f"fleet {fleet}" if target is None else f"fleet {fleet}, target {target}"
    return f"Drift: live LiteLLM routes differ from fleet.yaml ({where})"


class GitHubClient(GitHubHTTP):
    """A small synchronous GitHub REST client for one repository."""

    _identity: Identity | None = None  # learnt on first need

    # ------------------------------------------------------------------ identity

    def identity(self) -> Identity:
        """Who the token writes as (asked once): FLEET_SYNC_GITHUB_AUTHOR when set, else what
        GET /user names, or for an installation token (GET /user: 403 "Resource not accessible
        by integration") what GraphQL's viewer names; unknown, never guessed, when GitHub's
        answer says nothing usable (a 5xx, garbage, no answer in time). A rate limit or a
        refused token is an error: every call would fail."""
        if self._identity is None:
            self._identity = self._learn_identity()
        return self._identity

    @property
    def identity_unknown(self) -> bool:
        """Whether the identity was needed and could not be learnt."""
        return self._identity is not None and not self._identity.known

    def identity_note(self, what: str) -> str:
        """The log line's note when the identity was needed and is unknown ("" otherwise)."""
        return self._identity.fallback_note(what) if self._identity is not None else ""

    def _learn_identity(self) -> Identity:
        if self.config.author:
            return github_identity.configured(self.config.author)
        try:
            answer = self._request("GET", "user")
        except GitHubError as exc:
            if exc.status == 403 and exc.detail == github_identity.INTEGRATION:
                return self._viewer()
            _raise_if_fatal(exc)
            return github_identity.unknown(str(exc))
        try:
            return github_identity.from_user(decode(answer, "GET /user"))
        except GitHubError as exc:
            return github_identity.unknown(str(exc))

    def _viewer(self) -> Identity:
        """An installation token's login, from GraphQL (a query: retried like a GET)."""
        url = httpx.URL(self.config.graphql_endpoint)
        why = f"GET /user: {github_identity.INTEGRATION}, and GraphQL's viewer"
        try:
            answer = self._request(
                "POST", url, json_body={"query": github_identity.VIEWER_QUERY}, idempotent=True
            )
            return github_identity.from_viewer(decode(answer, "POST /graphql"))
        except GitHubError as exc:
            _raise_if_fatal(exc)
            return github_identity.unknown(f"{why} could not be read ({exc})")

    def ours(self, items: list[JSON]) -> list[JSON]:
        """The items the token wrote; the identity is asked only when there is something to
        sort out, and an unknown identity owns nothing."""
        if not items:
            return []
        identity = self.identity()
        return [item for item in items if identity.wrote(item)]

    # ------------------------------------------------------------------ pull requests

    def pull_request_number(self) -> int | None:
        """The PR number from the event payload (``pull_request.number``), None when absent."""
        path = self.config.event_path
        if not path:
            return None
        try:
            event = read_event(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            why = str(exc) if isinstance(exc, ValueError) else type(exc).__name__
            raise GitHubError(
                f"could not read the event payload at GITHUB_EVENT_PATH={path} ({why}): "
                "it should be the JSON file GitHub Actions writes."
            ) from None
        pr = event.get("pull_request") if isinstance(event, dict) else None
        number = pr.get("number") if isinstance(pr, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            return number
        return None

    def pull_requests_for_commit(self, sha: str, merged_only: bool = False) -> list[int]:
        """Numbers of the open or merged PRs associated with a commit (only the merged ones
        with `merged_only`)."""
        numbers: list[int] = []
        for pr in self._paginate(f"repos/{self.config.repository}/commits/{sha}/pulls"):
            number = pr.get("number")
            if not isinstance(number, int) or number in numbers:
                continue
            if (pr.get("state") == "open" and not merged_only) or pr.get("merged_at"):
                numbers.append(number)
        return numbers

    # ------------------------------------------------------------------ comments

    def list_comments(self, issue_number: int) -> list[JSON]:
        """Every comment of an issue or PR, all pages, oldest first."""
        return list(
            self._paginate(f"repos/{self.config.repository}/issues/{issue_number}/comments")
        )

    def post_comment(self, pr_number: int, body: str) -> CommentRef:
        """Post a new comment (a 5xx is not retried: GitHub may have stored it)."""
        _check_length(body)
        data = self._json(
            "POST",
            f"repos/{self.config.repository}/issues/{pr_number}/comments",
            body={"body": body},
        )
        return _comment_ref(data, "created")

    def upsert_sticky_comment(self, pr_number: int, marker: str, body: str) -> CommentRef:
        """Edit our comment headed by ``marker`` in place, or post it once if there is none (or
        who we are is unknown: then a new comment, never an edit)."""
        if not _headed(body, marker):
            raise GitHubError("the sticky comment body must start with its header")
        _check_length(body)
        attempts = self._retries + 1
        for attempt in range(attempts):
            existing = self.find_comment(pr_number, marker)
            if existing is not None:
                if existing.get("body") == body:
                    return _comment_ref(existing, "unchanged")
                data = self._json(
                    "PATCH",
                    f"repos/{self.config.repository}/issues/comments/{existing['id']}",
                    body={"body": body},
                )
                return _comment_ref(data, "updated")
            try:
                return self.post_comment(pr_number, body)
            except GitHubError as exc:
                if not self._may_post_again(exc, attempt == attempts - 1):
                    raise
                self.pause(attempt, f"POST comment on #{pr_number}")
        raise AssertionError("unreachable")  # pragma: no cover

    def find_comment(self, pr_number: int, marker: str) -> JSON | None:
        """Our oldest comment whose body starts with the header ``marker`` begins (a
        PlanComment), or None: a comment by anyone else is never ours, whatever it carries."""
        headed = [
            c
            for c in self.list_comments(pr_number)
            if _is_int(c.get("id")) and _headed(c.get("body"), marker)
        ]
        matches = self.ours(headed)
        matches.sort(key=lambda c: int(c["id"]))
        return matches[0] if matches else None

    def _may_post_again(self, exc: GitHubError, last: bool) -> bool:
        """After a failed POST: whether to look for what it may have stored and post again. Not
        when who we are is unknown: what it stored could not be recognised as ours."""
        return exc.maybe_committed and not last and self.identity().known

    # ------------------------------------------------------------------ drift issue

    def find_drift_issues(self, fleet: str, target: str | None = None) -> list[JSON]:
        """Our open issues labelled fleet-drift whose body starts with this fleet's (and
        target's) marker line, oldest first; an issue opened by anyone else is never ours,
        whatever it carries."""
        marker = drift_marker(fleet, target)
        carrying = [
            issue
            for issue in self._paginate(
                f"repos/{self.config.repository}/issues",
                {"labels": DRIFT_LABEL, "state": "open"},
            )
            if "pull_request" not in issue
            and _is_int(issue.get("number"))
            and _first_line(issue.get("body")) == marker
        ]
        return sorted(self.ours(carrying), key=lambda issue: int(issue["number"]))

    def close_drift_issues(self, fleet: str, target: str | None, why: str) -> IssueAction:
        """Close our open drift issues of the fleet (or of one target), each with a comment
        saying `why`; an issue anyone else opened is never touched."""
        repo = self.config.repository
        open_issues = self.find_drift_issues(fleet, target)
        if not open_issues:
            return IssueAction("none", None)
        for issue in open_issues:  # more than one only if someone duplicated it by hand
            number = int(issue["number"])
            self._json("POST", f"repos/{repo}/issues/{number}/comments", body={"body": why})
            self._json("PATCH", f"repos/{repo}/issues/{number}", body={"state": "closed"})
        return IssueAction("closed", int(open_issues[0]["number"]))

    def sync_drift_issue(
        self, fleet: str, body: str | None, target: str | None = None
    ) -> IssueAction:
        """Open or update the drift issue of the fleet (or of one of its targets) when a body is
        given, or close it (body None): each (fleet, target) has its own."""
        repo = self.config.repository
        marker = drift_marker(fleet, target)
        if body is None:
            return self.close_drift_issues(fleet, target, DRIFT_RESOLVED)

        text = f"{marker}\n{body}"
        title = drift_title(fleet, target)
        attempts = self._retries + 1
        for attempt in range(attempts):
            open_issues = self.find_drift_issues(fleet, target)
            if open_issues:
                number = int(open_issues[0]["number"])
                self._json(
                    "PATCH", f"repos/{repo}/issues/{number}", body={"title": title, "body": text}
                )
                return IssueAction("updated", number)
            try:
                data = self._json(
                    "POST",
                    f"repos/{repo}/issues",
                    body={"title": title, "body": text, "labels": [DRIFT_LABEL]},
                )
                return IssueAction("opened", _int_field(data, "number", "the new issue"))
            except GitHubError as exc:
                if not self._may_post_again(exc, attempt == attempts - 1):
                    raise
                self.pause(attempt, "POST drift issue")
        raise AssertionError("unreachable")  # pragma: no cover


def _headed(body: Any, marker: str) -> bool:
    """Whether `body` starts with a whole fleet-sync header (sync/github/comment.py) that begins
    with `marker` (one fleet and kind, any hash)."""
    parsed = PlanComment.parse(body) if isinstance(body, str) else None
    return parsed is not None and parsed.marker == marker


def _first_line(body: Any) -> str:
    """A body's first line (GitHub may store a body edited on the web with CRLF)."""
    return body.split("\n", 1)[0].removesuffix("\r") if isinstance(body, str) else ""


def _raise_if_fatal(exc: GitHubError) -> None:
    """A refused token or a rate limit: the next call would fail the same way."""
    if exc.status == 401 or (exc.retryable and exc.status in (403, 429)):
        raise exc


def _check_length(body: str) -> None:
    if len(body) > GITHUB_COMMENT_LIMIT:
        raise GitHubError(
            f"comment of {len(body)} characters exceeds GitHub's {GITHUB_COMMENT_LIMIT}: "
            "shorten it with sync.github.comment.fit"
        )


def _comment_ref(
    data: Mapping[str, Any], action: Literal["created", "updated", "unchanged"]
) -> CommentRef:
    url = data.get("html_url")
    shown = printable(url)[:300] if isinstance(url, str) else ""
    return CommentRef(_int_field(data, "id", "a comment"), shown, action)


def _int_field(data: Mapping[str, Any], key: str, what: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise GitHubError(
            f"GitHub's answer about {what} has no whole-number {key}: check GITHUB_API_URL "
            "points at the GitHub REST API."
        )
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
