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

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sync.core.changes import Create, Delete

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
    where the plan deletes a listed route of the group (creates of the same plan, foreign and
    config-file routes counted: they are in live_groups). An ordinary plan has none, and then
    nothing more is read from the proxy."""
    listed = dict(plan.live_groups)
    after = served_after(plan)
    pruned = {c.model_name for c in plan.changes if isinstance(c, Delete) and c.listed}
    return tuple(sorted(g for g in pruned if g in listed and after.get(g, 0) <= 0))


def renames(plan: Plan, groups: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(removed, created): a group the plan leaves without routes beside a group the plan
    creates (the router does not list it now): most likely a rename, whose references stay
    behind on the old name."""
    listed = dict(plan.live_groups)
    created = sorted({c.model_name for c in plan.changes if isinstance(c, Create)} - set(listed))
    return tuple((old, new) for old in groups for new in created)


# -- matching ------------------------------------------------------------------------------


def find(
    groups: Iterable[str], holdings: Holdings, listed: Iterable[str] = ()
) -> tuple[Reference, ...]:
    """Every reference in `holdings` to one of `groups`; `listed` (the router's groups) for
    the wildcard routes that may serve a vanished name."""
    wanted = tuple(groups)
    out: list[Reference] = []
    for group in wanted:
        if holdings.router is not None:
            out += _router(group, holdings.router)
        for holder in holdings.holders:
            out += _holder(group, holder)
        for name, models in holdings.access_groups:
            if group in models:
                out.append(_access_group(group, name, models))
        out += _wildcards(group, [g for g in listed if g not in wanted])
    return tuple(out)


def _router(group: str, router: RouterSettings) -> list[Reference]:
    out: list[Reference] = []
    for rule in router.fallbacks:
        out += _fallback(group, rule, "router", router.lives(rule.kind))
    for alias, target in router.aliases:
        if target == group:
            out.append(
                Reference(
                    group,
                    "model_group_alias",
                    f"alias {alias}",
                    router.lives("model_group_alias"),
                    f"requests for {alias} fail (400 invalid model name)",
                    True,
                )
            )
    for name, members in router.routing_groups:
        if group in members:
            rest = len([m for m in members if m != group])
            effect = f"routing group {name} loses {group}" + (
                f"; {rest} other group(s) take its share" if rest else "; nothing is left in it"
            )
            out.append(
                Reference(
                    group,
                    "routing group",
                    f"routing group {name}",
                    router.lives("routing_groups"),
                    effect,
                    True,
                )
            )
    return out


def _fallback(group: str, rule: Fallback, owner: str, lives: str) -> list[Reference]:
    kind = FALLBACK_KINDS.get(rule.kind, rule.kind)
    where = f"group {rule.source}" if rule.source != "*" else "the default (*)"
    holder = where if owner == "router" else f"{owner}, {where}"
    if group in rule.targets:
        rest = [t for t in rule.targets if t != group]
        then = f"; it tries {', '.join(rest)} instead" if rest else "; the client sees its error"
        effect = f"failover of {where} to {group} stops silently{then}"
        return [Reference(group, kind, holder, lives, effect, True)]
    if rule.source == group:
        effect = f"the fallbacks of {group} go stale (nothing requests it any more)"
        return [Reference(group, kind, holder, lives, effect, False)]
    return []


def _holder(group: str, holder: Holder) -> list[Reference]:
    who = f"{holder.kind} {holder.name}"
    out: list[Reference] = []
    if group in holder.models:
        only = len(holder.models) == 1
        effect = f"its requests for {group} fail (400 invalid model name)" + (
            "; it is the only model listed, so the key can call nothing"
            if only and holder.kind == "key"
            else "; it is the only model listed, so the team can call nothing"
            if only
            else ""
        )
        out.append(Reference(group, f"{holder.kind} models", who, DATABASE, effect, True))
    for alias, target in holder.aliases:
        if target == group:
            out.append(
                Reference(
                    group,
                    f"{holder.kind} model alias",
                    who,
                    DATABASE,
                    f"its requests for {alias} fail (400 invalid model name)",
                    True,
                )
            )
    for source, targets in holder.budget_fallbacks:
        if group in targets:
            effect = f"once its budget for {source} is spent, it no longer falls back to {group}"
            out.append(Reference(group, "budget fallback", who, DATABASE, effect, True))
        elif source == group:
            out.append(
                Reference(
                    group,
                    "budget fallback",
                    who,
                    DATABASE,
                    f"its budget fallbacks of {group} go stale",
                    False,
                )
            )
    if group in holder.budgets:
        out.append(
            Reference(
                group, "model budget", who, DATABASE, f"its budget for {group} goes stale", False
            )
        )
    if group in holder.limits:
        out.append(
            Reference(
                group,
                "model limit",
                who,
                DATABASE,
                f"its rpm/tpm limits for {group} go stale",
                False,
            )
        )
    for rule in holder.fallbacks:
        out += _fallback(group, rule, who, DATABASE)
    return out


def _access_group(group: str, name: str, models: tuple[str, ...]) -> Reference:
    last = all(m == group for m in models)
    effect = f"keys and teams given access group {name} lose {group}" + (
        "; it was its last model group, so the access group grants nothing (fails closed)"
        if last
        else ""
    )
    return Reference(group, "access group", f"access group {name}", DATABASE, effect, True)


def _wildcards(group: str, listed: Iterable[str]) -> list[Reference]:
    """A wildcard route group (`*`, `openai/*`) the router keeps may serve the vanished name
    with its own credentials: LiteLLM matches a request it has no group for against them."""
    return [
        Reference(
            group,
            "wildcard route",
            f"group {pattern}",
            ROUTER,
            f"requests for {group} may be served by {pattern}'s routes, with their "
            "credentials, instead of failing",
            False,
        )
        for pattern in sorted(set(listed))
        if "*" in pattern and fnmatch.fnmatchcase(group, pattern)
    ]


def collect(plan: Plan, holdings: Holdings) -> References:
    """The References of `plan` from what the live edge read."""
    groups = vanishing(plan)
    listed = [g for g, _ in plan.live_groups]
    return References(
        groups=groups,
        found=find(groups, holdings, listed),
        renames=renames(plan, groups),
        unread=holdings.unread,
        unchecked=holdings.unchecked,
    )


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
        out.append(
            f"model group {group} would be left with no routes while {len(refusing)} "
            f"reference(s) on the proxy still name it{hint}: {'; '.join(named[:SHOWN])}{more}; "
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
