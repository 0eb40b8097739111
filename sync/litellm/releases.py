"""LiteLLM releases: which ones fleet-sync is tested with, and what each does differently that
fleet-sync adapts to. Pure: the version string is read from the proxy by litellm.py."""

from __future__ import annotations

import re
from dataclasses import dataclass

# The compatibility matrix (scripts/matrix runs it; docs/reference/litellm-versions.md).
TESTED = ("1.98.1", "1.108.7", "1.110.2")
# From this release on, PATCH /model/{id}/update honours litellm_params_to_remove (wheels' source).
REMOVES_IN_PLACE_FROM = (1, 109, 0)
# LiteLLM's pause (LiteLLM_ProxyModelTable.blocked): PATCH /model/{id}/update takes `blocked`,
# /v2/model/info lists it as model_info.blocked and the router sends a paused route nothing.
# Read in the wheels' source of 1.98.1, 1.108.7 and 1.110.2 and checked on each: the oldest
# release fleet-sync is tested with is where it is known to hold.
PAUSES_FROM = (1, 98, 1)
# POST /model/new takes a top-level `blocked` (Deployment.blocked): a route created paused
# never serves. Earlier releases store it unpaused; fleet-sync pauses it right after.
CREATES_PAUSED_FROM = (1, 108, 7)

_NUMBER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def parse(version: str) -> tuple[int, int, int] | None:
    """(1, 110, 2) from "1.110.2" (suffixes such as ".post1" or "-stable" ignored), else None."""
    match = _NUMBER.match(version.strip())
    if match is None:
        return None
    major, minor, patch = (int(g) for g in match.groups())
    return (major, minor, patch)


TESTED_RANGE = f"{TESTED[0]} to {TESTED[-1]}"
_LOW, _HIGH = parse(TESTED[0]), parse(TESTED[-1])


@dataclass(frozen=True)
class LiteLLMRelease:
    """The LiteLLM a proxy runs, as it reports itself (None: it could not be read)."""

    version: str | None

    @property
    def number(self) -> tuple[int, int, int] | None:
        return parse(self.version) if self.version else None

    @property
    def removes_params_in_place(self) -> bool:
        """PATCH drops the litellm_params keys named in litellm_params_to_remove. Older releases
        merge (the key stays), so a removed key is taken away by replacing the route with the
        next generation of its id (created first, then the old one deleted)."""
        number = self.number
        return number is not None and number >= REMOVES_IN_PLACE_FROM

    @property
    def pauses(self) -> bool:
        """A route can be paused in place (LiteLLM's `blocked`): a drained host's route is
        paused, keeping its id and what LiteLLM never lists (api_key, spend)."""
        number = self.number
        return number is not None and number >= PAUSES_FROM

    @property
    def creates_paused(self) -> bool:
        """POST /model/new can store a route paused (else: created, then paused)."""
        number = self.number
        return number is not None and number >= CREATES_PAUSED_FROM

    @property
    def tested(self) -> bool:
        number = self.number
        return (
            number is not None
            and _LOW is not None
            and _HIGH is not None
            and (_LOW <= number <= _HIGH)
        )

    def warning(self) -> str | None:
        """What to tell the user when this release is outside what fleet-sync is tested with."""
        if self.tested:
            return None
        if self.version is None:
            return (
                "could not read the proxy's LiteLLM version; fleet-sync is tested with LiteLLM "
                f"{TESTED_RANGE}"
            )
        return (
            f"LiteLLM {self.version} is outside the versions fleet-sync is tested with "
            f"({TESTED_RANGE}); going on, but check the result"
        )

    def __str__(self) -> str:
        return self.version or "unknown"
