"""fleet.yaml's `targets:` on the command line: `--target NAME`, each target's proxy and key
resolved from its `os.environ/NAME` references, and targets worked on concurrently.

Read at start-up by the commands that take --target, `--help` included: nothing heavy here.

Proxy and key with targets (README "Commands"): every target's proxy URL(s) and keys come from
its own entry. `--proxy-url` and `--api-key` given on the command line are refused unless
exactly one `--target` is selected, where they override that target's (the write and the read
key alike). LITELLM_PROXY_URL(S), LITELLM_PROXY_API_KEY and LITELLM_PROXY_READ_API_KEY in the
environment are not used (unless a target references one by name): a variable meant for one
proxy never sends another target's plan there.

Whose proxy_url and keys: in a pull request's run those of fleet.yaml at the trusted ref
(sync/core/keytrust.py TrustedRef.pin), so a pull request never chooses where a key goes nor
which variable is sent; else fleet.yaml's own. Two selected targets whose URLs reach one pod
(names resolved: sync/fleet/proxyaddress.py) stop the run before any request: each would prune
the other's routes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import click

from sync.commands.common import CURRENT_TARGET, Exit, fail, target_prefix
from sync.errors import FleetSyncError
from sync.secrets import display, scrub
from sync.secrets.credentials import strip_userinfo

if TYPE_CHECKING:
    from sync.core.keytrust import TrustedRef
    from sync.fleet.model import Fleet
    from sync.fleet.targets import Target
    from sync.live.resolve import Resolver

REFERENCE = "os.environ/"
MAX_READERS = 4  # targets read at once: each read is a handful of requests per pod
ENVIRONMENT_PROXY = (
    "LITELLM_PROXY_URL",
    "LITELLM_PROXY_URLS",
    "LITELLM_PROXY_API_KEY",
    "LITELLM_PROXY_READ_API_KEY",
)


def target_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--target",
        "target_names",
        multiple=True,
        metavar="NAME",
        help="With targets: in fleet.yaml, work on this target only (repeatable; default: every "
        "target, in promotion order). Its proxy and key come from its entry in fleet.yaml.",
    )(f)


class TargetUnresolved(FleetSyncError):
    """A target whose proxy or key cannot be resolved from the environment (exit 1 for it)."""


@dataclass(frozen=True)
class Endpoint:
    """A target's proxy, resolved: its pod URLs and the key to send."""

    urls: tuple[str, ...]
    key: str
    key_name: str  # where the key came from, for messages that say to fix it
    url_name: str = "--proxy-url"  # where the URLs came from, likewise


@dataclass(frozen=True)
class Overrides:
    """--proxy-url / --api-key given on the command line (allowed with one --target only)."""

    urls: tuple[str, ...] = ()
    key: str | None = None


def select(fleet: Fleet, names: Sequence[str]) -> tuple[Target, ...]:
    """The targets a run works on, in promotion order: those named (each once), else every
    one. An unknown name stops the command (exit 1) listing the declared ones."""
    from sync.fleet.targets import what_target_means

    declared = [t.name for t in fleet.targets]
    if not fleet.targets:
        if names:
            fail(
                f"--target {display.printable(names[0][:64])}: {fleet.file} declares no "
                "targets: (the proxy comes from LITELLM_PROXY_URL or --proxy-url); "
                f"{what_target_means(fleet, names)}"
            )
        return ()
    unknown = [n for n in dict.fromkeys(names) if n not in declared]
    if unknown:
        fail(
            f"unknown target(s) {', '.join(display.printable(n[:64]) for n in unknown)}; "
            f"{fleet.file} declares: {', '.join(declared)}; {what_target_means(fleet, unknown)}"
        )
    wanted = set(names) or set(declared)
    return tuple(t for t in fleet.targets if t.name in wanted)


def overrides(
    fleet: Fleet, names: Sequence[str], proxy_urls: Sequence[str], api_key: str | None
) -> Overrides:
    """--proxy-url / --api-key with targets: refused unless exactly one --target names the
    target they stand for (`api_key` counts only when given on the command line)."""
    ctx = click.get_current_context()
    key_given = ctx.get_parameter_source("api_key") is click.core.ParameterSource.COMMANDLINE
    cli_key = api_key if key_given else None
    if not fleet.targets or not (proxy_urls or cli_key):
        return Overrides()
    if len(set(names)) != 1:
        flags = " and ".join(
            f for f, v in (("--proxy-url", proxy_urls), ("--api-key", cli_key)) if v
        )
        fail(
            f"{flags}: fleet.yaml declares targets:, each with its own proxy and key; "
            "they override one target only: select it with exactly one --target"
        )
    return Overrides(tuple(u for u in proxy_urls if u), cli_key)


