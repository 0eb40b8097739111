"""What GitHub Actions gives a job (token, repository, API URL, event file, job summary) and the
one error every GitHub call raises, with messages that say what to do."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from sync.errors import FleetSyncError
from sync.github.comment import fit
from sync.github.identity import AUTHOR_VARIABLE, is_login
from sync.secrets import scrub
from sync.secrets.credentials import has_userinfo, strip_userinfo, unsendable
from sync.secrets.display import printable
from sync.untrusted.bounded_http import Answer
from sync.untrusted.json_parser import MAX_JSON_BYTES, parse_json

DEFAULT_API_URL = "https://api.github.com"
TIMEOUT_VARIABLE = "FLEET_SYNC_GITHUB_TIMEOUT"
# Each request to GitHub, its whole answer included; a retry gets its own.
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0
# GitHub drops a step's summary past 1 MiB (and shows nothing of it); a 5,000-route plan is more.
SUMMARY_LIMIT = 1024 * 1024


class GitHubError(FleetSyncError):
    """A GitHub call failed; ``str(err)`` is one sentence saying what happened and what to do."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        endpoint: str | None = None,
        retryable: bool = False,
        maybe_committed: bool = False,
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint
        self.detail = detail  # GitHub's own message of a 4xx answer ("" when none)
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
    author: str | None = None  # FLEET_SYNC_GITHUB_AUTHOR: the login the token writes as
    timeout: float = DEFAULT_TIMEOUT  # seconds per request, the whole answer included
    graphql_url: str | None = None  # GITHUB_GRAPHQL_URL; None: next to api_url

    @property
    def graphql_endpoint(self) -> str:
        """GitHub's GraphQL API: GITHUB_GRAPHQL_URL (GitHub Actions sets it), else beside the
        REST API: https://api.github.com/graphql, or <host>/api/graphql for a GitHub Enterprise
        Server's <host>/api/v3."""
        if self.graphql_url:
            return self.graphql_url
        rest = httpx.URL(self.api_url)
        path = rest.path.rstrip("/")
        path = path[: -len("/v3")] + "/graphql" if path.endswith("/api/v3") else path + "/graphql"
        return str(rest.copy_with(path=path, query=None, fragment=None))

    def __post_init__(self) -> None:
        # It becomes part of every request's path: a '?', '#' or '/..' would change the URL.
        if not _REPOSITORY.fullmatch(self.repository) or ".." in self.repository:
            raise GitHubError(
                f"GITHUB_REPOSITORY must be 'owner/name', got {printable(self.repository)[:200]!r}"
                ": set it to the repository to comment on (GitHub Actions sets it for you)."
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
        if why := unsendable(token):
            raise GitHubError(
                f"GITHUB_TOKEN cannot be sent to GitHub: {why}; set it to the token exactly as "
                "issued (in a workflow: `GITHUB_TOKEN: ${{ github.token }}`)."
            )
        api_url = checked_url("GITHUB_API_URL", environ.get("GITHUB_API_URL") or DEFAULT_API_URL)
        step_summary = environ.get("GITHUB_STEP_SUMMARY") or None
        if step_summary is not None and os.path.isdir(step_summary):
            raise GitHubError(
                f"GITHUB_STEP_SUMMARY={printable(step_summary)[:200]} is a directory: set it to "
                "the job summary file (GitHub Actions sets it for you), or unset it."
            )
        graphql = environ.get("GITHUB_GRAPHQL_URL", "").strip()
        graphql_url = checked_url("GITHUB_GRAPHQL_URL", graphql) if graphql else None
        author = environ.get(AUTHOR_VARIABLE, "").strip() or None
        if author is not None and not is_login(author):
            raise GitHubError(
                f"{AUTHOR_VARIABLE}={printable(author)[:100]!r} is not a GitHub login: set it to "
                "the login the token writes as (e.g. my-app[bot] for a GitHub App), or unset it."
            )
        return cls(
            token=token,
            repository=repository,
            api_url=api_url,
            event_path=environ.get("GITHUB_EVENT_PATH") or None,
            step_summary=step_summary,
            sha=environ.get("GITHUB_SHA") or None,
            author=author,
            timeout=_timeout(environ.get(TIMEOUT_VARIABLE, "").strip()),
            graphql_url=graphql_url,
        )


_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
_HOST = re.compile(r"[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]")


def checked_url(variable: str, value: str) -> str:
    """An API address from the environment (GITHUB_API_URL, GITHUB_GRAPHQL_URL), without a
    trailing slash; a GitHubError naming the variable when it is none httpx can send the token
    to safely."""
    url = value.strip().rstrip("/")
    shown = printable(strip_userinfo(url))[:200]

    def refuse(why: str) -> GitHubError:
        return GitHubError(
            f"{variable}={shown!r} {why}: set it to the GitHub API address, e.g. "
            "https://api.github.com (GitHub Actions sets it for you), or unset it."
        )

    if has_userinfo(url):
        # httpx would send user:pass@ as Basic auth in place of the token.
        raise refuse("carries credentials (user:pass@; the token goes in GITHUB_TOKEN)")
    try:
        parsed = httpx.URL(url)
        port = parsed.port
        parsed.host  # noqa: B018  (httpx decodes an xn-- label only when the host is read)
        host = parsed.raw_host.decode("ascii")
    except (httpx.InvalidURL, ValueError) as exc:  # an IDNA error is a ValueError
        raise refuse(f"is not a valid address ({printable(str(exc))[:100]})") from None
    if parsed.scheme not in ("http", "https"):
        raise refuse("must start with https:// (or http://)")
    if not _HOST.fullmatch(host) or (port is not None and not 0 < port < 65536):
        raise refuse("has no valid host and port")
    return url


def _timeout(text: str) -> float:
    if not text:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= MAX_TIMEOUT:  # NaN fails too
        raise GitHubError(
            f"{TIMEOUT_VARIABLE}={printable(text)[:40]!r} is not a number of seconds from 0 "
            f"to {MAX_TIMEOUT:g}: set it to the deadline of one GitHub request, or unset it "
            f"(default {DEFAULT_TIMEOUT:g})."
        )
    return seconds


def read_event(path: str) -> Any:
    """The event payload GitHub Actions wrote at GITHUB_EVENT_PATH, parsed with the bounded
    parser; OSError when unreadable, ValueError when too large, not JSON or too deep."""
    with open(path, "rb") as fh:
        raw = fh.read(MAX_JSON_BYTES + 1)
    if len(raw) > MAX_JSON_BYTES:
        raise ValueError(f"larger than {MAX_JSON_BYTES // 2**20} MiB")
    return parse_json(raw)


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
    try:
        with open(config.step_summary, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise GitHubError(
            f"GITHUB_STEP_SUMMARY={printable(config.step_summary)[:200]} cannot be written "
            f"({exc.strerror or type(exc).__name__}): set it to the job summary file (GitHub "
            "Actions sets it for you), or unset it."
        ) from None
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


def decode(answer: Answer, endpoint: str) -> Any:
    """The answer's JSON through the one bounded parser: garbage is a one-line GitHubError."""
    try:
        return parse_json(answer.body)
    except ValueError as exc:
        raise GitHubError(
            f"GitHub's answer to {endpoint} is unusable ({exc}): "
            "check GITHUB_API_URL points at the GitHub REST API.",
            status=answer.status,
            endpoint=endpoint,
        ) from None


def is_rate_limited(answer: Answer) -> bool:
    if answer.status not in (403, 429):
        return False
    headers = answer.headers
    return headers.get("x-ratelimit-remaining", "").strip() == "0" or "retry-after" in headers


# What a rate-limit header may say and still be shown: a wait of up to a day, a reset time
# from 1970 to the end of 9999 (datetime's range). Anything else is "retry later".
MAX_RETRY_AFTER = 86_400
MAX_RESET = 253_402_300_799


def header_seconds(value: str | None, highest: int) -> int | None:
    """A header's whole number of seconds from 0 to `highest`, or None: GitHub's answer is
    not ours, and a value like ``1e17``, 10^20 or ``²`` must end in "retry later", never in
    an OverflowError."""
    text = (value or "").strip()
    if not (0 < len(text) <= len(str(highest)) and text.isascii() and text.isdigit()):
        return None
    number = int(text)
    return number if number <= highest else None


def rate_limit_message(answer: Answer, endpoint: str) -> str:
    headers = answer.headers
    retry_after = header_seconds(headers.get("retry-after"), MAX_RETRY_AFTER)
    reset = header_seconds(headers.get("x-ratelimit-reset"), MAX_RESET)
    if retry_after is not None:
        when = f"retry after {retry_after} s"
    elif reset is not None:
        at = datetime.fromtimestamp(reset, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        when = f"the limit resets at {at}"
    else:
        when = "retry later"
    return (
        f"GitHub rate limit hit ({answer.status}) on {endpoint}: too many API calls "
        f"for this token; {when}."
    )


def github_message(answer: Answer) -> str:
    """GitHub's ``message`` of an error answer, one printable line ("" when it has none)."""
    try:
        data = parse_json(answer.body)
    except ValueError:
        return ""
    message = data.get("message") if isinstance(data, dict) else None
    return printable(message)[:200] if isinstance(message, str) else ""


def client_error_message(answer: Answer, endpoint: str) -> str:
    status = answer.status
    message = github_message(answer)
    detail = f" ({message})" if message else ""
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
