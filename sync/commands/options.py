"""The options several commands share: the fleet file, --format, the proxy and its key, a
number of seconds, --take-over. Read at start-up by every command, `--help` included: nothing
heavy is imported here (tests/test_startup.py)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from sync.commands.common import KEY_FROM
from sync.core.health import PROBE_TIMEOUT
from sync.run.endpoint import check_key

MAX_SECONDS = 3600.0  # no admin call or read-back is worth waiting an hour for


def fleet_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "-f",
        "--file",
        "fleet_file",
        default="fleet.yaml",
        show_default=True,
        type=click.Path(dir_okay=True, path_type=Path),
        help="The fleet file.",
    )(f)


def format_option(*choices: str, help: str | None = None) -> Callable[..., Any]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help=help,
    )


def proxy_options(f: Callable[..., Any], read_only: bool = False) -> Callable[..., Any]:
    f = click.option(
        "--proxy-url",
        "proxy_urls",
        multiple=True,
        metavar="URL",
        help="LiteLLM proxy base URL; repeat for several pods (each route's writes go to one "
        "pod, read-back checks all). Default: $LITELLM_PROXY_URLS (comma-separated) or "
        "$LITELLM_PROXY_URL.",
    )(f)
    f = click.option(
        "--api-key",
        # Reading needs no write right: a proxy_admin_viewer key is enough (and safer in CI).
        envvar=["LITELLM_PROXY_READ_API_KEY", "LITELLM_PROXY_API_KEY"]
        if read_only
        else "LITELLM_PROXY_API_KEY",
        show_envvar=True,
        metavar="KEY",
        callback=_sendable_key,
        help="Key of the proxy (never printed); a read-only proxy_admin_viewer key is enough."
        if read_only
        else "Admin key of the proxy (never printed).",
    )(f)
    return click.option(
        "--timeout",
        default=20.0,
        show_default=True,
        type=Seconds(min=0, min_open=True),
        metavar="SECONDS",
        help="Deadline of one request to the proxy's admin API, the whole answer read "
        "(retries of a failed request get their own).",
    )(f)


def _sendable_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The proxy key, refused in one line (naming where it came from) when HTTP cannot send it:
    --api-key at once; a key from the environment when connect() is about to send it (with
    targets: LITELLM_PROXY_* is not used, and its content must not stop the run)."""
    if value:
        source = ctx.get_parameter_source(param.name or "")
        if source is click.core.ParameterSource.ENVIRONMENT:
            names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
            ctx.meta[KEY_FROM] = next((n for n in names if os.environ.get(n)), "the environment")
        else:
            check_key(value, "--api-key")
    return value


class Seconds(click.FloatRange):
    """A finite number of seconds in a range (FloatRange lets nan through)."""

    name = "seconds"

    def __init__(self, min: float = 0, max: float = MAX_SECONDS, min_open: bool = False) -> None:
        super().__init__(min=min, max=max, min_open=min_open)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return seconds


def read_proxy_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """proxy_options of a command that only reads: LITELLM_PROXY_READ_API_KEY comes first."""
    return proxy_options(f, read_only=True)


def take_over_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--take-over",
        is_flag=True,
        help="Own the routes tagged with this fleet's name by another source (another "
        "repository using the same fleet name): update them to this fleet.yaml, prune the "
        "rest. For moving a fleet to a new repository; without it they are never touched.",
    )(f)


def target_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--target",
        "target_names",
        multiple=True,
        metavar="NAME",
        help="With targets: in fleet.yaml, work on this target only (repeatable; default: every "
        "target, in promotion order). Its proxy and key come from its entry in fleet.yaml.",
    )(f)


def health_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--probe, --require-healthy, --probe-timeout (health: in fleet.yaml turns them on too)."""
    f = click.option(
        "--probe",
        is_flag=True,
        help="Ask every enabled host's GET {api_base}/models and show beside each change whether "
        "it serves its served_model. A host's api_key (resolved from this environment) goes only "
        "to the address fleet.yaml gives it at a reviewed ref (a pull request's base; propose: "
        "HEAD); a new address is asked without it, and a 401/403 then reads 'needs a key'. "
        "fleet.yaml's health: probe|require turns this on too.",
    )(f)
    f = click.option(
        "--require-healthy",
        is_flag=True,
        help="Withhold (and report) every change that would point a route at an address that "
        "does not serve its model, and the prunes of its model group; apply then exits 4. "
        "Implies --probe; the same as health: require in fleet.yaml.",
    )(f)
    return click.option(
        "--probe-timeout",
        default=PROBE_TIMEOUT,
        show_default=True,
        type=Seconds(min=0, min_open=True),
        metavar="SECONDS",
        help="How long each host has to answer the probe.",
    )(f)
