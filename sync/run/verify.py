"""apply --verify: one request per model group the apply changed, through the proxy."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sync.core.health import Verified
    from sync.core.result import Result
    from sync.fleet.model import Fleet


def verify_result(
    result: Result, fleet: Fleet, proxy_url: str, api_key: str, timeout: float
) -> tuple[Verified, ...]:
    from sync.core.render import render
    from sync.live.verify import changed_groups, verify_groups

    desired = render(fleet)
    # Matched by the ids that serve each host after the apply, not the derived ids alone.
    serving = result.plan.serving or desired
    return verify_groups(
        proxy_url, api_key, changed_groups(result, desired), serving, timeout=timeout
    )
