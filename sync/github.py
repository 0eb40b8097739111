"""GitHub REST client: sticky PR comment, drift issue, pull requests of a commit.

I/O only. Everything here talks to ``GITHUB_API_URL`` (default https://api.github.com), so tests
point it at a fake server on 127.0.0.1. The token is sent in the ``Authorization`` header and
nowhere else: it never appears in a message, a log line or a ``repr``.

Writes that create something (a comment, an issue) are not retried blindly: a 5xx on a POST may
mean GitHub stored it anyway, so the sticky-comment and drift-issue paths look again for their
marker before posting a second time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Self

import httpx

from . import scrub
from .comment import GITHUB_COMMENT_LIMIT
from .github_config import (
    GitHubConfig,
    GitHubError,
    client_error_message,
    decode,
    is_rate_limited,
    rate_limit_message,
)

DRIFT_LABEL = "fleet-drift"
DRIFT_RESOLVED = "Drift resolved: live state matches fleet.yaml again."
PAGE_SIZE = 100  # GitHub's maximum per_page

JSON = dict[str, Any]


@dataclass(frozen=True)
class CommentRef:
    id: int
    url: str
    action: Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class IssueAction:
    action: Literal["opened", "updated", "closed", "none"]
    number: int | None


def drift_marker(fleet: str) -> str:
    """The hidden marker that identifies a fleet's drift issue."""
    return f"<!-- fleet-sync:drift fleet={fleet} -->"


