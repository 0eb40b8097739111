"""Matching what the live edge read (sync/core/references.py Holdings) and the routes the
router lists (Plan.links) against the model groups a plan leaves without routes: each
Reference with what removing the group does to requests, refused or only warned. Pure."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import replace

from sync.core.plan import Plan, Update
from sync.core.references import (
    DATABASE,
    FALLBACK_KINDS,
    ROUTER,
    Fallback,
    Holder,
    Holdings,
    Reference,
    References,
    RouterSettings,
    renames,
    vanishing,
)
from sync.core.render import Route

INVALID = "fail (400 invalid model name)"
# A group whose routes are all paused keeps its name: LiteLLM answers 403 "Model is blocked".
BLOCKED = "fail (403 Model is blocked: every route of it is paused)"


def find(
    groups: Iterable[str],
    holdings: Holdings,
    listed: Iterable[str] = (),
    links: Iterable[tuple[str, str, str]] = (),
) -> tuple[Reference, ...]:
    """Every reference in `holdings` and `links` (Plan.links) to one of `groups`; `listed`
    (the router's groups) for the wildcard routes that may serve a vanished name."""
    wanted = tuple(groups)
    links = tuple(links)
    out: list[Reference] = []
    for group in wanted:
        out += _linked(group, links, set(wanted), holdings.holders)
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
                    f"requests for {alias} {INVALID}",
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
        effect = f"its requests for {group} {INVALID}" + (
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
                    f"its requests for {alias} {INVALID}",
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
    paused = {c.model_name for c in plan.changes if isinstance(c, Update) and c.pause is True}
    found = tuple(
        replace(r, effect=r.effect.replace(INVALID, BLOCKED)) if r.group in paused else r
        for r in find(groups, holdings, listed, plan.links)
    )
    return References(
        groups=groups,
        found=found,
        renames=renames(plan, groups),
        unread=holdings.unread,
        unchecked=holdings.unchecked,
    )


# A strategy router's models LiteLLM reads from its litellm_params (router_utils/
# auto_router_model_naming.py, 1.108.7): the scalar ones; models inside its config (a JSON
# string, tiers, pools) are not read.
STRATEGY_MODELS = (
    "auto_router_default_model",
    "auto_router_embedding_model",
    "complexity_router_default_model",
    "quality_router_default_model",
)
ACCESS_GROUPS = "access_groups"
ROUTE_PARAMS = "a route's litellm_params"


def route_links(routes: Iterable[Route]) -> tuple[tuple[str, str, str], ...]:
    """(field, holder, group) for what listed routes name: a strategy router (`auto_router/...`)
    its models, a route its model access groups (model_info.access_groups: holder the access
    group, group the route's model group)."""
    out: set[tuple[str, str, str]] = set()
    for route in routes:
        model = route.litellm_params.get("model")
        if isinstance(model, str) and model.startswith("auto_router/"):
            for key in STRATEGY_MODELS:
                value = route.litellm_params.get(key)
                if isinstance(value, str) and value:
                    out.add((key, route.model_name, value))
        names = route.model_info.get(ACCESS_GROUPS)
        for name in names if isinstance(names, list) else ():
            if isinstance(name, str):
                out.add((ACCESS_GROUPS, name, route.model_name))
    return tuple(sorted(out))


def _linked(
    group: str,
    links: tuple[tuple[str, str, str], ...],
    gone: set[str],
    holders: tuple[Holder, ...],
) -> list[Reference]:
    out = [
        Reference(
            group,
            "strategy router model",
            f"group {holder}",
            ROUTE_PARAMS,
            f"its {field} is {group}: what it sends there fails",
            True,
        )
        for field, holder, target in links
        if field != ACCESS_GROUPS and target == group and holder not in gone
    ]
    for name in sorted({h for f, h, t in links if f == ACCESS_GROUPS and t == group}):
        left = {t for f, h, t in links if f == ACCESS_GROUPS and h == name} - gone
        users = [f"{h.kind} {h.name}" for h in holders if name in h.models]
        if left:
            effect = f"model access group {name} no longer includes {group}"
        elif users:
            effect = (
                f"model access group {name} loses its last model group: "
                f"{', '.join(users[:4])}{' and more' if len(users) > 4 else ''} "
                "given it fail closed"
            )
        else:
            effect = f"model access group {name} is left empty (no key or team lists it)"
        refuses = not left and bool(users)
        out.append(
            Reference(
                group,
                "model access group",
                f"access group {name}",
                "routes' model_info",
                effect,
                refuses,
            )
        )
    return out
