"""Which of the fleet's live routes serve which host of fleet.yaml.

A host's identity is (fleet, model_name, host name), never the address and not only the id. An
owned live route belongs to desired host H of model M when
(a) its id is a generation of H's derived id (tags lost or not, whatever its model group);
(b) it carries this fleet's tags with `fleet_sync_host: H` in model group M, whatever its id (a
    route adopted earlier keeps LiteLLM's id);
(c) it carries this fleet's tags naming a host no desired route of M has (a host renamed or
    drained), under an id fleet-sync did not derive for that host (adopted earlier), at H's
    address (normalised): the host was renamed, and the route is adopted again under H's name
    in place (a replacement would lose what LiteLLM never lists on it);
(d) it is an untagged route claimed through `owns: model_groups`, of model M, at H's address.
One of them serves the host (the newest generation of the derived id, else a route of (b), (c),
(d) in that order); every other is deleted once that one is listed. A route fleet-sync did not
create may hold what LiteLLM never lists (api_key, ...): see `created`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass

from sync.core.render import Route, generation, route_id
from sync.fleet.model import normalise_address


@dataclass(frozen=True)
class Extra:
    """An owned route of a host other than the one that serves it: deleted, with why."""

    route: Route
    reason: str
    created: bool  # fleet-sync created it (an older generation of the host's derived id)


@dataclass(frozen=True)
class HostRoutes:
    """The owned live routes of one desired host: the one that serves it, and the others."""

    current: Route
    extras: tuple[Extra, ...] = ()


def address(route: Route) -> str:
    try:
        return normalise_address(route.api_base or "")
    except (KeyError, ValueError):
        return route.api_base or ""


def created(route: Route, desired_ids: Set[str]) -> bool:
    """Whether fleet-sync created this owned route: its id is a generation of an id derived for
    a host, one fleet.yaml renders (tags lost or not) or the one its own tags name. Any other
    id is LiteLLM's, of a route fleet-sync adopted: it may hold what LiteLLM never lists
    (api_key, ...), which no read of the proxy shows and no other route can take over."""
    base = generation(route.id)[0]
    if base in desired_ids:
        return True
    fleet, host = route.fleet, route.host
    return (
        fleet is not None and host is not None and base == route_id(fleet, route.model_name, host)
    )


def match_hosts(
    desired: Sequence[Route],
    owned: Iterable[Route],
    adopted: Set[str],
    dead: Set[str],
) -> dict[str, HostRoutes]:
    """The routes of each desired host, by the host's derived id (hosts without any left out).
    `adopted`: ids of untagged routes claimed through owns: model_groups; `dead`: ids of rows
    LiteLLM stored but does not list (a listed route is preferred among equals)."""
    ids = {r.id for r in desired}
    by_tags = {(r.model_name, r.host): r.id for r in desired}
    by_address = {(r.model_name, address(r)): r.id for r in desired if r.api_base}
    family: dict[str, list[Route]] = {}
    # Per host, the routes of (b), (c) and (d) above, in that order of preference.
    others: dict[str, tuple[list[Route], list[Route], list[Route]]] = {}
    for route in owned:
        base = generation(route.id)[0]
        if base in ids:
            family.setdefault(base, []).append(route)
            continue
        at = by_address.get((route.model_name, address(route)))
        if route.fleet is not None and (host := by_tags.get((route.model_name, route.host))):
            others.setdefault(host, ([], [], []))[0].append(route)
        elif route.fleet is not None and at and not created(route, ids):
            others.setdefault(at, ([], [], []))[1].append(route)
        elif route.id in adopted and at:
            others.setdefault(at, ([], [], []))[2].append(route)
    names = {r.id: r.host or "?" for r in desired}
    out: dict[str, HostRoutes] = {}
    for host in family.keys() | others.keys():
        older = sorted(family.get(host, ()), key=lambda r: generation(r.id)[1])
        rest = [
            r
            for kind in others.get(host, ([], [], []))
            for r in sorted(kind, key=lambda r: (r.id in dead, r.id))
        ]
        current = older.pop() if older else rest.pop(0)
        extras = [Extra(r, f"an older generation of host {r.host or '?'}", True) for r in older]
        extras += [Extra(r, f"duplicate of host {names[host]}", created(r, ids)) for r in rest]
        out[host] = HostRoutes(current, tuple(extras))
    return out