class GitHubClient:
    """A small synchronous GitHub REST client for one repository."""

    def __init__(
        self,
        config: GitHubConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self._retries = retries
        self._backoff = backoff
        self._sleep = sleep
        self._base = httpx.URL(config.api_url.rstrip("/") + "/")
        self._http = httpx.Client(
            base_url=self._base,
            transport=transport,
            timeout=timeout,
            follow_redirects=False,
            headers={
                "Authorization": f"Bearer {config.token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "fleet-sync",
            },
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ pull requests

    def pull_request_number(self) -> int | None:
        """The PR number from the event payload (``pull_request.number``), None when absent."""
        path = self.config.event_path
        if not path:
            return None
        try:
            with open(path, encoding="utf-8") as fh:
                event = json.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise GitHubError(
                f"could not read the event payload at GITHUB_EVENT_PATH={path} "
                f"({type(exc).__name__}): it should be the JSON file GitHub Actions writes."
            ) from exc
        pr = event.get("pull_request") if isinstance(event, dict) else None
        number = pr.get("number") if isinstance(pr, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            return number
        return None

    def pull_requests_for_commit(self, sha: str) -> list[int]:
        """Numbers of the open or merged PRs associated with a commit."""
        numbers: list[int] = []
        for pr in self._paginate(f"repos/{self.config.repository}/commits/{sha}/pulls"):
            number = pr.get("number")
            if not isinstance(number, int) or number in numbers:
                continue
            if pr.get("state") == "open" or pr.get("merged_at"):
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
        """Edit the comment carrying ``marker`` in place, or post it once if there is none."""
        if marker not in body:
            raise ValueError("the sticky comment body must contain its marker")
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
                if not exc.maybe_committed or attempt == attempts - 1:
                    raise
                self._sleep(self._backoff * (2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def find_comment(self, pr_number: int, marker: str) -> JSON | None:
        """The comment carrying ``marker`` (ours first, then one quoting it), or None."""
        matches = [c for c in self.list_comments(pr_number) if marker in str(c.get("body") or "")]
        # Prefer a comment that starts with the marker (ours) over one quoting it.
        matches.sort(key=lambda c: (not str(c.get("body") or "").startswith(marker), c["id"]))
        return matches[0] if matches else None

    # ------------------------------------------------------------------ drift issue

    def find_drift_issues(self, fleet: str) -> list[JSON]:
        """Open issues labelled fleet-drift whose body carries this fleet's marker, oldest first."""
        marker = drift_marker(fleet)
        found = [
            issue
            for issue in self._paginate(
                f"repos/{self.config.repository}/issues",
                {"labels": DRIFT_LABEL, "state": "open"},
            )
            if "pull_request" not in issue and marker in str(issue.get("body") or "")
        ]
        return sorted(found, key=lambda issue: int(issue["number"]))

    def sync_drift_issue(self, fleet: str, body: str | None) -> IssueAction:
        """Open or update the fleet's drift issue (body given), or close it (body None)."""
        repo = self.config.repository
        marker = drift_marker(fleet)
        if body is None:
            open_issues = self.find_drift_issues(fleet)
            if not open_issues:
                return IssueAction("none", None)
            for issue in open_issues:  # more than one only if someone duplicated it by hand
                number = int(issue["number"])
                self._json(
                    "POST", f"repos/{repo}/issues/{number}/comments", body={"body": DRIFT_RESOLVED}
                )
                self._json("PATCH", f"repos/{repo}/issues/{number}", body={"state": "closed"})
            return IssueAction("closed", int(open_issues[0]["number"]))

        text = body if marker in body else f"{marker}\n{body}"
        title = f"Drift: live LiteLLM routes differ from fleet.yaml (fleet {fleet})"
        attempts = self._retries + 1
        for attempt in range(attempts):
            open_issues = self.find_drift_issues(fleet)
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
                return IssueAction("opened", int(data["number"]))
            except GitHubError as exc:
                if not exc.maybe_committed or attempt == attempts - 1:
                    raise
                self._sleep(self._backoff * (2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ transport

    def _paginate(self, path: str, params: Mapping[str, str] | None = None) -> Iterator[JSON]:
        query = {**(params or {}), "per_page": str(PAGE_SIZE)}
        url: str | httpx.URL = path
        first = True
        while True:
            response = self._request("GET", url, params=query if first else None)
            first = False
            data = decode(response, f"GET /{path}")
            if not isinstance(data, list):
                raise GitHubError(
                    f"GitHub answered GET /{path} with something other than a list: "
                    "check GITHUB_API_URL points at the GitHub REST API."
                )
            for item in data:
                if isinstance(item, dict):
                    yield item
            next_url = response.links.get("next", {}).get("url")
            if not next_url:
                return
            url = self._same_origin(httpx.URL(next_url), path)

    def _same_origin(self, url: httpx.URL, path: str) -> httpx.URL:
        base = self._base
        if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):
            raise GitHubError(
                f"GitHub's next-page link for GET /{path} points at another host ({url.host}); "
                "refusing to send the token there: check GITHUB_API_URL."
            )
        return url

    def _json(self, method: str, path: str, *, body: JSON) -> JSON:
        response = self._request(method, path, json_body=body)
        data = decode(response, f"{method} /{path}")
        if not isinstance(data, dict):
            raise GitHubError(
                f"GitHub answered {method} /{path} with something other than an object: "
                "check GITHUB_API_URL points at the GitHub REST API."
            )
        return data

    def _request(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        params: Mapping[str, str] | None = None,
        json_body: JSON | None = None,
    ) -> httpx.Response:
        endpoint = f"{method} {_path_of(url, self._base)}"
        idempotent = method in {"GET", "PATCH", "PUT", "DELETE", "HEAD"}
        attempts = self._retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                # The last scrub of what GitHub receives (comments and issues are public to
                # the repository): the run's secrets and user:pass@ of addresses.
                response = self._http.request(
                    method, url, params=params, json=scrub.active().value(json_body)
                )
            except httpx.TransportError as exc:
                not_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                if (idempotent or not_sent) and not last:
                    self._sleep(self._backoff * (2**attempt))
                    continue
                raise GitHubError(
                    self._redact(
                        f"could not reach GitHub at {self.config.api_url} for {endpoint} "
                        f"after {attempt + 1} attempt(s) ({type(exc).__name__}): network problem "
                        "or wrong GITHUB_API_URL."
                    ),
                    endpoint=endpoint,
                    retryable=True,
                    maybe_committed=not not_sent and not idempotent,
                ) from None
            status = response.status_code
            if status < 400:
                return response
            if is_rate_limited(response):
                raise GitHubError(
                    self._redact(rate_limit_message(response, endpoint)),
                    status=status,
                    endpoint=endpoint,
                    retryable=True,
                )
            if status >= 500:
                if idempotent and not last:
                    self._sleep(self._backoff * (2**attempt))
                    continue
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise GitHubError(
                    self._redact(
                        f"GitHub answered {status} to {endpoint}{tries}: an error on GitHub's "
                        "side, not in fleet.yaml; re-run the job later."
                    ),
                    status=status,
                    endpoint=endpoint,
                    retryable=True,
                    maybe_committed=not idempotent,
                )
            raise GitHubError(
                self._redact(client_error_message(response, endpoint)),
                status=status,
                endpoint=endpoint,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _redact(self, text: str) -> str:
        token = self.config.token
        return scrub.scrub(text.replace(token, "***") if token else text)


def _check_length(body: str) -> None:
    if len(body) > GITHUB_COMMENT_LIMIT:
        raise ValueError(
            f"comment of {len(body)} characters exceeds GitHub's {GITHUB_COMMENT_LIMIT}: "
            "shorten it with sync.comment.fit"
        )


def _comment_ref(
    data: Mapping[str, Any], action: Literal["created", "updated", "unchanged"]
) -> CommentRef:
    return CommentRef(id=int(data["id"]), url=str(data.get("html_url") or ""), action=action)


def _path_of(url: str | httpx.URL, base: httpx.URL) -> str:
    if isinstance(url, httpx.URL):
        raw = url.path
        prefix = base.path.rstrip("/")
        if prefix and raw.startswith(prefix):
            raw = raw[len(prefix) :]
        return raw
    return "/" + url.lstrip("/")
