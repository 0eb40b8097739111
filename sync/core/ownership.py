"""Which live routes a fleet may change or prune, and why the others are left alone.

A route is the fleet's when it carries this fleet's name AND this fleet's source (the repository
that writes it), or no source at all (written before the source tag existed, or by a run that
knows no source). Routes of the same fleet name from another source belong to whoever copied
the name: they are left alone unless the run is told to take them over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sync.core.render import Route
from sync.fleet.model import Fleet
from sync.litellm.teams import team_reason, team_scope


@dataclass(frozen=True)
class Claim:
    """Decision for one live route: owned or not, with the reason shown in plans."""

    owned: bool
    reason: str
    adopted: bool = False  # untagged route claimed through owns: model_groups


def same_source(route_source: str | None, fleet_source: str | None) -> bool:
    """Sources are repositories: owner/name compared without case (GitHub ignores it)."""
    if route_source is None:
        return True  # written before the source tag, or by a run without a source
    return fleet_source is not None and route_source.casefold() == fleet_source.casefold()


def claim(
    route: Route, fleet: Fleet, desired: Mapping[str, Route], take_over: bool = False
) -> Claim:
    """`desired` maps each id fleet.yaml renders to its route."""
    if not route.db_model:
        return Claim(False, "config-file route (db_model: false): the admin API cannot change it")
    if (team := team_scope(route.model_name, route.model_info)) is not None:
        return Claim(False, team_reason(team))  # whatever its tags, id or model group say
    if route.fleet == fleet.name:
        if same_source(route.source, fleet.source):
            return Claim(True, f"tagged {fleet.name}")
        if take_over:
            return Claim(True, f"tagged {fleet.name} from source {route.source} (--take-over)")
        ours = fleet.source or "none: set source: in fleet.yaml or GITHUB_REPOSITORY"
        return Claim(
            False,
            f"tagged {fleet.name} by another source ({route.source}; this run's source: {ours}); "
            "--take-over to take it over",
        )
    wanted = desired.get(route.id)
    if wanted is not None and route.fleet is None:
        if route.model_name == wanted.model_name:
            # The id derives from this fleet's name, model and host and the route serves that
            # model: it is ours with its tags lost.
            return Claim(True, "carries this fleet's id (tags missing)")
        # In another model group it is someone else's route, whatever owns: says.
        return Claim(False, f"untagged route of model {route.model_name} holding this id")
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


@dataclass(frozen=True)
class Owner:
    """The ownership rule of one run (its fleet and --take-over), handed to apply: a create
    whose id LiteLLM already stores writes to that row only when this says it is the fleet's."""

    fleet: Fleet
    take_over: bool = False

    def holds(self, stored: Route, desired: Route) -> Claim:
        """Whether `stored`, the row holding the id `desired` is created under, is the fleet's:
        claim's rule (tags of this fleet and source, or untagged and carrying this id), and in
        the desired route's model group. A row fleet-sync stored in an earlier ambiguous write
        is; a row of another group holding the id (planted, or another fleet's) is not."""
        if stored.model_name != desired.model_name:
            return Claim(False, f"model group {stored.model_name}")
        return claim(stored, self.fleet, {desired.id: desired}, self.take_over)
