"""What still names a model group a plan leaves without routes (issue 26): the router's
fallbacks, aliases and routing groups, virtual keys' and teams' model lists, aliases, budgets
and limits, unified access groups, wildcard routes. Removing a group's last route is the one
prune whose damage LiteLLM neither refuses nor shows: every such reference stays behind.

Pure: the live edge (sync/live/references.py) reads the proxy into `Holdings` (plain data),
`find` matches them against the vanishing groups, the plan carries the `References` it found
(hashed: `apply --plan` refuses a plan whose references changed since review) and
sync/core/safety.py refuses what would change requests silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sync.core.changes import Create, Delete, Update

if TYPE_CHECKING:
    from sync.core.plan import Plan

# Where a reference lives.
CONFIG_FILE, DATABASE = "config file", "database"
UNSAID = "config file or database (this LiteLLM does not say which)"
ROUTER = "the router's route list"

FALLBACK_KINDS = {
    "fallbacks": "router fallback",
    "context_window_fallbacks": "context-window fallback",
    "content_policy_fallbacks": "content-policy fallback",
}


@dataclass(frozen=True)
class Reference:
    """One thing on the proxy that names `group`: its kind, who holds it (a fallback's source
    group, an alias, a key's alias — never its token —, a team's alias), where it lives, what
    removing the group does to requests, and whether that refuses the plan or only warns."""

    group: str
    kind: str
    holder: str
    lives: str
    effect: str
    refuses: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "kind": self.kind,
            "holder": self.holder,
            "lives": self.lives,
            "effect": self.effect,
            "refuses": self.refuses,
        }

    def line(self) -> str:
        return f"{self.kind} in {self.holder} ({self.lives}): {self.effect}"


@dataclass(frozen=True)
class References:
    """What the plan found naming the groups it leaves without routes (`groups`): each
    reference, the probable renames (a group removed and another created in the same plan),
    what could not be read (refused like unread data) and the kinds no API of this release
    shows ("not checkable": said, never pretended)."""

    groups: tuple[str, ...]
    found: tuple[Reference, ...] = ()
    renames: tuple[tuple[str, str], ...] = ()
    unread: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()

    def of(self, group: str) -> tuple[Reference, ...]:
        return tuple(r for r in self.found if r.group == group)

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups": list(self.groups),
            "found": [r.as_dict() for r in self.found],
            "renames": [{"from": old, "to": new} for old, new in self.renames],
            "unread": list(self.unread),
            "not_checkable": list(self.unchecked),
        }


# -- what the live edge reads, as plain data ---------------------------------------------------


@dataclass(frozen=True)
class Fallback:
    """One router fallback rule: requests for `source` that fail go on to `targets` in order
    (`source` "*": every group's default)."""

    kind: str  # a key of FALLBACK_KINDS
    source: str
    targets: tuple[str, ...]


@dataclass(frozen=True)
class RouterSettings:
    fallbacks: tuple[Fallback, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # (alias, group): model_group_alias
    routing_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, groups)
    # Where each setting comes from: CONFIG_FILE, DATABASE or UNSAID, by setting name.
    sources: Mapping[str, str] = field(default_factory=dict)

    def lives(self, setting: str) -> str:
        return self.sources.get(setting, UNSAID)


@dataclass(frozen=True)
class Holder:
    """A virtual key or a team, by name (a key's alias, a team's alias or id): what it lists."""

    kind: str  # "key" | "team"
    name: str
    models: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # (alias, group)
    budget_fallbacks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (group, fallbacks)
    budgets: tuple[str, ...] = ()  # groups with a budget of their own (model_max_budget)
    limits: tuple[str, ...] = ()  # groups with rpm/tpm limits of their own
    fallbacks: tuple[Fallback, ...] = ()  # its own router_settings


@dataclass(frozen=True)
class Holdings:
    """Everything read that may name a group. None: that kind was not read at all (its reason
    is in `unread` or `unchecked`)."""

    router: RouterSettings | None = None
    holders: tuple[Holder, ...] = ()
    access_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, groups)
    unread: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()


