"""Who the token writes as, so fleet-sync edits, closes and copies only what it wrote itself.

The sticky plan comment, the apply result and the drift issue are recognised by their hidden
header *and* their author: anyone can paste a header into a comment or an issue. The author is
the token's identity: FLEET_SYNC_GITHUB_AUTHOR when set; else what ``GET /user`` names for a
user's token; for an installation token (the Actions ``GITHUB_TOKEN`` and a GitHub App's alike:
``GET /user`` answers both 403 "Resource not accessible by integration"), what GraphQL's
``viewer { login }`` names (``github-actions[bot]``, ``my-app[bot]``). When none of that answers,
the identity is unknown, never guessed, and nothing existing is touched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sync.secrets.display import printable

AUTHOR_VARIABLE = "FLEET_SYNC_GITHUB_AUTHOR"
AUTHOR_INPUT = "github-author"  # the action's input that sets it
ACTIONS_BOT = "github-actions[bot]"
# GitHub's answer to GET /user for an installation token (the Actions token included).
INTEGRATION = "Resource not accessible by integration"
VIEWER_QUERY = "query { viewer { login } }"
# A login: letters, digits, '-' (and '_' for managed users), '[bot]' for apps.
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}(\[bot\])?")


@dataclass(frozen=True)
class Identity:
    """The login (and GitHub's account type) the token writes as; login None when unknown,
    with ``source`` saying how it was learnt or why it is unknown."""

    login: str | None
    kind: str  # "Bot" or "User" ("" when unknown)
    source: str

    @property
    def known(self) -> bool:
        return self.login is not None

    def wrote(self, item: Mapping[str, Any]) -> bool:
        """Whether a comment, issue or pull request (as GitHub lists it) is by this identity:
        the same login (GitHub compares logins without case) and, where GitHub gives it, the
        same account type. False for everything when the identity is unknown."""
        if self.login is None:
            return False
        user = item.get("user")
        if not isinstance(user, Mapping):
            return False
        login, kind = user.get("login"), user.get("type")
        if not isinstance(login, str) or login.casefold() != self.login.casefold():
            return False
        return kind is None or (isinstance(kind, str) and kind.casefold() == self.kind.casefold())

    def fallback_note(self, what: str) -> str:
        """The log line's note when nothing existing could be trusted ("" when known)."""
        if self.known:
            return ""
        return (
            f" (the token's identity is unknown: {self.source}; {what}; set {AUTHOR_VARIABLE} "
            f"(the action's {AUTHOR_INPUT} input) to the token's login)"
        )


def is_login(text: str) -> bool:
    return _LOGIN.fullmatch(text) is not None


def kind_of(login: str) -> str:
    return "Bot" if login.casefold().endswith("[bot]") else "User"


def configured(login: str) -> Identity:
    """The identity the user named (FLEET_SYNC_GITHUB_AUTHOR); the caller checked is_login."""
    return Identity(login, kind_of(login), AUTHOR_VARIABLE)


def from_user(data: Any) -> Identity:
    """The identity GET /user answered 200 with, unknown when the answer names no login."""
    login = data.get("login") if isinstance(data, dict) else None
    if not isinstance(login, str) or not is_login(login):
        return unknown("GET /user answered without a login")
    kind = data.get("type")
    return Identity(login, kind if kind in ("Bot", "User") else kind_of(login), "GET /user")


def from_viewer(data: Any) -> Identity:
    """The identity GraphQL's viewer names (asked once GET /user answered INTEGRATION: an
    installation token), unknown when the answer names no login."""
    body = data if isinstance(data, dict) else {}
    viewer = body.get("data")
    viewer = viewer.get("viewer") if isinstance(viewer, dict) else None
    login = viewer.get("login") if isinstance(viewer, dict) else None
    if not isinstance(login, str) or not is_login(login):
        errors = body.get("errors")
        first = errors[0] if isinstance(errors, list) and errors else None
        said = first.get("message") if isinstance(first, dict) else None
        why = f": {printable(said)[:100]}" if isinstance(said, str) else ""
        return unknown(f"GET /user: {INTEGRATION}, and GraphQL's viewer named no login{why}")
    return Identity(login, kind_of(login), f"GraphQL viewer (GET /user: {INTEGRATION})")


def unknown(why: str) -> Identity:
    return Identity(None, "", printable(why)[:200].rstrip(" ."))
