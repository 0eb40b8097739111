"""The GitHub REST transport: one repository's API, each request within a total deadline and
a size cap, retried where that is safe, every answer parsed by the one bounded JSON parser, and
all of one client's requests (one command's GitHub work: pages, retries and their pauses
included) within a total budget: next-page links that never end, each page answered in time,
cannot hold a job for hours.

The token is sent in the ``Authorization`` header and nowhere else: it never appears in a
message, a log line or a ``repr``. A late, huge, deep or garbled answer is a one-line
GitHubError (sync/untrusted/bounded_http.py), never a traceback or a hang.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self

import httpx

from sync.github.actions import (
    GitHubConfig,
    GitHubError,
    client_error_message,
    decode,
    github_message,
    is_rate_limited,
    rate_limit_message,
)
from sync.secrets import scrub
from sync.secrets.display import printable
from sync.untrusted.bounded_http import Answer, AnswerLate, AnswerTooLarge, exchange
from sync.untrusted.json_parser import MAX_JSON_BYTES

PAGE_SIZE = 100  # GitHub's maximum per_page
# 10,000 items: far beyond any pull request's comments (GitHub stops a conversation long before),
# open drift issues or pull requests of a commit; the bound keeps next-page links that never end
# from making fleet-sync read on.
MAX_PAGES = 100
# The budget of one client, all requests together: this many per-request deadlines
# (FLEET_SYNC_GITHUB_TIMEOUT), at least a minute and at most half an hour.
BUDGET_FACTOR = 10
MIN_BUDGET, MAX_BUDGET = 60.0, 1800.0


def total_budget(timeout: float) -> float:
    """Seconds all of one command's GitHub requests may take together."""
    return min(max(BUDGET_FACTOR * timeout, MIN_BUDGET), MAX_BUDGET)


JSON = dict[str, Any]


