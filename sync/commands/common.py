"""What the commands share: the internal-error line, and the proxy options as the run takes
them (sync/run/endpoint.py ProxyOptions: which key, read from where).

Imported by every command, `--version` and `--help` included: what is heavy (httpx, jsonschema,
the plan) is imported inside the function that needs it (tests/test_startup.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sync.run.endpoint import ProxyOptions, check_key
from sync.secrets import display

if TYPE_CHECKING:
    from sync.core.keytrust import TrustedRef

DEBUG_VARIABLE = "FLEET_SYNC_DEBUG"
# ctx.meta: the variable the --api-key option read its value from (checked when it is sent).
KEY_FROM = "fleet_sync.api_key_from"


def internal_error(exc: Exception) -> None:
    """An exception no part of fleet-sync turned into an error message: one line on stderr,
    the traceback too with FLEET_SYNC_DEBUG=1 (through the same scrub as every output)."""
    if os.environ.get(DEBUG_VARIABLE, "").strip() not in ("", "0"):
        import traceback

        sys.stderr.write("".join(traceback.format_exception(exc)))
    click.echo(
        f"error: internal error ({type(exc).__name__}): {display.text(str(exc))[:500]} — a bug "
        f"in fleet-sync; run with {DEBUG_VARIABLE}=1 for the traceback",
        err=True,
    )


def _key_given() -> bool:
    ctx = click.get_current_context()
    return ctx.get_parameter_source("api_key") is click.core.ParameterSource.COMMANDLINE


def key_origin() -> str:
    """Where the key the command's options read came from, for the messages that say what to
    fix: --api-key, or the variable its option (or write_key) read."""
    ctx = click.get_current_context()
    if KEY_FROM in ctx.meta:
        return str(ctx.meta[KEY_FROM])
    return "--api-key" if _key_given() else "LITELLM_PROXY_API_KEY"


def proxy_options(
    proxy_urls: tuple[str, ...], api_key: str | None, write_key: bool = False
) -> ProxyOptions:
    """The command's proxy options for the run. `write_key` (drift --fix without targets): a
    read command that writes takes --api-key as given, else LITELLM_PROXY_API_KEY, never the
    read-only key its option took from the environment."""
    key = api_key
    if write_key and not _key_given():
        # Never the read key its option may have taken from LITELLM_PROXY_READ_API_KEY.
        key = os.environ.get("LITELLM_PROXY_API_KEY") or None
        if key:
            check_key(key, "LITELLM_PROXY_API_KEY")
        click.get_current_context().meta[KEY_FROM] = "LITELLM_PROXY_API_KEY"
    return ProxyOptions(tuple(proxy_urls), key, key_origin(), _key_given(), write_key)


def trusted_ref(fleet_file: Path, base_ref: str | None = None) -> Callable[[], TrustedRef]:
    """plan, apply, drift: the ref the run trusts, read once when first asked (in a pull
    request's run its base: every target's endpoint and the probe's keys follow it)."""
    from sync.gitops.keytrust import ref_for_run

    return cache(lambda: ref_for_run(fleet_file, base_ref, os.environ))


def head_ref(fleet_file: Path) -> Callable[[], TrustedRef]:
    """propose: the checked-out commit is trusted (set-host edited only the working file)."""
    from sync.gitops.keytrust import ref_at_head

    return cache(lambda: ref_at_head(fleet_file))
