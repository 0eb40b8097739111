"""Where each target of a run is read and written: its pod URLs and key, resolved from its
`os.environ/NAME` references, or, for a fleet without `targets:`, from the proxy options and
LITELLM_PROXY_* (README "Commands").

Proxy and key with targets: every target's proxy URL(s) and keys come from its own entry.
`--proxy-url` and `--api-key` given on the command line are refused unless exactly one
`--target` is selected, where they override that target's (the write and the read key alike).
LITELLM_PROXY_URL(S), LITELLM_PROXY_API_KEY and LITELLM_PROXY_READ_API_KEY in the environment
are not used (unless a target references one by name): a variable meant for one proxy never
sends another target's plan there.

Whose proxy_url and keys: in a pull request's run those of fleet.yaml at the trusted ref
(sync/core/keytrust.py TrustedRef.pin), so a pull request never chooses where a key goes nor
which variable is sent; else fleet.yaml's own. Two selected targets whose URLs reach one pod
(names resolved: sync/fleet/proxyaddress.py) stop the run before any request: each would prune
the other's routes."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from sync.errors import FleetSyncError
from sync.run.console import err, fail, tell
from sync.run.outcome import Outcome, attempt
from sync.secrets import display, scrub
from sync.secrets.credentials import strip_userinfo

if TYPE_CHECKING:
    from sync.core.keytrust import TrustedRef
    from sync.fleet.targets import Target
    from sync.live.client import LiteLLMClient
    from sync.live.resolve import Resolver

REFERENCE = "os.environ/"
ENVIRONMENT_PROXY = (
    "LITELLM_PROXY_URL",
    "LITELLM_PROXY_URLS",
    "LITELLM_PROXY_API_KEY",
    "LITELLM_PROXY_READ_API_KEY",
)


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
class ProxyOptions:
    """A command's proxy options: --proxy-url (repeatable), the key its options read and where
    from (--api-key or the variable), and whether --api-key was given on the command line."""

    urls: tuple[str, ...] = ()
    key: str | None = None
    key_name: str = "LITELLM_PROXY_API_KEY"
    key_given: bool = False
    writes: bool = False  # a read command that writes (drift --fix): the write key only

    @property
    def override_key(self) -> str | None:
        """The key that overrides one target's: --api-key given on the command line only."""
        return self.key if self.key_given else None


NO_OVERRIDE = ProxyOptions()


def check_key(value: str, where: str) -> None:
    from sync.secrets.credentials import unsendable

    if why := unsendable(value):
        fail(
            f"{where} cannot be sent to the proxy: {why}; set it to the key exactly as LiteLLM "
            "issued it (sk-...), nothing around it"
        )


def connect(endpoint: Endpoint, timeout: float, spread_writes: bool = True) -> LiteLLMClient:
    """A client of the endpoint's proxy; a key or URL that cannot be sent stops (exit 1)."""
    from sync.live.access import changed_by
    from sync.live.client import LiteLLMClient
    from sync.live.proxyurl import proxy_url_problem

    scrub.remember(endpoint.key)
    check_key(endpoint.key, endpoint.key_name)
    for url in endpoint.urls:
        if problem := proxy_url_problem(url, endpoint.url_name):
            fail(problem)
    return LiteLLMClient(
        endpoint.urls,
        endpoint.key,
        timeout=timeout,
        changed_by_header=changed_by(os.environ),
        spread_writes=spread_writes,
        key_name=endpoint.key_name,
    )


def check_can_write(client: LiteLLMClient) -> None:
    """Stop before the first write when the key's role cannot write or a pod is going away
    (shutting down): nothing is half-done. Its ProxyError stops the target (exit 1)."""
    from sync.live.access import write_refusal

    if refusal := write_refusal(client.key_role(), client.key_name):
        fail(refusal)
    client.check_serving()


def implicit_endpoint(options: ProxyOptions) -> Endpoint:
    """The proxy of a fleet without targets: --proxy-url, else LITELLM_PROXY_URLS, else
    LITELLM_PROXY_URL; the key the command's options read."""
    urls, url_name = tuple(u for u in options.urls if u), "--proxy-url"
    if not urls:
        urls, url_name = _environment_urls()
    if not options.key and options.writes:
        fail(
            "no write key given: drift --fix writes with LITELLM_PROXY_API_KEY (a proxy_admin "
            "key) or --api-key, never LITELLM_PROXY_READ_API_KEY"
        )
    if not options.key:
        fail(
            "no admin key given: set LITELLM_PROXY_API_KEY (plan and drift also take "
            "LITELLM_PROXY_READ_API_KEY) or pass --api-key"
        )
    return Endpoint(urls, options.key, options.key_name, url_name)


