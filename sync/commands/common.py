"""What every fleet-sync command shares: exit codes, options, reading the fleet and the proxy.

Imported by every command, `--version` and `--help` included: what is heavy (httpx, jsonschema,
the plan) is imported inside the function that needs it (tests/test_startup.py)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from sync.fleet.problems import FleetError
from sync.litellm.releases import LiteLLMRelease
from sync.live.access import changed_by, write_refusal
from sync.secrets import display, scrub
from sync.secrets.credentials import has_userinfo, strip_userinfo

if TYPE_CHECKING:
    from sync.core.plan import Plan
    from sync.core.render import Route
    from sync.fleet.model import Fleet
    from sync.live.client import LiteLLMClient

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_REFUSED, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
# LiteLLM pods reload routes from the database every 30 s by default; 10 s of margin.
CONFIRM_TIMEOUT = 40.0
CONCURRENCY = 4
MAX_CONCURRENCY = 64  # parallel writes per stage; LiteLLM serialises DB writes anyway
MAX_SECONDS = 3600.0  # no admin call or read-back is worth waiting an hour for


class Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """One line on stderr (a message may quote what a proxy or GitHub said:
    sync/secrets/display.py)."""
    click.echo(f"error: {display.text(message)}", err=True)
    raise Exit(code)


DEBUG_VARIABLE = "FLEET_SYNC_DEBUG"


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
    """The proxy key, refused in one line (naming where it came from) when HTTP cannot send it."""
    if value:
        source = ctx.get_parameter_source(param.name or "")
        if source is click.core.ParameterSource.ENVIRONMENT:
            names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
            where = next((n for n in names if os.environ.get(n)), "the environment")
        else:
            where = "--api-key"
        check_key(value, where)
    return value


def check_key(value: str, where: str) -> None:
    from sync.secrets.credentials import unsendable

    if why := unsendable(value):
        fail(
            f"{where} cannot be sent to the proxy: {why}; set it to the key exactly as LiteLLM "
            "issued it (sk-...), nothing around it"
        )


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


def read_fleet(path: Path) -> Fleet:
    from sync.fleet.model import load_fleet
    from sync.report.text import problems_text

    scrub.active().remember_fleet(path, os.environ)
    try:
        return load_fleet(path, str(path))
    except FleetError as exc:
        click.echo(problems_text(exc.problems), err=True, nl=False)
        fail(f"{path} is invalid ({len(exc.problems)} problem(s)); nothing was sent to the proxy")


def connect(
    proxy_urls: tuple[str, ...], api_key: str | None, timeout: float, spread_writes: bool = True
) -> LiteLLMClient:
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
    scrub.remember(api_key)
    import httpx

    from sync.fleet.addresses import address_problem
    from sync.live.client import LiteLLMClient

    for url in urls:
        if not url.startswith(("http://", "https://")):
            fail(f"proxy URL {strip_userinfo(url)!r} must start with http:// or https://")
        if has_userinfo(url):
            # httpx would turn user:pass@ into Basic auth in place of the admin key.
            fail(
                f"proxy URL {strip_userinfo(url)!r} carries credentials (user:pass@); "
                "remove them and give the admin key with LITELLM_PROXY_API_KEY or --api-key"
            )
        try:
            parsed = httpx.URL(url)
            parsed.port  # noqa: B018  (httpx checks the port only when it is read)
            host = parsed.host  # decodes an xn-- name: IDNAError, a ValueError
        except (httpx.InvalidURL, ValueError) as exc:
            fail(f"proxy URL {strip_userinfo(url)!r} is not a valid address ({exc})")
        if not host:
            fail(f"proxy URL {strip_userinfo(url)!r} has no host")
        if problem := address_problem(url):
            # A host httpx takes but the resolver does not (a 64-character label), or one
            # that is not printed as itself: the same rules as a host's api_base.
            fail(f"proxy URL {problem}")
    return LiteLLMClient(
        urls,
        api_key,
        timeout=timeout,
        changed_by_header=changed_by(os.environ),
        spread_writes=spread_writes,
    )


def write_key(api_key: str | None) -> str | None:
    """The key for a command that writes: --api-key as given, else LITELLM_PROXY_API_KEY, never
    the read-only key a read_proxy_options command took from the environment."""
    source = click.get_current_context().get_parameter_source("api_key")
    if source is click.core.ParameterSource.COMMANDLINE:
        return api_key
    key = os.environ.get("LITELLM_PROXY_API_KEY")
    if key:
        check_key(key, "LITELLM_PROXY_API_KEY")
    return key or api_key


def check_can_write(client: LiteLLMClient) -> None:
    """Stop before the first write when the key's role cannot write: nothing is half-done."""
    refusal = write_refusal(client.key_role())
    if refusal:
        fail(refusal)