# -- which groups a plan leaves without routes ------------------------------------------------


def served_after(plan: Plan) -> dict[str, int]:
    """Routes serving each model group once the plan is applied: what the router lists and has
    not paused (plan.live_groups), plus creates, minus deletes, updates moving or pausing."""
    after = dict(plan.live_groups)

    def add(model: str, n: int) -> None:
        after[model] = after.get(model, 0) + n

    for change in plan.changes:
        if isinstance(change, Create):
            add(change.model_name, not change.route.paused)
        elif isinstance(change, Delete):
            if change.listed and not change.route.paused:
                add(change.model_name, -1)
        elif not change.listed:
            add(change.model_name, not change.route.paused)
        else:
            add(change.before.model_name, -(not change.before.paused))
            add(change.model_name, not change.route.paused)
    return after


def vanishing(plan: Plan) -> tuple[str, ...]:
    """The model groups the router lists now that no route serves once the plan is applied,
    where the plan deletes or pauses a listed route of the group (creates of the same plan,
    foreign and config-file routes counted: they are in live_groups). An ordinary plan has
    none, and then nothing more is read from the proxy."""
    listed = dict(plan.live_groups)
    after = served_after(plan)
    pruned = {c.model_name for c in plan.changes if isinstance(c, Delete) and c.listed}
    # A pause takes its route out of service as a prune does (LiteLLM answers 403 "Model is
    # blocked" once every route of a group is paused): what names the group breaks alike.
    pruned |= {
        c.model_name
        for c in plan.changes
        if isinstance(c, Update) and c.listed and c.pause is True and not c.before.paused
    }
    return tuple(sorted(g for g in pruned if g in listed and after.get(g, 0) <= 0))


def renames(plan: Plan, groups: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(removed, created): a group the plan leaves without routes beside a group the plan
    creates (the router does not list it now): most likely a rename, whose references stay
    behind on the old name."""
    listed = dict(plan.live_groups)
    created = sorted({c.model_name for c in plan.changes if isinstance(c, Create)} - set(listed))
    return tuple((old, new) for old in groups for new in created)


# -- what refuses --------------------------------------------------------------------------

SHOWN = 8  # references named in one refusal; the plan lists every one


def refusals(plan: Plan) -> list[str]:
    """Why the plan must not run without --force: a group it leaves without routes that
    something still names in a way that changes requests silently, and references that could
    not be read fully (refused like any unread data). Stale budgets and limits only warn."""
    refs = plan.references
    if refs is None:
        return []
    out = []
    for group in refs.groups:
        refusing = [r for r in refs.of(group) if r.refuses]
        if not refusing:
            continue
        named = _counted(f"{r.kind} in {r.holder} ({r.lives})" for r in refusing)
        more = f" and {len(named) - SHOWN} more" if len(named) > SHOWN else ""
        renamed = [new for old, new in refs.renames if old == group]
        hint = (
            f" (probably renamed to {', '.join(renamed)}: they still name the old one)"
            if (renamed)
            else ""
        )
        # Every reference, not only those shown, decides the text (the reviewed force's key).
        every = hashlib.sha256("\n".join(sorted(named)).encode()).hexdigest()[:12]
        out.append(
            f"model group {group} would be left with no routes while {len(refusing)} "
            f"reference(s) on the proxy still name it{hint}: {'; '.join(named[:SHOWN])}{more} "
            f"(references {every}); "
            "requests through them would fail or change silently and fleet-sync never edits "
            "keys, teams or router settings: change them first, or --force required"
        )
    if refs.unread:
        out.append(
            f"the references to model group(s) {', '.join(refs.groups)}, which the plan leaves "
            f"with no routes, were not fully read ({'; '.join(refs.unread)}): the plan cannot "
            "show what still names them; fix the read (a proxy_admin_viewer key reads all of "
            "it), or --force required"
        )
    return out


def _counted(lines: Iterable[str]) -> list[str]:
    """Each line once, with how often it came (keys without an alias read alike)."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return [line if n == 1 else f"{line} (x{n})" for line, n in counts.items()]