def _environment_urls() -> tuple[tuple[str, ...], str]:
    """The pod URLs of LITELLM_PROXY_URLS, else LITELLM_PROXY_URL; a variable that is set but
    holds no URL stops the command naming that variable (the one read)."""
    for name in ("LITELLM_PROXY_URLS", "LITELLM_PROXY_URL"):
        value = os.environ.get(name)
        if value is None or value == "":
            continue
        urls = tuple(u.strip() for u in value.split(",") if u.strip())
        if not urls:
            fail(f"{name} is set but holds no URL; set it to the proxy's URL or pass --proxy-url")
        return urls, name
    fail("no proxy given: set LITELLM_PROXY_URL (or LITELLM_PROXY_URLS) or pass --proxy-url")


def check_overrides(names: Sequence[str], options: ProxyOptions) -> ProxyOptions:
    """--proxy-url / --api-key with targets: refused unless exactly one --target names the
    target they stand for; what overrides that target's entry (nothing: ProxyOptions())."""
    if not (options.urls or options.override_key):
        return ProxyOptions()
    if len(set(names)) != 1:
        flags = " and ".join(
            f for f, v in (("--proxy-url", options.urls), ("--api-key", options.override_key)) if v
        )
        fail(
            f"{flags}: fleet.yaml declares targets:, each with its own proxy and key; "
            "they override one target only: select it with exactly one --target"
        )
    return ProxyOptions(tuple(u for u in options.urls if u), options.override_key, "--api-key")


def unused_environment(targets: Sequence[Target], environ: Mapping[str, str]) -> list[str]:
    """The LITELLM_PROXY_* variables set that a run with targets does not use."""
    referenced = {
        ref[len(REFERENCE) :]
        for t in targets
        for ref in (*_urls_as_written(t), t.api_key or "", t.read_api_key or "")
        if ref.startswith(REFERENCE)
    }
    return [v for v in ENVIRONMENT_PROXY if environ.get(v) and v not in referenced]


def note_unused_environment(targets: Sequence[Target]) -> None:
    if unused := unused_environment(targets, os.environ):
        err(
            f"note: {', '.join(unused)} not used: fleet.yaml declares targets:, each target's "
            "proxy and key come from its own entry"
        )


def resolve(
    target: Target, environ: Mapping[str, str], write: bool, override: ProxyOptions = NO_OVERRIDE
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
            url.strip()
            for written in _urls_as_written(target)
            for url in _value(written, environ, target.name, "proxy_url").split(",")
            if url.strip()
        )
        if not urls:  # never the LITELLM_PROXY_URL(S) a run without targets would read
            raise TargetUnresolved(f"target {target.name}: proxy_url: {named} holds no URL")
    if override.key:
        key, key_name = override.key, "--api-key"
    else:
        key, key_name = _target_key(target, environ, write)
    scrub.remember(key)
    return Endpoint(urls, key, key_name, url_name)


def _target_key(target: Target, environ: Mapping[str, str], write: bool) -> tuple[str, str]:
    from sync.secrets.credentials import unsendable

    which, reference = _key_reference(target, write)
    key = _value(reference, environ, target.name, which)
    variable = reference.removeprefix(REFERENCE) if reference.startswith(REFERENCE) else ""
    if why := unsendable(key):
        raise TargetUnresolved(
            f"target {target.name}: {which} ({reference}) cannot be sent to the proxy: "
            f"{why}; set it to the key exactly as LiteLLM issued it"
        )
    return key, f"{variable} (target {target.name}'s {which})".lstrip()


def pinned(
    target: Target, ref: TrustedRef, environ: Mapping[str, str], write: bool,
    override: ProxyOptions = NO_OVERRIDE,
) -> Endpoint:  # fmt: skip
    """resolve() at the endpoint the run's trusted ref gives the target: a note on stderr when
    a pull request changed it; TargetUnresolved when the ref does not give one. A proxy and key
    both given on the command line come from no fleet.yaml: used as given."""
    if override.urls and override.key:
        return resolve(target, environ, write, override)
    pin = ref.pin(target)
    if pin.target is None:
        raise TargetUnresolved(pin.refusal)
    if pin.note:
        tell(f"note: {pin.note}")
        # The base's variables are not in the pull request's fleet.yaml, whose references the
        # scrub already knows: masked alike.
        written = (*_urls_as_written(pin.target), pin.target.api_key, pin.target.read_api_key)
        scrub.active().remember_references(" ".join(w for w in written if w), environ)
    return resolve(pin.target, environ, write, override)


def endpoints(
    targets: Sequence[Target],
    ref: TrustedRef,
    write: bool,
    override: ProxyOptions,
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

    hosts: dict[str | None, list[str]] = {}
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
    urls = {o.target or "": o.value.urls for o in checked if o.value is not None}
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


def _unresolved(target: str | None, host: str, why: str) -> Endpoint:
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
