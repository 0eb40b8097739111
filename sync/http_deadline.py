"""One HTTP request and its whole answer within a total deadline and a size cap.

httpx's timeouts bound each network operation, not the request: a body that drips one byte a
second never trips them. The request runs on a worker thread that the caller stops waiting for
at the deadline; the worker stops reading at its next chunk (or at httpx's own timeout while a
read stalls) and gives its connection back. The body is read as a stream and counted after
decoding, so neither a huge answer nor a gzip bomb fills memory. (sync/litellm.py does the same
for the proxy; this is the GitHub edge's copy, free of the proxy's error classes.)
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

# The cap of an answer after decoding: 16 MiB is far beyond any page GitHub sends (100 comments
# of 65,536 characters are ~6.5 MiB, escaped) while a broken or hostile server cannot fill memory.
MAX_BODY_BYTES = 16 * 2**20


class AnswerLate(Exception):
    """No complete answer before the request's deadline."""


class AnswerTooLarge(Exception):
    """The answer grew past its cap."""


@dataclass(frozen=True)
class Answer:
    """A whole answer: status, headers, the decoded body and the parsed Link header."""

    status: int
    headers: httpx.Headers
    body: bytes
    links: dict[str | None, dict[str, str]] = field(default_factory=dict)


def exchange(
    http: httpx.Client,
    method: str,
    url: str | httpx.URL,
    *,
    seconds: float,
    max_bytes: int = MAX_BODY_BYTES,
    **kwargs: Any,
) -> Answer:
    """Send one request; its whole answer within ``seconds`` (connect, send and every byte of
    the body) and ``max_bytes``. Raises AnswerLate, AnswerTooLarge or what httpx raises."""
    deadline = time.monotonic() + seconds
    outcome: queue.SimpleQueue[Answer | Exception] = queue.SimpleQueue()
    abandoned = threading.Event()

    def work() -> None:
        try:
            outcome.put(_read(http, method, url, deadline, max_bytes, abandoned, kwargs))
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
    deadline: float,
    max_bytes: int,
    abandoned: threading.Event,
    kwargs: dict[str, Any],
) -> Answer:
    with http.stream(method, url, **kwargs) as response:
        body = bytearray()
        for chunk in response.iter_bytes():  # decoded: a gzip bomb is capped too
            body += chunk
            if len(body) > max_bytes:
                raise AnswerTooLarge
            if abandoned.is_set() or time.monotonic() > deadline:
                raise AnswerLate
        return Answer(response.status_code, response.headers, bytes(body), response.links)