def unused_environment(targets: Sequence[Target], environ: Mapping[str, str]) -> list[str]:
    """The LITELLM_PROXY_* variables set that a run with targets does not use."""
    referenced = {
        ref[len(REFERENCE) :]
        for t in targets
        for ref in (*_urls_as_written(t), t.api_key or "", t.read_api_key or "")
        if ref.startswith(REFERENCE)
    }
    return [v for v in ENVIRONMENT_PROXY if environ.get(v) and v not in referenced]


def resolve(
    target: Target, environ: Mapping[str, str], write: bool, override: Overrides = Overrides()
) -> Endpoint:
    """The target's pod URLs and key from the environment: a command that writes takes
    api_key, one that reads read_api_key when set, else api_key. A literal URL is used as
    written; a reference is a URL or comma-separated pod URLs. Raises TargetUnresolved naming
    the variable (never its value) when it is unset or empty."""
    url_name = "--proxy-url"
    if override.urls:
        urls: tuple[str, ...] = override.urls
    else:
        named = ", ".join(w.removeprefix(REFERENCE) for w in _urls_as_written(target))
        url_name = f"target {target.name}'s proxy_url: {named}"
        urls = tuple(
            url
            for written in _urls_as_written(target)
            for url in _value(written, environ, target.name, "proxy_url").split(",")
            if url.strip()
        )
        urls = tuple(u.strip() for u in urls)
        if not urls:  # never the LITELLM_PROXY_URL(S) a run without targets would read
            raise TargetUnresolved(f"target {target.name}: proxy_url: {named} holds no URL")
    if override.key:
        key, key_name = override.key, "--api-key"
    else:
        which, reference = _key_reference(target, write)
        key = _value(reference, environ, target.name, which)
        variable = reference.removeprefix(REFERENCE) if reference.startswith(REFERENCE) else ""
        key_name = f"{variable} (target {target.name}'s {which})".lstrip()
        from sync.secrets.credentials import unsendable

        if why := unsendable(key):
            raise TargetUnresolved(
                f"target {target.name}: {which} ({reference}) cannot be sent to the proxy: "
                f"{why}; set it to the key exactly as LiteLLM issued it"
            )
    scrub.remember(key)
    return Endpoint(urls, key, key_name, url_name)


def pinned(
    target: Target,
    ref: TrustedRef,
    environ: Mapping[str, str],
    write: bool,
    override: Overrides = Overrides(),
) -> Endpoint:
    """resolve() at the endpoint the run's trusted ref gives the target: a note on stderr when
    a pull request changed it; TargetUnresolved when the ref does not give one. A proxy and key
    both given on the command line come from no fleet.yaml: used as given."""
    if override.urls and override.key:
        return resolve(target, environ, write, override)
    pin = ref.pin(target)
    if pin.target is None:
        raise TargetUnresolved(pin.refusal)
    if pin.note:
        click.echo(f"{target_prefix()}note: {pin.note}", err=True)
        # The base's variables are not in the pull request's fleet.yaml, whose references the
        # scrub already knows: masked alike.
        written = (*_urls_as_written(pin.target), pin.target.api_key, pin.target.read_api_key)
        scrub.active().remember_references(" ".join(w for w in written if w), environ)
    return resolve(pin.target, environ, write, override)


def endpoints(
    targets: Sequence[Target],
    ref: TrustedRef,
    write: bool,
    override: Overrides,
    resolver: Resolver | None = None,
) -> list[Outcome[Endpoint]]:
    """Every selected target's endpoint (one that cannot be resolved is exit 1 for it alone);
    two targets that are one proxy stop the run (exit 1) before any request."""
    resolved = [
        attempt(t.name, partial(pinned, t, ref, os.environ, write, override)) for t in targets
    ]
    if sum(o.value is not None for o in resolved) > 1:
        resolved = _one_proxy_each(resolved, resolver)
    return resolved


