"""The errors of LiteLLM's admin API as fleet-sync sees them: the classes that decide what
apply does next, and the classification of an answer into one. Pure, so it is tested on plain
data, including what each tested LiteLLM version really answers (tests/cases/litellm)."""

from __future__ import annotations

import enum
import json
from typing import Any

from sync.errors import FleetSyncError
from sync.litellm.teams import enterprise_only
from sync.secrets.display import printable
from sync.untrusted.json_parser import parse_json


class ErrorKind(enum.Enum):
    TRANSIENT = "transient"  # connect error, timeout on read, 429, 502/503/504: retry
    MAYBE_COMMITTED = "maybe committed"  # a write answered 500 / timed out: read back first
    NOT_FOUND = "not found"
    CLIENT = "client error"  # other 4xx: this change fails, others go on
    AUTH = "auth"  # 401/403: nothing will work
    NO_DATABASE = "no database"
    BAD_RESPONSE = "bad response"  # unparsable or inconsistent answer


class ProxyError(FleetSyncError):
    """LiteLLM's admin API failed; ``str(err)`` says how, in one line (exit 1 when it stops a
    command)."""

    def __init__(self, kind: ErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


def _json(body: str) -> Any:
    try:
        return parse_json(body.encode("utf-8", errors="replace"))
    except ValueError:
        return None


def error_message(body: str) -> str:
    """LiteLLM's error text from {"error": {"message": ...}} or {"detail": ...}, a readiness
    answer as its database state, else the body; short, printable (a hostile answer cannot drive
    the terminal) and never a traceback."""
    try:
        data = parse_json(body.encode("utf-8", errors="replace"))
    except ValueError:
        return printable(body.strip()[:300])
    if isinstance(data, dict):
        error = data.get("error", data.get("detail"))
        if isinstance(error, dict):
            error = error.get("message", error.get("error", error))
        if error is not None:
            text = error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)
            return printable(text[:300])
        if "db" in data:
            return printable(f"db: {data['db']}")
    return printable(body.strip()[:300])


def _error_type(body: str) -> str:
    data = _json(body)
    error = data.get("error") if isinstance(data, dict) else None
    return str(error.get("type", "")) if isinstance(error, dict) else ""


def _database_down(body: str) -> bool:
    """A readiness answer whose database is configured but not reachable ("disconnected")."""
    data = _json(body)
    return isinstance(data, dict) and data.get("db") not in (None, "connected")


def classify(status: int, body: str, write: bool) -> ErrorKind:
    """Error class of an HTTP answer (pure, so it is tested on plain data: tests/cases/litellm
    holds what each tested LiteLLM version really answers)."""
    text = error_message(body).lower()
    if status == 403 and enterprise_only(text):
        # LiteLLM's licence refusal (a team model's write among others): this change fails,
        # whatever the key; the rest go on.
        return ErrorKind.CLIENT
    if status in (401, 403):
        return ErrorKind.AUTH
    if "no db connected" in text or "db not connected" in text or "database not connected" in text:
        return ErrorKind.NO_DATABASE
    if status == 503 and (_error_type(body) == "no_db_connection" or _database_down(body)):
        # 1.109+ answers a write 503 "no_db_connection" when its database is unreachable; every
        # version's readiness answers 503 {"db": "disconnected"}. Nothing will work: stop.
        return ErrorKind.NO_DATABASE
    if status == 404 or (400 <= status < 500 and "not found" in text):
        return ErrorKind.NOT_FOUND
    if write and status == 400 and text.startswith("authentication error"):
        # Up to 1.108, /model/new and /model/delete wrap ANY exception, including one raised
        # after the row was written, as 400 "Authentication Error, ..." (a refused key is 401):
        # read back before deciding. 1.109+ keeps the real status.
        return ErrorKind.MAYBE_COMMITTED
    if status in (408, 429, 502, 503, 504):
        return ErrorKind.TRANSIENT
    if status >= 500:
        # A 500 after a write may mean the row was written ("saved to the database, but ...")
        # or that the id already exists ("Failed to add model to db"): read back, never guess.
        return ErrorKind.MAYBE_COMMITTED if write else ErrorKind.TRANSIENT
    return ErrorKind.CLIENT
