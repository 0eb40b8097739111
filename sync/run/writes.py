"""One target's writes: its plan applied through the client that read it, progress on stderr,
an aborted apply's partial result printed before it stops the target, and an interrupt
settled (sync/run/interrupt.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from sync.run.console import fail, out, target_prefix

if TYPE_CHECKING:
    from sync.core.ownership import Owner
    from sync.core.plan import Plan
    from sync.core.result import Result
    from sync.live.client import LiteLLMClient
    from sync.run.interrupt import Signals

CONCURRENCY = 4
MAX_CONCURRENCY = 64  # parallel writes per stage; LiteLLM serialises DB writes anyway


def write_plan(
    plan: Plan, client: LiteLLMClient, owner: Owner, concurrency: int, confirm_timeout: float,
    signals: Signals,
) -> Result:  # fmt: skip
    """The plan applied; the caller checked the key can write (check_can_write)."""
    from sync.core.result import Result
    from sync.live.apply import ApplyAborted, apply_plan
    from sync.live.progress import progress_for
    from sync.report.text import result_text

    progress = progress_for(sys.stderr, target_prefix())
    try:
        return apply_plan(
            plan, client, owner, concurrency=concurrency, confirm_timeout=confirm_timeout,
            progress=progress, interrupt=signals.writes(),
        )  # fmt: skip
    except ApplyAborted as exc:
        progress.finish()  # end the live line before the partial result
        out(result_text(Result(plan, exc.outcomes)))
        fail(f"apply stopped: {exc.error}")
    finally:
        progress.finish()