def _one_proxy_each(
    resolved: list[Outcome[Endpoint]], resolver: Resolver | None
) -> list[Outcome[Endpoint]]:
    """The endpoints compared by the addresses their URLs reach (sync/fleet/proxyaddress.py),
    each name resolved first (sync/live/resolve.py): a target with a name that does not resolve
    is exit 1 for it alone; two that are one proxy stop the run."""
    from sync.fleet.proxyaddress import one_proxy, place
    from sync.live.resolve import resolve_names, system_resolver

    hosts: dict[str, list[str]] = {}
    for outcome in resolved:
        for url in outcome.value.urls if outcome.value is not None else ():
            with suppress(ValueError):  # connect() says what is wrong with such a URL
                hosts.setdefault(outcome.target, []).append(place(url).host)
    names = resolve_names((h for hs in hosts.values() for h in hs), resolver or system_resolver)
    checked: list[Outcome[Endpoint]] = []
    for outcome in resolved:
        lost = [h for h in hosts.get(outcome.target, ()) if h in names.unresolved]
        if outcome.value is not None and lost:
            outcome = attempt(outcome.target, partial(_unresolved, outcome.target, lost[0],
                                                      names.unresolved[lost[0]]))  # fmt: skip
        checked.append(outcome)
    urls = {o.target: o.value.urls for o in checked if o.value is not None}
    if shared := one_proxy(urls, names.addresses):
        named = "; ".join(
            f"targets {s.first} and {s.second} ({strip_userinfo(s.first_url)} and "
            f"{strip_userinfo(s.second_url)} both reach {s.address})"
            for s in shared
        )
        fail(
            f"{named}: one proxy given as two targets; each would prune the other's routes: "
            "nothing was sent to any target (check the variables their proxy_url names)"
        )
    return checked


def _unresolved(target: str, host: str, why: str) -> Endpoint:
    raise TargetUnresolved(
        f"target {target}: proxy_url: the host {display.printable(host[:255])} does not resolve "
        f"({why}); nothing was sent to it"
    )


def _urls_as_written(target: Target) -> tuple[str, ...]:
    url = target.proxy_url
    return (url,) if isinstance(url, str) else tuple(url)


def _key_reference(target: Target, write: bool) -> tuple[str, str]:
    if not write and target.read_api_key:
        return "read_api_key", target.read_api_key
    if target.api_key:
        return "api_key", target.api_key
    needs = "api_key (a write key)" if write else "read_api_key or api_key"
    raise TargetUnresolved(f"target {target.name} has no {needs} in fleet.yaml")


def _value(written: str, environ: Mapping[str, str], target: str, key: str) -> str:
    if not written.startswith(REFERENCE):
        return written
    name = written[len(REFERENCE) :]
    value = environ.get(name, "")
    if not value.strip():
        state = "empty" if name in environ else "not set"
        raise TargetUnresolved(f"target {target}: {key}: the variable {name} is {state}")
    return value


@contextmanager
def in_target(name: str) -> Iterator[None]:
    """Lines written to stderr start with [name] while the work is for that target."""
    token = CURRENT_TARGET.set(name)
    try:
        yield
    finally:
        CURRENT_TARGET.reset(token)


T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """One target's work: its value, or the exit code and message of what stopped it."""

    target: str
    value: T | None
    code: int = 0
    error: str | None = None


def attempt(name: str, work: Callable[[], T]) -> Outcome[T]:
    """Run one target's work, its lines marked with its name; an error stops this target only
    (its line is on stderr, its code and message in the outcome)."""
    with in_target(name):
        try:
            return Outcome(name, work())
        except Exit as exc:
            return Outcome(name, None, exc.code, exc.message or "stopped")
        except FleetSyncError as exc:
            message = display.text(str(exc))
            click.echo(f"{target_prefix()}error: {message}", err=True)
            return Outcome(name, None, exc.exit_code, message)


def each(targets: Sequence[Target], work: Callable[[Target], T]) -> list[Outcome[T]]:
    """`work` for every target, at most MAX_READERS at once; outcomes in the targets' order
    whatever order they finish in."""
    if len(targets) <= 1:
        return [attempt(t.name, partial(work, t)) for t in targets]
    with ThreadPoolExecutor(max_workers=min(len(targets), MAX_READERS)) as pool:
        futures = [pool.submit(attempt, t.name, partial(work, t)) for t in targets]
        return [f.result() for f in futures]


def note_unused_environment(targets: Sequence[Target]) -> None:
    unused = unused_environment(targets, os.environ)
    if unused:
        click.echo(
            f"note: {', '.join(unused)} not used: fleet.yaml declares targets:, each target's "
            "proxy and key come from its own entry",
            err=True,
        )


def header(fmt: str, name: str) -> str:
    """The line that opens a target's section of text or markdown output."""
    if fmt == "markdown":
        return f"## Target `{name}`\n\n"
    return f"=== target {name} ===\n"