def take_over_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--take-over",
        is_flag=True,
        help="Own the routes tagged with this fleet's name by another source (another "
        "repository using the same fleet name): update them to this fleet.yaml, prune the "
        "rest. For moving a fleet to a new repository; without it they are never touched.",
    )(f)


def with_source(fleet: Fleet, fleet_file: Path, environ: Mapping[str, str]) -> Fleet:
    """The fleet with the source its routes are tagged with: fleet.yaml's source:, else
    GITHUB_REPOSITORY (CI), else the origin remote of the repository holding fleet.yaml (a
    local clone of the same repository), else none. Lowercase: GitHub ignores the case of
    owner/name, and one spelling keeps a local run and CI from rewriting each other's tag."""
    from sync.gitops.gitref import repository_of

    source = (
        fleet.source
        or environ.get("GITHUB_REPOSITORY", "").strip()
        or repository_of(fleet_file)
        or ""
    )
    return replace(fleet, source=source.lower() or None)


@dataclass(frozen=True)
class LiveState:
    """What the proxy holds: the routes its router lists (what clients route on), and the rows
    of the fleet's model groups it stored but does not list (writes it could not load)."""

    listed: Sequence[Route]
    unlisted: Sequence[Route]
    litellm_version: str | None = None  # what the pod taking the writes reports
    notes: tuple[str, ...] = ()  # what could not be read (shown with every plan)

    def plan(self, fleet: Fleet, take_over: bool) -> Plan:
        from sync.core.planner import make_plan
        from sync.core.render import render

        return make_plan(
            fleet,
            render(fleet),
            self.listed,
            self.unlisted,
            take_over,
            self.litellm_version,
            self.notes,
        )


def read_routes(client: LiteLLMClient, settle_timeout: float = CONFIRM_TIMEOUT) -> list[Route]:
    """Every route the router lists, once all pods list the same (for reads that plan nothing)."""
    from sync.live.client import ProxyError

    try:
        for url in client.urls:
            client.check_ready(url)
        return client.list_agreed(settle_timeout)
    except ProxyError as exc:
        fail(str(exc))


def read_release(client: LiteLLMClient) -> LiteLLMRelease:
    """The LiteLLM the proxy runs: the pod that takes the writes decides what apply can do.
    A version outside the tested range is a warning, never a refusal."""
    versions = {url: client.read_version(url) for url in client.urls}
    release = LiteLLMRelease(versions[client.write_url])
    if warning := release.warning():
        click.echo(f"warning: {warning}", err=True)
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{url}: {v or 'unknown'}" for url, v in versions.items())
        click.echo(
            f"warning: the proxy pods run different LiteLLM versions ({listed}); apply follows "
            f"{client.write_url}, which takes the writes",
            err=True,
        )
    return release


