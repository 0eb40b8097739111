"""What every fleet-sync command shares: exit codes, options, reading the fleet and the proxy."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from .access import changed_by, write_refusal
from .fleet import Fleet, load_fleet
from .github_config import GitHubError
from .litellm import LiteLLMClient, ProxyError
from .plan import Plan, make_plan
from .problems import FleetError
from .render import Route, render
from .report import problems_text

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_REFUSED, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
# LiteLLM pods reload routes from the database every 30 s by default; 10 s of margin.
CONFIRM_TIMEOUT = 40.0
CONCURRENCY = 4


class Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise Exit(code)


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
        help="LiteLLM proxy base URL; repeat for several pods (writes go to the first, read-back "
        "checks all). Default: $LITELLM_PROXY_URLS (comma-separated) or $LITELLM_PROXY_URL.",
    )(f)
    f = click.option(
        "--api-key",
        # Reading needs no write right: a proxy_admin_viewer key is enough (and safer in CI).
        envvar=["LITELLM_PROXY_READ_API_KEY", "LITELLM_PROXY_API_KEY"]
        if read_only
        else "LITELLM_PROXY_API_KEY",
        show_envvar=True,
        metavar="KEY",
        help="Key of the proxy (never printed); a read-only proxy_admin_viewer key is enough."
        if read_only
        else "Admin key of the proxy (never printed).",
    )(f)
    return click.option(
        "--timeout",
        default=20.0,
        show_default=True,
        metavar="SECONDS",
        help="Per-request timeout for the proxy's admin API.",
    )(f)


def read_proxy_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """proxy_options of a command that only reads: LITELLM_PROXY_READ_API_KEY comes first."""
    return proxy_options(f, read_only=True)


def read_fleet(path: Path) -> Fleet:
    try:
        return load_fleet(path, str(path))
    except FleetError as exc:
        click.echo(problems_text(exc.problems), err=True, nl=False)
        fail(f"{path} is invalid ({len(exc.problems)} problem(s)); nothing was sent to the proxy")


def connect(proxy_urls: tuple[str, ...], api_key: str | None, timeout: float) -> LiteLLMClient:
    urls = [u for u in proxy_urls if u]
    if not urls:
        env = os.environ.get("LITELLM_PROXY_URLS") or os.environ.get("LITELLM_PROXY_URL") or ""
        urls = [u.strip() for u in env.split(",") if u.strip()]
    if not urls:
        fail("no proxy given: set LITELLM_PROXY_URL (or LITELLM_PROXY_URLS) or pass --proxy-url")
    if not api_key:
        fail(
            "no admin key given: set LITELLM_PROXY_API_KEY (plan and drift also take "
            "LITELLM_PROXY_READ_API_KEY) or pass --api-key"
        )
    for url in urls:
        if not url.startswith(("http://", "https://")):
            fail(f"proxy URL {url!r} must start with http:// or https://")
    return LiteLLMClient(urls, api_key, timeout=timeout, changed_by_header=changed_by(os.environ))


def write_key(api_key: str | None) -> str | None:
    """The key for a command that writes: --api-key as given, else LITELLM_PROXY_API_KEY, never
    the read-only key a read_proxy_options command took from the environment."""
    source = click.get_current_context().get_parameter_source("api_key")
    if source is click.core.ParameterSource.COMMANDLINE:
        return api_key
    return os.environ.get("LITELLM_PROXY_API_KEY") or api_key


def check_can_write(client: LiteLLMClient) -> None:
    """Stop before the first write when the key's role cannot write: nothing is half-done."""
    refusal = write_refusal(client.key_role())
    if refusal:
        fail(refusal)


def read_live(client: LiteLLMClient, settle_timeout: float = CONFIRM_TIMEOUT) -> list[Route]:
    try:
        for url in client.urls:
            client.check_ready(url)
        return client.list_agreed(settle_timeout)
    except ProxyError as exc:
        fail(str(exc))


def current_plan(
    fleet: Fleet, client: LiteLLMClient, settle_timeout: float = CONFIRM_TIMEOUT
) -> Plan:
    return make_plan(fleet, render(fleet), read_live(client, settle_timeout))


def on_github(call: Callable[[], str]) -> None:
    """Run one GitHub step; its failure is an error (exit 1) but the plan is already printed."""
    try:
        click.echo(call(), err=True)
    except (GitHubError, ValueError) as exc:
        fail(f"GitHub: {exc}")
