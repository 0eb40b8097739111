"""The changes a plan is made of, as values: create, update, delete, and what stays aside
(ignored routes, conflicts, changes withheld for want of a serving host)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sync.core.compare import FieldChange, pause_of
from sync.core.render import Route


@dataclass(frozen=True)
class RouteChange:
    """What every change says about its route (the desired one, or the live one for a delete)."""

    route: Route

    @property
    def id(self) -> str:
        return self.route.id

    @property
    def model_name(self) -> str:
        return self.route.model_name

    @property
    def host(self) -> str | None:
        return self.route.host


@dataclass(frozen=True)
class Create(RouteChange):
    action: Literal["create"] = "create"
    # A replacement: the id of the live route it replaces (deleted after this is created) and
    # what differs from it. LiteLLM cannot remove a key in place, so removing one is this.
    replaces: str | None = None
    diff: tuple[FieldChange, ...] = ()
    # A replacement cannot take over what LiteLLM does not list, nor, safely, a string it lists
    # (it may be a secret LiteLLM resolved). Paths, never values: the replaced route's keys
    # that fleet.yaml does not set and the new route carries over (sync/core/carry.py), the ones it
    # lists that the new route will not have, and those LiteLLM never lists that it may hold
    # unseen (fleet-sync did not record writing them: set by hand, or by a portal).
    carries: tuple[str, ...] = ()
    drops: tuple[str, ...] = ()
    may_drop: tuple[str, ...] = ()
    # The replaced route is not one fleet-sync created (LiteLLM's id, adopted): whatever it may
    # hold unseen is likely there (a portal's api_key), so the safety rails refuse it.
    foreign: bool = False


@dataclass(frozen=True)
class Update(RouteChange):
    before: Route
    diff: tuple[FieldChange, ...]
    action: Literal["update"] = "update"
    # False: LiteLLM stored the route but its router does not list it (it serves nothing), so
    # the update is sent even when nothing differs: it is what makes the router load it again.
    listed: bool = True
    # Top-level litellm_params keys it removes in place (LiteLLM 1.109+ litellm_params_to_remove).
    removes: tuple[str, ...] = ()

    @property
    def pause(self) -> bool | None:
        """True: it pauses the route (its host is drained); False: it resumes a paused route;
        None: the pause state stays."""
        return pause_of(self.diff)


@dataclass(frozen=True)
class Delete(RouteChange):
    reason: str
    replaced_by: str | None = None  # id of the route created in its place
    action: Literal["delete"] = "delete"
    removes: tuple[str, ...] = ()  # the keys whose removal replaces this route
    replacement: Route | None = None  # the route created in its place (shapes `before`)
    listed: bool = True  # False: a stored row the router does not list (it serves nothing)
    # A route fleet-sync did not create: the keys LiteLLM never lists that go with it (paths).
    # For a duplicate (its host keeps serving through another route) the safety rails refuse
    # it: it may hold the only api_key that works.
    may_drop: tuple[str, ...] = ()
    drained: bool = False  # its host is in fleet.yaml with enabled: false (deleted on purpose)

    @property
    def prune(self) -> bool:
        """A route lost, as the safety rails count it. A delete whose host keeps a route (a
        replacement, an older generation, a duplicate: replaced_by) is not: apply deletes it
        only once its group's creates and updates are listed."""
        return self.replaced_by is None


Change = Create | Update | Delete


@dataclass(frozen=True)
class Ignored:
    route: Route
    reason: str


@dataclass(frozen=True)
class Conflict:
    """A route fleet.yaml wants that a live route the fleet does not own stands in the way of:
    it holds the desired id (`held`: "id"), or it carries this fleet's name from another source
    and serves this very host (`held`: "host": its tag or its address), where a create would
    put a second route beside it without what LiteLLM hides on it. Never touched, never reported
    as matching; apply refuses without --force."""

    desired: Route
    held_by: Route
    reason: str  # why the holder is not the fleet's
    held: str = "id"

    @property
    def id(self) -> str:
        return self.desired.id

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model_name": self.desired.model_name,
            "host": self.desired.host,
            "held": self.held,
            "held_by": {
                "id": self.held_by.id,
                "model_name": self.held_by.model_name,
                "fleet": self.held_by.fleet,
                "source": self.held_by.source,
            },
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Withheld:
    """A change held back because its host does not serve (health: require); not applied."""

    change: Change
    reason: str
