"""Which live routes a fleet may change or prune, and why the others are left alone."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from .fleet import Fleet
from .render import Route


@dataclass(frozen=True)
class Claim:
    """Decision for one live route: owned or not, with the reason shown in plans."""

    owned: bool
    reason: str
    adopted: bool = False  # untagged route claimed through owns: model_groups


def claim(route: Route, fleet: Fleet, desired_ids: Collection[str]) -> Claim:
    if not route.db_model:
        return Claim(False, "config-file route (db_model: false): the admin API cannot change it")
    if route.fleet == fleet.name:
        return Claim(True, f"tagged {fleet.name}")
    if route.id in desired_ids and route.fleet is None:
        # The id derives from this fleet's name, model and host: it is ours with its tags lost.
        return Claim(True, "carries this fleet's id (tags missing)")
    if route.fleet is not None:
        return Claim(False, f"tagged by another fleet ({route.fleet})")
    if fleet.owns == "model_groups" and route.model_name in fleet.model_names:
        return Claim(True, f"untagged route of model {route.model_name} (owns: model_groups)", True)
    if route.model_name in fleet.model_names:
        return Claim(
            False,
            f"untagged route of model {route.model_name}; set owns: model_groups to let "
            "this fleet prune it",
        )
    return Claim(False, "untagged, not one of this fleet's models")
