"""Where a proxy URL sends its requests, in one spelling: what makes two targets one proxy.

Pure (no network): validate compares the spellings it can normalise on its own — the case of
the host, a trailing dot, an IP literal's forms (an IPv4-mapped IPv6 address is its IPv4
address; `[0:0::1]` is `[::1]`; `0.0.0.0` is the machine itself), the default port of the
scheme (http 80, https 443; the scheme itself only picks that port: `http://h:443` and
`https://h` reach one socket), the path as a server routes it (dot segments, empty segments, a
trailing slash). A run also knows what each name resolves to (sync/live/resolve.py, the edge)
and calls `one_proxy` with it: `http://localhost:P` and `http://127.0.0.1:P` are then one proxy.

Two *different names* reaching one address are not one proxy: an ingress or load balancer in
front of several proxies tells them apart by the name (the Host header), and so does fleet-sync.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
# The path of LiteLLM's OpenAI-compatible API, which OpenAI clients take as their base URL; the
# admin API (/model/new, /v2/model/info, /health/readiness) is at the proxy's base URL.
_OPENAI_PATH = re.compile(r"/v1/?\Z", re.IGNORECASE)


def openai_path_problem(url: str) -> str | None:
    """Why a proxy URL that ends in /v1 is refused (with the base URL to give), or None.

    Refused, not stripped: a URL that says /v1 is a URL copied from an OpenAI client's
    settings, and every request fleet-sync sent there would answer 404 ("GET
    /v1/health/readiness answered 404"); rewriting it silently would make the URL fleet-sync
    reads (and binds a saved plan to) differ from the one written, so the fix is said once,
    where the URL is written, before any request. `url` has passed the address rules."""
    if not _OPENAI_PATH.search(url):
        return None
    base = _OPENAI_PATH.sub("", url)
    return (
        f"{url!r} ends in /v1, the path of LiteLLM's OpenAI-compatible API; fleet-sync uses its "
        f"admin API at the proxy's base URL: give {base} (without /v1)"
    )


@dataclass(frozen=True)
class Place:
    """Where one proxy URL sends requests, before any name is resolved."""

    host: str  # lowercase, no trailing dot; an IP literal in its one form (no brackets)
    port: int
    path: str  # the base path, without a trailing slash ("" at the root)
    literal: bool  # host is an IP address: it resolves to itself

    @property
    def key(self) -> str:
        """One string per place: equal spellings, equal keys."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}{self.path}"


def canonical_ip(text: str) -> str | None:
    """The one form of an IP address (an IPv4-mapped IPv6 address as its IPv4 address, a zone
    index dropped), or None when `text` is not one."""
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_unspecified:  # a connection to 0.0.0.0 (or ::) reaches this very machine
        return "127.0.0.1" if ip.version == 4 else "::1"
    return str(ip)


def base_path(path: str) -> str:
    """A URL's path as a server routes it: dot segments resolved and empty ones dropped
    (`/v1/..`, `/.` and `//` are the root), without a trailing slash ("" at the root)."""
    kept: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if kept:
                kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    return "".join(f"/{s}" for s in kept)


def place(url: str) -> Place:
    """The place of an http(s) URL; ValueError for anything else (no host, another scheme, a
    port out of range)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"not an http(s) URL: {url!r}")
    name = (parts.hostname or "").rstrip(".")
    if not name:
        raise ValueError(f"no host in {url!r}")
    port = parts.port or DEFAULT_PORTS[scheme]
    ip = canonical_ip(name)
    return Place(ip or name, port, base_path(parts.path), ip is not None)


def place_key(url: str) -> str:
    """place(url).key, or the URL itself when it is no http(s) URL (it then equals only
    itself)."""
    try:
        return place(url).key
    except ValueError:
        return url


@dataclass(frozen=True)
class Shared:
    """Two targets that are one proxy: a URL of each and the address both reach."""

    first: str
    second: str
    first_url: str
    second_url: str
    address: str  # host:port (and path) both reach


def one_proxy(
    urls: Mapping[str, Iterable[str]], resolved: Mapping[str, frozenset[str]] | None = None
) -> list[Shared]:
    """Pairs of targets (in the order given) with a pod in common. resolved: the addresses each
    name resolves to (None or a missing name: compared by its spelling only). A target's own
    URLs are never compared with each other."""
    resolved = resolved or {}
    seen: list[tuple[str, str, Place]] = []  # (target, url, place), every target before this
    found: list[Shared] = []
    for name, pods in urls.items():
        mine: list[tuple[str, str, Place]] = []
        for url in pods:
            try:
                here = place(url)
            except ValueError:
                continue
            mine.append((name, url, here))
            for other, other_url, there in seen:
                if any((s.first, s.second) == (other, name) for s in found):
                    continue
                if address := _common(there, here, resolved):
                    found.append(Shared(other, name, other_url, url, address))
        seen.extend(mine)
    return found


def _addresses(at: Place, resolved: Mapping[str, frozenset[str]]) -> frozenset[str]:
    if at.literal:
        return frozenset({at.host})
    return frozenset(filter(None, map(canonical_ip, resolved.get(at.host, ()))))


def _common(a: Place, b: Place, resolved: Mapping[str, frozenset[str]]) -> str | None:
    """The address a and b both reach, or None: same port and path, and the same name or an IP
    literal among the addresses the other resolves to."""
    if (a.port, a.path) != (b.port, b.path):
        return None
    if a.host == b.host:
        return a.key
    if not (a.literal or b.literal):
        return None  # two names: an ingress may route each to its own proxy
    common = _addresses(a, resolved) & _addresses(b, resolved)
    if not common:
        return None
    ip = min(common)
    host = f"[{ip}]" if ":" in ip else ip
    return f"{host}:{a.port}{a.path}"
