"""Edge: one HTTP request whose whole answer, headers and body, must arrive within a total
deadline and a size cap: what the probe and apply --verify ask of hosts and of the proxy.

httpx's timeouts bound each network operation, not the request: an answer that drips a byte
every few seconds, in its headers as much as in its body, never trips them. The request runs on
a worker thread the caller stops waiting for at the deadline; the worker stops reading at its
next chunk (or at httpx's own timeout while a read stalls) and gives its connection back.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx


class AnswerLate(Exception):
    """No complete answer before the deadline."""


class AnswerTooLarge(Exception):
    """The answer grew past the cap."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def exchange(
    http: httpx.Client, method: str, url: str, *, seconds: float, cap: int, **kwargs: Any
) -> Reply:
    """The whole answer within `seconds` (connect, send, headers and body) and `cap` bytes
    (decoded: a gzip bomb is capped too). Raises AnswerLate, AnswerTooLarge, or the httpx error
    the request ended with."""
    deadline = time.monotonic() + seconds
    outcome: queue.SimpleQueue[Reply | Exception] = queue.SimpleQueue()
    abandoned = threading.Event()

    def work() -> None:
        try:
            outcome.put(_read(http, method, url, cap, deadline, abandoned, kwargs))
        except Exception as exc:  # handed over to the caller, raised there
            outcome.put(exc)

    threading.Thread(target=work, name="fleet-sync-bounded-request", daemon=True).start()
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
    url: str,
    cap: int,
    deadline: float,
    abandoned: threading.Event,
    kwargs: Mapping[str, Any],
) -> Reply:
    with http.stream(method, url, **kwargs) as response:
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > cap:
                raise AnswerTooLarge
            if abandoned.is_set() or time.monotonic() > deadline:
                raise AnswerLate
        return Reply(response.status_code, response.headers, bytes(body))
