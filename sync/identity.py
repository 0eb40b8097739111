"""Which of the fleet's live routes serve which host of fleet.yaml.

A host's identity is (fleet, model_name, host name), never the address and not only the id. An
owned live route belongs to desired host H of model M when
(a) its id is a generation of H's derived id (tags lost or not, whatever its model group);
(b) it carries this fleet's tags with `fleet_sync_host: H` in model group M, whatever its id (a
    route adopted earlier keeps LiteLLM's id);
(c) it is an untagged route claimed through `owns: model_groups`, of model M, at H's address
    (normalised), and H has no route by (a) or (b): it is adopted in place.
One of them serves the host (the newest generation of the derived id, else a tagged route, else
the adopted one); every other is deleted once that one is listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass

from .fleet import normalise_address
from .render import Route, generation


@dataclass(frozen=True)
class HostRoutes:
    """The owned live routes of one desired host: the one that serves it, and the others with
    why each goes."""

    current: Route
    extras: tuple[tuple[Route, str], ...] = ()


def address(route: Route) -> str:
    try:
        return normalise_address(route.api_base or "")
    except (KeyError, ValueError):
        return route.api_base or ""


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
    tagged: dict[str, list[Route]] = {}
    untagged: dict[str, list[Route]] = {}
    for route in owned:
        base = generation(route.id)[0]
        if base in ids:
            family.setdefault(base, []).append(route)
        elif route.fleet is not None and (host := by_tags.get((route.model_name, route.host))):
            tagged.setdefault(host, []).append(route)
        elif route.id in adopted and (host := by_address.get((route.model_name, address(route)))):
            untagged.setdefault(host, []).append(route)
    names = {r.id: r.host or "?" for r in desired}
    out: dict[str, HostRoutes] = {}
    for host in family.keys() | tagged.keys() | untagged.keys():
        older = sorted(family.get(host, ()), key=lambda r: generation(r.id)[1])
        others = [
            *sorted(tagged.get(host, ()), key=lambda r: (r.id in dead, r.id)),
            *sorted(untagged.get(host, ()), key=lambda r: (r.id in dead, r.id)),
        ]
        current = older.pop() if older else others.pop(0)
        extras = [(r, f"an older generation of host {r.host or '?'}") for r in older]
        extras += [(r, f"duplicate of host {names[host]}") for r in others]
        out[host] = HostRoutes(current, tuple(extras))
    return out