class GitHubHTTP:
    """Requests to one repository's GitHub REST API (the clients build on it)."""

    def __init__(
        self,
        config: GitHubConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float | None = None,
        retries: int = 2,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        max_bytes: int = MAX_JSON_BYTES,
        budget: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.timeout = config.timeout if timeout is None else timeout
        self.budget = total_budget(self.timeout) if budget is None else budget
        self._clock = clock
        self._started = clock()
        self._requests = 0
        self._max_bytes = max_bytes
        self._retries = retries
        self._backoff = backoff
        self._sleep = sleep
        self._base = httpx.URL(config.api_url.rstrip("/") + "/")
        self._http = httpx.Client(
            base_url=self._base,
            transport=transport,
            timeout=self.timeout,  # per network operation; exchange bounds the whole request
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

    def _paginate(self, path: str, params: Mapping[str, str] | None = None) -> Iterator[JSON]:
        query = {**(params or {}), "per_page": str(PAGE_SIZE)}
        url: str | httpx.URL = path
        for page in range(MAX_PAGES):
            response = self._request("GET", url, params=None if page else query)
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
            url = self._same_origin(str(next_url), path)
        raise GitHubError(
            f"GitHub's answer to GET /{path} goes on past {MAX_PAGES} pages of {PAGE_SIZE}: "
            "check GITHUB_API_URL points at the GitHub REST API."
        )

    def _same_origin(self, link: str, path: str) -> httpx.URL:
        base = self._base
        try:
            url = httpx.URL(link)
        except httpx.InvalidURL:
            url = httpx.URL()  # no host: refused below
        if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):
            raise GitHubError(
                f"GitHub's next-page link for GET /{path} points at another host "
                f"({printable(url.host)[:100] or 'none'}); refusing to send the token there: "
                "check GITHUB_API_URL."
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
        idempotent: bool | None = None,
    ) -> Answer:
        """One request, retried where that is safe (`idempotent`: by default by its method;
        a GraphQL query is a POST that is safe to send again)."""
        endpoint = f"{method} {_path_of(url, self._base)}"
        if idempotent is None:
            idempotent = method in {"GET", "PATCH", "PUT", "DELETE", "HEAD"}
        attempts = self._retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            sent = _Sent(method, url, endpoint, params, json_body, idempotent)
            answer = self._attempt(sent, attempt, last)
            if answer is None:
                continue  # not answered, safe to send again: paused already
            if answer.status < 400:
                return answer
            if answer.status >= 500 and not is_rate_limited(answer) and idempotent and not last:
                self.pause(attempt, endpoint)
                continue
            raise self._refused(answer, endpoint, attempt, idempotent)
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, sent: _Sent, attempt: int, last: bool) -> Answer | None:
        """The answer to one attempt, or None when it got none and may be sent again (after
        the pause); a GitHubError when it got none and may not."""
        endpoint, idempotent = sent.endpoint, sent.idempotent
        seconds = min(self.timeout, self._left(endpoint))
        self._requests += 1
        try:
            # The last scrub of what GitHub receives (comments and issues are public to the
            # repository): the run's secrets and user:pass@ of addresses.
            return exchange(
                self._http,
                sent.method,
                sent.url,
                seconds=seconds,
                cap=self._max_bytes,
                params=sent.params,
                json=scrub.active().value(sent.json_body),
            )
        except AnswerTooLarge:
            raise GitHubError(
                f"GitHub's answer to {endpoint} is larger than "
                f"{self._max_bytes / 2**20:g} MiB: check GITHUB_API_URL points at the "
                "GitHub REST API.",
                endpoint=endpoint,
                maybe_committed=not idempotent,
            ) from None
        except httpx.DecodingError:
            raise GitHubError(
                f"GitHub's answer to {endpoint} cannot be decoded: check GITHUB_API_URL "
                "points at the GitHub REST API.",
                endpoint=endpoint,
                maybe_committed=not idempotent,
            ) from None
        except (AnswerLate, httpx.TransportError) as exc:
            not_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
            late = isinstance(exc, AnswerLate | httpx.TimeoutException)
            if seconds < self.timeout and late:
                raise self._over_budget(endpoint, maybe_committed=not idempotent) from None
            if (idempotent or not_sent) and not last:
                self.pause(attempt, endpoint)
                return None
            why = f"no complete answer within {self.timeout:g} s" if late else type(exc).__name__
            raise GitHubError(
                self._redact(
                    f"could not reach GitHub at {self.config.api_url} for {endpoint} "
                    f"after {attempt + 1} attempt(s) ({why}): network problem, GitHub "
                    f"too slow or wrong GITHUB_API_URL (the deadline is {self.timeout:g} "
                    "s per request: FLEET_SYNC_GITHUB_TIMEOUT)."
                ),
                endpoint=endpoint,
                retryable=True,
                maybe_committed=not not_sent and not idempotent,
            ) from None

    def _refused(
        self, answer: Answer, endpoint: str, attempt: int, idempotent: bool
    ) -> GitHubError:
        """The error for an answer of 400 or more that is not retried."""
        status = answer.status
        if is_rate_limited(answer):
            return GitHubError(
                self._redact(rate_limit_message(answer, endpoint)),
                status=status,
                endpoint=endpoint,
                retryable=True,
            )
        if status >= 500:
            tries = f" after {attempt + 1} attempts" if attempt else ""
            return GitHubError(
                self._redact(
                    f"GitHub answered {status} to {endpoint}{tries}: an error on GitHub's "
                    "side, not in fleet.yaml; re-run the job later."
                ),
                status=status,
                endpoint=endpoint,
                retryable=True,
                maybe_committed=not idempotent,
            )
        return GitHubError(
            self._redact(client_error_message(answer, endpoint)),
            status=status,
            endpoint=endpoint,
            detail=github_message(answer),
        )

    def pause(self, attempt: int, endpoint: str) -> None:
        """The back-off before retry `attempt` + 1, within the budget."""
        delay = self._backoff * (2**attempt)
        if delay >= self._left(endpoint):
            raise self._over_budget(endpoint)
        self._sleep(delay)

    def _left(self, endpoint: str) -> float:
        """Seconds left of the budget; a GitHubError when none are."""
        left = self.budget - (self._clock() - self._started)
        if left <= 0:
            raise self._over_budget(endpoint)
        return left

    def _over_budget(self, endpoint: str, maybe_committed: bool = False) -> GitHubError:
        return GitHubError(
            f"GitHub's answers took longer than this command's budget of {self.budget:g} s "
            f"in all ({self._requests} request(s); stopped at {endpoint}): GitHub too slow, "
            "next-page links that never end, or wrong GITHUB_API_URL (the budget is "
            f"{BUDGET_FACTOR} times FLEET_SYNC_GITHUB_TIMEOUT, {MIN_BUDGET:g} to "
            f"{MAX_BUDGET:g} s).",
            endpoint=endpoint,
            retryable=True,
            maybe_committed=maybe_committed,
        )

    def _redact(self, text: str) -> str:
        token = self.config.token
        return scrub.scrub(text.replace(token, scrub.MASK) if token else text)


def _path_of(url: str | httpx.URL, base: httpx.URL) -> str:
    if isinstance(url, httpx.URL):
        raw = url.path
        prefix = base.path.rstrip("/")
        if prefix and raw.startswith(prefix):
            raw = raw[len(prefix) :]
        return raw
    return "/" + url.lstrip("/")


@dataclass(frozen=True)
class _Sent:
    """One request as _request sends it (each attempt the same)."""

    method: str
    url: str | httpx.URL
    endpoint: str
    params: Mapping[str, str] | None
    json_body: JSON | None
    idempotent: bool