def read_live(
    client: LiteLLMClient,
    fleet: Fleet,
    take_over: bool = False,
    settle_timeout: float = CONFIRM_TIMEOUT,
    fleet_file: Path | None = None,
) -> LiveState:
    """The routes the router lists, and the stored rows it does not list of every model group
    the fleet may have written rows in: those fleet.yaml declares, those with listed routes of
    the fleet, and (with `fleet_file`) those its git history declared, of which only rows
    tagged with this fleet are read: a row of ours no plan can see would stay forever."""
    from sync.core.planner import make_plan
    from sync.core.render import render
    from sync.gitops.history import PastGroups, declared_groups
    from sync.live.client import ProxyError

    past = declared_groups(fleet_file) if fleet_file is not None else PastGroups()

    desired: list[Route] = []  # rendered once several pods must agree (one agrees with itself)

    def reads(routes: Sequence[Route]) -> object:
        # Pods must agree on what this plan reads, not on LiteLLM's enrichment of the rest.
        if not desired:
            desired.extend(render(fleet))
        return make_plan(fleet, desired, routes, take_over=take_over).agreement

    try:
        for url in client.urls:
            client.check_ready(url)
        listed = client.list_agreed(settle_timeout, project=reads)
        groups = fleet.model_names | {r.model_name for r in listed if r.fleet == fleet.name}
        ids = {r.id for r in listed}
        unlisted = [
            r
            for r in client.list_stored(sorted(groups | past.groups))
            if r.id not in ids and (r.model_name in groups or r.fleet == fleet.name)
        ]
    except ProxyError as exc:
        fail(str(exc))
    release = read_release(client)
    notes = [n for n in (past.note, check_providers(client, fleet, listed)) if n]
    for note in notes:  # said once the proxy was read: a failed read is one line, its error
        click.echo(f"note: {note}", err=True)
    return LiveState(listed, unlisted, release.version, tuple(notes))


def check_providers(client: LiteLLMClient, fleet: Fleet, listed: Sequence[Route]) -> str | None:
    """Stop (exit 1, nothing written) when a route fleet.yaml renders names a provider the
    proxy does not know: LiteLLM would store it and never load it (sync/core/providers.py). Returns
    a note when a pod does not list its providers (the check is then made with the others)."""
    from sync.core import providers
    from sync.core.render import render

    answers = {url: client.read_providers(url) for url in client.urls}
    lists = [a for a in answers.values() if isinstance(a, frozenset)]
    unread = [f"{u}: {a}" for u, a in answers.items() if isinstance(a, str)]
    note = (
        f"the proxy did not list the providers it knows ({'; '.join(unread)}): a provider it "
        "does not know is not caught before writing"
        if unread
        else None
    )
    if not lists:
        return note
    names = providers.known(frozenset.intersection(*lists), listed, os.environ)
    problems = providers.unknown(render(fleet), names)
    if problems:
        for line in problems:
            click.echo(f"error: {line}", err=True)
        fail(
            f"{len(problems)} route(s) of fleet.yaml name a provider the proxy does not know "
            "(GET /public/providers): LiteLLM would store them and never load them. Fix the "
            f"provider, or, if the proxy does load it (a custom provider of its config), add it "
            f"to {providers.EXTRA_VARIABLE}; nothing was sent to the proxy"
        )
    return note


def current_plan(
    fleet: Fleet,
    client: LiteLLMClient,
    settle_timeout: float = CONFIRM_TIMEOUT,
    take_over: bool = False,
    fleet_file: Path | None = None,
) -> Plan:
    live = read_live(client, fleet, take_over, settle_timeout, fleet_file)
    return live.plan(fleet, take_over)


def on_github(call: Callable[[], str]) -> None:
    """Run one GitHub step; its failure is an error (exit 1) but the plan is already printed."""
    from sync.github.actions import GitHubError
    from sync.github.artifact import ReportDirError

    try:
        click.echo(display.text(call()), err=True)
    except ReportDirError as exc:
        fail(str(exc))
    except (GitHubError, ValueError) as exc:
        fail(f"GitHub: {exc}")
