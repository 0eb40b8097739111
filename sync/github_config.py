"""What GitHub Actions gives a job (token, repository, API URL, event file, job summary) and the
one error every GitHub call raises, with messages that say what to do."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from . import scrub
from .comment import fit
from .credentials import has_userinfo, strip_userinfo

DEFAULT_API_URL = "https://api.github.com"
# GitHub drops a step's summary past 1 MiB (and shows nothing of it); a 5,000-route plan is more.
SUMMARY_LIMIT = 1024 * 1024


class GitHubError(Exception):
    """A GitHub call failed; ``str(err)`` is one sentence saying what happened and what to do."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        endpoint: str | None = None,
        retryable: bool = False,
        maybe_committed: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint
        self.retryable = retryable
        # True when a write may have been stored although it failed (5xx/timeout after sending).
        self.maybe_committed = maybe_committed


@dataclass(frozen=True)
class GitHubConfig:
    token: str = field(repr=False)
    repository: str
    api_url: str = DEFAULT_API_URL
    event_path: str | None = None
    step_summary: str | None = None
    sha: str | None = None

    def __post_init__(self) -> None:
        owner, sep, name = self.repository.partition("/")
        if not sep or not owner or not name or "/" in name:
            raise GitHubError(
                f"GITHUB_REPOSITORY must be 'owner/name', got {self.repository!r}: "
                "set it to the repository to comment on (GitHub Actions sets it for you)."
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GitHubConfig:
        """Build the config from GitHub Actions' variables; missing token/repo is a GitHubError."""
        environ = os.environ if environ is None else environ
        token = environ.get("GITHUB_TOKEN", "").strip()
        repository = environ.get("GITHUB_REPOSITORY", "").strip()
        missing = [
            name
            for name, value in (("GITHUB_TOKEN", token), ("GITHUB_REPOSITORY", repository))
            if not value
        ]
        if missing:
            raise GitHubError(
                f"{' and '.join(missing)} not set: set GITHUB_TOKEN (in a workflow: "
                "`GITHUB_TOKEN: ${{ github.token }}`) and GITHUB_REPOSITORY (owner/name) "
                "to post to GitHub."
            )
        api_url = (environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        if has_userinfo(api_url):
            # httpx would send user:pass@ as Basic auth in place of the token.
            raise GitHubError(
                f"GITHUB_API_URL {strip_userinfo(api_url)!r} carries credentials (user:pass@): "
                "remove them; the token goes in GITHUB_TOKEN."
            )
        return cls(
            token=token,
            repository=repository,
            api_url=api_url,
            event_path=environ.get("GITHUB_EVENT_PATH") or None,
            step_summary=environ.get("GITHUB_STEP_SUMMARY") or None,
            sha=environ.get("GITHUB_SHA") or None,
        )


def write_step_summary(
    config: GitHubConfig,
    markdown: str,
    note: str = "the rest does not fit GitHub's 1 MiB job summary",
    limit: int = SUMMARY_LIMIT,
) -> bool:
    """Append markdown to the job summary file (GITHUB_STEP_SUMMARY), cut at a line with ``note``
    when the step's summary would pass ``limit`` bytes. True when all of it was written; False
    when it was cut or there is no summary file."""
    if not config.step_summary:
        return False
    text = scrub.scrub(markdown if markdown.endswith("\n") else markdown + "\n")
    try:
        room = limit - os.path.getsize(config.step_summary) - 1
    except OSError:
        room = limit - 1  # not there yet: the append creates it
    whole = len(text.encode("utf-8")) <= room
    if not whole:
        text = _cut(text, room, note)
    with open(config.step_summary, "a", encoding="utf-8") as fh:
        fh.write(text)
    return whole


def _cut(text: str, room: int, note: str) -> str:
    """``text`` cut by ``fit`` to ``room`` UTF-8 bytes at most; empty when the note cannot fit."""
    chars = room
    while chars > 0:
        try:
            cut = fit(text, chars, note)
        except ValueError:
            return ""
        over = len(cut.encode("utf-8")) - room
        if over <= 0:
            return cut
        chars -= over  # fit counts characters; a multi-byte character costs more
    return ""


def decode(response: httpx.Response, endpoint: str) -> Any:
    try:
        return response.json()
    except ValueError:
        raise GitHubError(
            f"GitHub answered {endpoint} with a body that is not JSON: "
            "check GITHUB_API_URL points at the GitHub REST API.",
            status=response.status_code,
            endpoint=endpoint,
        ) from None


def is_rate_limited(response: httpx.Response) -> bool:
    if response.status_code not in (403, 429):
        return False
    headers = response.headers
    return headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers


def rate_limit_message(response: httpx.Response, endpoint: str) -> str:
    headers = response.headers
    retry_after = headers.get("retry-after")
    reset = headers.get("x-ratelimit-reset")
    if retry_after and retry_after.strip().isdigit():
        when = f"retry after {int(retry_after)} s"
    elif reset and reset.strip().isdigit():
        at = datetime.fromtimestamp(int(reset), tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        when = f"the limit resets at {at}"
    else:
        when = "retry later"
    return (
        f"GitHub rate limit hit ({response.status_code}) on {endpoint}: too many API calls "
        f"for this token; {when}."
    )


def client_error_message(response: httpx.Response, endpoint: str) -> str:
    status = response.status_code
    detail = ""
    try:
        data = response.json()
        if isinstance(data, dict) and isinstance(data.get("message"), str):
            detail = f" ({data['message'][:200]})"
    except ValueError:
        pass
    if status == 401:
        hint = "the token is invalid or expired; set GITHUB_TOKEN to a valid token"
    elif status == 403:
        hint = (
            "the token lacks permission; give the workflow `permissions: pull-requests: write` "
            "(comments) or `issues: write` (drift issue)"
        )
    elif status == 404:
        hint = (
            "not found; check GITHUB_REPOSITORY and the PR/issue number, "
            "and that the token can see them"
        )
    elif status == 422:
        hint = "GitHub rejected the request content"
    else:
        hint = "the request was refused"
    return f"GitHub answered {status} to {endpoint}{detail}: {hint}."
