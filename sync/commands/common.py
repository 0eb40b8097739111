"""What every fleet-sync command shares: exit codes, one-line errors, reading the fleet and
the proxy, showing a plan, running an apply.

Imported by every command, `--version` and `--help` included: what is heavy (httpx, jsonschema,
the plan) is imported inside the function that needs it (tests/test_startup.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from sync.fleet.problems import FleetError
from sync.live.access import changed_by, write_refusal
from sync.live.state import CONFIRM_TIMEOUT
from sync.secrets import display, scrub
from sync.secrets.credentials import has_userinfo, strip_userinfo

if TYPE_CHECKING:
    from sync.core.ownership import Owner
    from sync.core.plan import Plan
    from sync.core.result import Result
    from sync.core.verdict import Verdict
    from sync.fleet.model import Fleet
    from sync.live.client import LiteLLMClient
    from sync.live.state import LiveState

T = TypeVar("T")
EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_REFUSED, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
CONCURRENCY = 4
MAX_CONCURRENCY = 64  # parallel writes per stage; LiteLLM serialises DB writes anyway


class Exit(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        self.code = code
        self.message = message  # what fail() said, for a target's section of the output


# The target a thread works on (fleet.yaml's targets:): its name starts each line it writes to
# stderr, so notes of targets read at once stay apart. None: no targets, lines as ever.
CURRENT_TARGET: ContextVar[str | None] = ContextVar("CURRENT_TARGET", default=None)


def target_prefix() -> str:
    name = CURRENT_TARGET.get()
    return "" if name is None else f"[{name}] "


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """One line on stderr (a message may quote what a proxy or GitHub said:
    sync/secrets/display.py)."""
    shown = display.text(message)
    click.echo(f"{target_prefix()}error: {shown}", err=True)
    raise Exit(code, shown)


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


# ctx.meta: the variable the --api-key option read its value from (checked when it is sent).
KEY_FROM = "fleet_sync.api_key_from"


def check_key(value: str, where: str) -> None:
    from sync.secrets.credentials import unsendable

    if why := unsendable(value):
        fail(
            f"{where} cannot be sent to the proxy: {why}; set it to the key exactly as LiteLLM "
            "issued it (sk-...), nothing around it"
        )


def read_fleet(path: Path, at_proxy: bool = False) -> Fleet:
    """fleet.yaml, validated; LiteLLM's declared types are the newest supported release's, or
    with `at_proxy` the release the proxy reports, checked by read_live once it is read."""
    from sync.fleet.model import NEWEST, load_fleet
    from sync.report.text import problems_text

    scrub.active().remember_fleet(path, os.environ)
    try:
        return load_fleet(path, str(path), litellm=None if at_proxy else NEWEST)
    except FleetError as exc:
        click.echo(problems_text(exc.problems), err=True, nl=False)
        fail(f"{path} is invalid ({len(exc.problems)} problem(s)); nothing was sent to the proxy")


def connect(
    proxy_urls: tuple[str, ...],
    api_key: str | None,
    timeout: float,
    spread_writes: bool = True,
    key_name: str | None = None,
    url_name: str = "--proxy-url",
) -> LiteLLMClient:
    """A client of the proxy. key_name: where api_key came from (a target's variable); None for
    the key the command's options read (--api-key or the LITELLM_PROXY_* variable it took).
    url_name: where proxy_urls came from (without them: the variable read instead)."""
    urls = [u for u in proxy_urls if u]
    if not urls:
        urls, url_name = _environment_urls()
    if not api_key:
        fail(
            "no admin key given: set LITELLM_PROXY_API_KEY (plan and drift also take "
            "LITELLM_PROXY_READ_API_KEY) or pass --api-key"
        )
    key_name = key_name or key_origin()
    scrub.remember(api_key)
    check_key(api_key, key_name)
    from sync.live.client import LiteLLMClient

    for url in urls:
        check_proxy_url(url, url_name)
    return LiteLLMClient(
        urls,
        api_key,
        timeout=timeout,
        changed_by_header=changed_by(os.environ),
        spread_writes=spread_writes,
        key_name=key_name,
    )


def _environment_urls() -> tuple[list[str], str]:
    """The pod URLs of LITELLM_PROXY_URLS, else LITELLM_PROXY_URL; a variable that is set but
    holds no URL stops the command naming that variable (the one read)."""
    for name in ("LITELLM_PROXY_URLS", "LITELLM_PROXY_URL"):
        value = os.environ.get(name)
        if value is None or value == "":
            continue
        urls = [u.strip() for u in value.split(",") if u.strip()]
        if not urls:
            fail(f"{name} is set but holds no URL; set it to the proxy's URL or pass --proxy-url")
        return urls, name
    fail("no proxy given: set LITELLM_PROXY_URL (or LITELLM_PROXY_URLS) or pass --proxy-url")


def key_origin() -> str:
    """Where the key the command's options read came from, for the messages that say what to
    fix: --api-key, or the variable its option (or write_key) read."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return "LITELLM_PROXY_API_KEY"
    if KEY_FROM in ctx.meta:
        return str(ctx.meta[KEY_FROM])
    if ctx.get_parameter_source("api_key") is click.core.ParameterSource.COMMANDLINE:
        return "--api-key"
    return "LITELLM_PROXY_API_KEY"


def check_proxy_url(url: str, origin: str = "--proxy-url") -> None:
    """Stop (exit 1) at a proxy URL httpx cannot send to as given, naming where it was read
    (origin: --proxy-url, the variable, the target's proxy_url)."""
    what = f"proxy URL (from {origin})"
    import httpx

    from sync.fleet.addresses import address_problem
    from sync.fleet.proxyaddress import openai_path_problem

    if not url.startswith(("http://", "https://")):
        fail(f"{what} {strip_userinfo(url)!r} must start with http:// or https://")
    if has_userinfo(url):
        # httpx would turn user:pass@ into Basic auth in place of the admin key.
        fail(
            f"{what} {strip_userinfo(url)!r} carries credentials (user:pass@); "
            "remove them and give the admin key with LITELLM_PROXY_API_KEY or --api-key"
        )
    try:
        parsed = httpx.URL(url)
        parsed.port  # noqa: B018  (httpx checks the port only when it is read)
        host = parsed.host  # decodes an xn-- name: IDNAError, a ValueError
    except (httpx.InvalidURL, ValueError) as exc:
        fail(f"{what} {strip_userinfo(url)!r} is not a valid address ({exc})")
    if not host:
        fail(f"{what} {strip_userinfo(url)!r} has no host")
    if problem := address_problem(url):
        # A host httpx takes but the resolver does not (a 64-character label), or one
        # that is not printed as itself: the same rules as a host's api_base.
        fail(f"{what}: {problem}")
    if problem := openai_path_problem(url):
        fail(f"{what}: {problem}")


def write_key(api_key: str | None) -> str | None:
    """The key for a command that writes: --api-key as given, else LITELLM_PROXY_API_KEY, never
    the read-only key a read_proxy_options command took from the environment."""
    source = click.get_current_context().get_parameter_source("api_key")
    if source is click.core.ParameterSource.COMMANDLINE:
        return api_key
    key = os.environ.get("LITELLM_PROXY_API_KEY")
    if key:
        check_key(key, "LITELLM_PROXY_API_KEY")
        click.get_current_context().meta[KEY_FROM] = "LITELLM_PROXY_API_KEY"
    return key or api_key


def check_can_write(client: LiteLLMClient) -> None:
    """Stop before the first write when the key's role cannot write: nothing is half-done."""
    refusal = write_refusal(client.key_role(), client.key_name)
    if refusal:
        fail(refusal)


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


def tell(line: str) -> None:
    click.echo(f"{target_prefix()}{line}", err=True)


def read_live(
    client: LiteLLMClient,
    fleet: Fleet,
    take_over: bool = False,
    settle_timeout: float = CONFIRM_TIMEOUT,
    fleet_file: Path | None = None,
) -> LiveState:
    """The live state (sync/live/state.py) with the model groups `fleet_file`'s git history
    declared; a proxy that cannot be read stops the command (its ProxyError, exit 1)."""
    from sync.gitops.history import declared_groups
    from sync.live import state

    past = declared_groups(fleet_file) if fleet_file is not None else state.PastGroups()
    try:
        live = state.read_live(client, fleet, tell, take_over, settle_timeout, past)
    except state.UnknownProviders as exc:
        for p in exc.problems:  # file:line:col: error: ..., like a compiler's
            located = display.text(f"{p.file}:{p.line}:{p.col}: error: {p.message}")
            click.echo(f"{target_prefix()}{located}", err=True)
        fail(str(exc))
    refuse_types(fleet, live.litellm_version)
    return live


def refuse_types(fleet: Fleet, version: str | None) -> None:
    """Stop (exit 1) before any plan when the LiteLLM the proxy runs would refuse a value of
    fleet.yaml (the types its request models declare), each located."""
    from sync.fleet.model import release_problems
    from sync.litellm.declared import release_for
    from sync.report.text import problems_text

    problems = release_problems(fleet, version)
    if problems:
        click.echo(problems_text(problems), err=True, nl=False)
        fail(
            f"{problems[0].file} has {len(problems)} value(s) LiteLLM {release_for(version)} "
            "would refuse; nothing was sent to the proxy"
        )


def current_plan(
    fleet: Fleet,
    client: LiteLLMClient,
    settle_timeout: float = CONFIRM_TIMEOUT,
    take_over: bool = False,
    fleet_file: Path | None = None,
) -> Plan:
    live = read_live(client, fleet, take_over, settle_timeout, fleet_file)
    return live.plan(fleet, take_over)


def bound(
    plan: Plan, fleet: Fleet, urls: tuple[str, ...], target: str | None = None,
    after: tuple[str, ...] = (),
) -> Plan:  # fmt: skip
    """The plan bound to what it was made for (sync/core/plan.py Binding: in its hash): the
    target, the pod URLs read, the rails apply obeys."""
    from sync.core.plan import Binding

    return replace(plan, binding=Binding.of(target, urls, fleet.max_prune_percent, after))


def colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def show_plan(plan: Plan, fmt: str, unsafe: tuple[str, ...] = ()) -> None:
    from sync.report.formats import format_named

    click.echo(format_named(fmt).show_plan(plan, unsafe, colour()), nl=False)


def run_apply(
    plan: Plan, client: LiteLLMClient, owner: Owner, concurrency: int, confirm_timeout: float
) -> Result:
    from sync.core.result import Result
    from sync.live.apply import ApplyAborted, apply_plan
    from sync.live.progress import progress_for
    from sync.report.text import result_text

    progress = progress_for(sys.stderr, target_prefix())
    try:
        return apply_plan(
            plan,
            client,
            owner,
            concurrency=concurrency,
            confirm_timeout=confirm_timeout,
            progress=progress,
        )
    except ApplyAborted as exc:
        progress.finish()  # end the live line before the partial result
        click.echo(result_text(Result(plan, exc.outcomes)), nl=False)
        fail(f"apply stopped: {exc.error}")
    finally:
        progress.finish()


def on_github(call: Callable[[], str]) -> None:
    """Run one GitHub step; its failure is an error (exit 1) but the plan is already printed."""
    github_value(lambda: (call(), None))


def github_value(call: Callable[[], tuple[str, T]]) -> T:
    """on_github for a step that also answers something (its line is logged)."""
    from sync.github.actions import GitHubError
    from sync.github.artifact import ReportDirError

    try:
        line, value = call()
    except ReportDirError as exc:
        fail(str(exc))
    except GitHubError as exc:
        fail(f"GitHub: {exc}")
    click.echo(display.text(line), err=True)
    return value


def plan_code(verdict: Verdict, changed: bool, detailed_exitcode: bool) -> int:
    """plan's exit: 3 when apply would refuse it (whatever --detailed-exitcode), else 2 for
    changes with --detailed-exitcode, else 0."""
    if verdict.refused:
        return EXIT_REFUSED
    return EXIT_CHANGES if detailed_exitcode and changed else EXIT_OK


def apply_verdict(
    plan: Plan, fleet: Fleet, force: bool, github: bool, target: str | None = None
) -> Verdict:
    """apply's verdict (sync/core/verdict.py, the one plan reports): --force accepts every
    refusal; on GitHub (--github-comment), the merged pull request's reviewed force accepts
    those its plan comment accepted (sync/gitops/force.py)."""
    from sync.core.verdict import FORCE, decide

    verdict = decide(plan, fleet.max_prune_percent, FORCE if force else None)
    if verdict.refused and github:
        from sync.gitops.loops import reviewed_force

        review = github_value(
            lambda: ("reading the merged pull request's fleet-sync:force label",
                     reviewed_force(os.environ, plan.fleet, target))
        )  # fmt: skip
        for note in review.notes:
            tell(f"note: {note}")
        if review.acceptance is not None:
            verdict = decide(plan, fleet.max_prune_percent, review.acceptance)
    if verdict.accepted:
        tell(f"forcing {len(verdict.accepted)} refusal(s) accepted by {verdict.by}: "
             + " | ".join(verdict.accepted))  # fmt: skip
    return verdict
