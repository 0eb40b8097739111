"""Edge: one HTTP request whose whole answer, headers and body, must arrive within a total
deadline and a size cap — every request fleet-sync sends: the proxy's admin API, a probed host,
apply --verify through the proxy, GitHub.

httpx's timeouts bound each network operation, not the request: an answer that drips a byte
every few seconds, in its headers as much as in its body, never trips them. The request runs on
a worker thread the caller stops waiting for at the deadline; the worker stops reading at its
next chunk (or at httpx's own timeout while a read stalls) and gives its connection back. The
body is counted after decoding, so neither a huge answer nor a gzip bomb fills memory.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx


class AnswerLate(Exception):
    """No complete answer before the deadline."""


class AnswerTooLarge(Exception):
    """The answer grew past the cap."""


@dataclass(frozen=True)
class Answer:
    """A whole answer: status, headers, the decoded body and the parsed Link header."""

    status: int
    body: bytes
    headers: httpx.Headers = field(default_factory=httpx.Headers)
    links: dict[str | None, dict[str, str]] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def exchange(
    http: httpx.Client,
    method: str,
    url: str | httpx.URL,
    *,
    seconds: float,
    cap: int,
    **kwargs: Any,
) -> Answer:
    """The whole answer within `seconds` (connect, send, headers and body) and `cap` bytes.
    Raises AnswerLate, AnswerTooLarge, or the httpx error the request ended with."""
    deadline = time.monotonic() + seconds
    outcome: queue.SimpleQueue[Answer | Exception] = queue.SimpleQueue()
    abandoned = threading.Event()

    def work() -> None:
        try:
            outcome.put(_read(http, method, url, cap, deadline, abandoned, kwargs))
        except Exception as exc:  # handed over to the caller, raised there
            outcome.put(exc)

    threading.Thread(target=work, name="fleet-sync-request", daemon=True).start()
    try:
        result = outcome.get(timeout=max(deadline - time.monotonic(), 0.0))
    except queue.Empty:
        abandoned.set()
        raise AnswerLate from None
    if isinstance(result, Exception):
        raise result
    return result


def _read(
    http: httpx.Client,
    method: str,
    url: str | httpx.URL,
    cap: int,
    deadline: float,
    abandoned: threading.Event,
    kwargs: Mapping[str, Any],
) -> Answer:
    with http.stream(method, url, **kwargs) as response:
        body = bytearray()
        for chunk in response.iter_bytes():  # decoded: a gzip bomb is capped too
            body += chunk
            if len(body) > cap:
                raise AnswerTooLarge
            if abandoned.is_set() or time.monotonic() > deadline:
                raise AnswerLate
        return Answer(response.status_code, bytes(body), response.headers, response.links)
