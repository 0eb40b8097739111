"""The names of targets' proxy URLs resolved to addresses (the resolver is an edge): what lets
sync/fleet/proxyaddress.py tell that `localhost` and `127.0.0.1` are one proxy. Only names,
never a connection: nothing is sent to the addresses found."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sync.fleet.proxyaddress import canonical_ip

Resolver = Callable[[str], list[str]]


@dataclass(frozen=True)
class Resolved:
    """Each name's addresses, and why a name does not resolve (the resolver's words)."""

    addresses: dict[str, frozenset[str]]
    unresolved: dict[str, str]


def system_resolver(name: str) -> list[str]:
    """The addresses the system's resolver gives a name (getaddrinfo, as httpx connects)."""
    return [str(info[4][0]) for info in socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)]


def resolve_names(names: Iterable[str], resolver: Resolver = system_resolver) -> Resolved:
    """Every name (IP literals are not asked) resolved once."""
    addresses: dict[str, frozenset[str]] = {}
    unresolved: dict[str, str] = {}
    for name in dict.fromkeys(names):
        if canonical_ip(name) is not None:
            continue
        try:
            found = frozenset(filter(None, map(canonical_ip, resolver(name))))
        except (OSError, UnicodeError) as exc:
            unresolved[name] = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            continue
        if found:
            addresses[name] = found
        else:
            unresolved[name] = "no address"
    return Resolved(addresses, unresolved)
