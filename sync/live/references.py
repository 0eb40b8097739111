"""The read of what still names a model group a plan leaves without routes (issue 26), only
for such a plan: `with_references(client, plan)` is the one call a run makes after the plan.

Every request is a GET a `proxy_admin_viewer` key may send (LiteLLM 1.98.1-1.110.2: a GET is
read-parity for that role, route_checks._check_proxy_admin_viewer_access; /v1/access_group
and /v2/team/list check "admin view" themselves): GET /router/settings (fallbacks of every
kind, model_group_alias, routing groups and, from 1.108, where each comes from), GET
/v1/access_group (unified access groups), every page of GET /key/list and GET /v2/team/list
(100 a page, LiteLLM's largest): 2 + ceil(keys/100) + ceil(teams/100) reads.

These answers carry other secrets (router settings hold the cache's password, keys their
hashes): only the fields below are taken, nothing of a body is logged or kept, keys are named
by alias, never by token. What cannot be read fully (a page that fails, a cap reached, a shape
not understood) is said in `unread` and refused like any unread data; what no API of the
release shows is said in `unchecked` ("not checkable"), never pretended.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from sync.core.plan import Plan
from sync.core.reference_match import collect
from sync.core.references import (
    CONFIG_FILE,
    DATABASE,
    FALLBACK_KINDS,
    UNSAID,
    Fallback,
    Holder,
    Holdings,
    RouterSettings,
    vanishing,
)
from sync.live.client import LiteLLMClient
from sync.live.errors import ErrorKind, ProxyError
from sync.secrets.display import printable
from sync.untrusted.json_parser import parse_json

T = TypeVar("T")
PAGE = 100  # /key/list and /v2/team/list refuse a larger page (le=100, 1.98.1-1.110.2)
MAX_PAGES = 1000  # 100,000 keys or teams; past that the read is "not fully read"
CONSISTENT_READS = 3  # a listing whose count moves between pages is read again, then unread
NAME = 64  # characters of a proxy's name a plan shows

# Kinds no LiteLLM 1.98.1-1.110.2 API shows, or that fleet-sync does not read yet.
NOT_CHECKABLE = (
    "litellm_settings.model_alias_map and litellm_settings.default_fallbacks (the config "
    "file's; LiteLLM has no read API for them)",
    "models named inside a strategy router's config (auto_router_config, tiers, pools): not "
    "read; its default and embedding models are",
)
SOURCES = {"config": CONFIG_FILE, "db": DATABASE}


class Unread(Exception):
    """Why one kind of reference could not be read fully (said in the plan, then refused)."""


def with_references(client: LiteLLMClient, plan: Plan) -> Plan:
    """The plan with what still names the groups it leaves without routes; the plan itself
    when it leaves none (and then not one request is sent)."""
    if not vanishing(plan):
        return plan
    return replace(plan, references=collect(plan, read_holdings(client)))


def read_holdings(client: LiteLLMClient) -> Holdings:
    unread: list[str] = []
    unchecked: list[str] = list(NOT_CHECKABLE)

    def attempt(what: str, read: Callable[[], T]) -> T | None:
        """What `read` returns; None, with the reason said, where the release has no such
        endpoint ("not checkable": `what`) or the read failed ("references not fully read")."""
        try:
            return read()
        except _Missing as exc:
            unchecked.insert(0, f"{what} ({exc})")
        except Unread as exc:
            unread.append(str(exc))
        return None

    router = attempt(
        "router fallbacks, aliases and routing groups",
        lambda: router_settings(_get(client, "/router/settings", {})),
    )
    holders = [
        *(attempt("keys", lambda: _keys(client)) or ()),
        *(attempt("teams", lambda: _teams(client)) or ()),
    ]
    groups = attempt(
        "unified access groups", lambda: access_groups(_get(client, "/v1/access_group", {}))
    )
    return Holdings(router, tuple(holders), tuple(groups or ()), tuple(unread), tuple(unchecked))


class _Missing(Unread):
    """The release has no such endpoint (404): "not checkable", not unread."""


def _get(client: LiteLLMClient, path: str, params: Mapping[str, str | int]) -> Any:
    try:
        return client.read_json(path, params)
    except ProxyError as exc:
        if exc.status == 404 and exc.kind is ErrorKind.NOT_FOUND:
            raise _Missing(f"GET {path}: not in this LiteLLM") from None
        raise Unread(f"GET {path}: {printable(str(exc))[:200]}") from None


def _pages(client: LiteLLMClient, path: str, params: Mapping[str, Any], shape: _Page) -> list[Any]:
    """Every entry of a paged listing, read again while its count moves between pages."""
    problem = ""
    for _ in range(CONSISTENT_READS):
        entries: list[Any] = []
        page, pages, total = 1, 1, -1
        while page <= pages:
            data = _get(client, path, {**params, shape.page: page, shape.size: PAGE})
            items, count = shape.read(data, path, page)
            if total not in (-1, count):
                problem = f"GET {path}: the count moved from {total} to {count} between pages"
                break
            total, pages = count, math.ceil(count / PAGE)
            if pages > MAX_PAGES:
                raise Unread(f"GET {path}: {count} entries, over the {MAX_PAGES * PAGE} read")
            entries += items
            page += 1
        else:
            if len(entries) == total:
                return entries
            problem = f"GET {path}: {len(entries)} entries read, its count says {total}"
    raise Unread(f"{problem} ({CONSISTENT_READS} reads)")


class _Page:
    def __init__(self, items: str, count: str, page: str, size: str) -> None:
        self.items, self.count, self.page, self.size = items, count, page, size

    def read(self, data: Any, path: str, page: int) -> tuple[list[Any], int]:
        if not isinstance(data, dict) or not isinstance(data.get(self.items), list):
            raise Unread(f"GET {path} page {page}: the answer has no {self.items} list")
        count = data.get(self.count)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise Unread(f"GET {path} page {page}: {self.count} is not a whole number")
        return data[self.items], count


KEYS = _Page("keys", "total_count", "page", "size")
TEAMS = _Page("teams", "total", "page", "page_size")


def _keys(client: LiteLLMClient) -> list[Holder]:
    entries = _pages(client, "/key/list", {"return_full_object": "true"}, KEYS)
    return [holder("key", e, "key_alias", i) for i, e in enumerate(entries)]


def _teams(client: LiteLLMClient) -> list[Holder]:
    return [holder("team", e, "team_alias", i) for i, e in enumerate(
        _pages(client, "/v2/team/list", {}, TEAMS)
    )]  # fmt: skip


# -- shapes --------------------------------------------------------------------------------


def holder(kind: str, entry: Any, alias_field: str, index: int) -> Holder:
    """A key or a team from its listing entry: only the fields that may name a group."""
    if not isinstance(entry, dict):
        raise Unread(f"{kind} {index} of the listing is not an object")
    name = _name(kind, entry, alias_field)
    where = f"{kind} {name}"
    metadata = _mapping(entry.get("metadata"), f"{where}: metadata")
    table = _mapping(entry.get("litellm_model_table"), f"{where}: litellm_model_table")
    aliases = {
        **_mapping(entry.get("aliases"), where),
        **_mapping(_json_text(table.get("model_aliases"), where), f"{where}: model_aliases"),
    }
    limits = {
        *_mapping(metadata.get("model_rpm_limit"), where),
        *_mapping(metadata.get("model_tpm_limit"), where),
    }
    settings = _mapping(entry.get("router_settings"), f"{where}: router_settings")
    return Holder(
        kind=kind,
        name=name,
        models=_names(entry.get("models"), f"{where}: models"),
        aliases=tuple(_alias(a, v, where) for a, v in aliases.items()),
        budget_fallbacks=tuple(
            (source, _names(targets, f"{where}: budget_fallbacks"))
            for source, targets in _mapping(entry.get("budget_fallbacks"), where).items()
        ),
        budgets=tuple(_mapping(entry.get("model_max_budget"), where)),
        limits=tuple(sorted(limits)),
        fallbacks=_fallbacks(settings, where),
    )


def _name(kind: str, entry: Mapping[str, Any], alias_field: str) -> str:
    """A key by its alias (never its token); a team by its alias, else its id."""
    alias = entry.get(alias_field)
    if isinstance(alias, str) and alias:
        return printable(alias)[:NAME]
    team = entry.get("team_id")
    if kind == "team" and isinstance(team, str) and team:
        return f"id {printable(team)[:NAME]}"
    return "without an alias" + (
        f" (team {printable(team)[:NAME]})" if isinstance(team, str) else ""
    )


def router_settings(data: Any) -> RouterSettings:
    if not isinstance(data, dict) or not isinstance(data.get("current_values"), dict):
        raise Unread("GET /router/settings: the answer has no current_values object")
    values: dict[str, Any] = data["current_values"]
    said = data.get("source")
    sources = {
        k: SOURCES.get(v, UNSAID)
        for k, v in (said.items() if isinstance(said, dict) else ())
        if isinstance(v, str)
    }
    groups = []
    for entry in _list(values.get("routing_groups"), "router routing_groups"):
        if not isinstance(entry, dict) or not isinstance(entry.get("group_name"), str):
            raise Unread("GET /router/settings: a routing group has no group_name")
        groups.append((entry["group_name"], _names(entry.get("models"), "routing group models")))
    aliases = _mapping(values.get("model_group_alias"), "router model_group_alias")
    return RouterSettings(
        fallbacks=_fallbacks(values, "router"),
        aliases=tuple(_alias(a, v, "router") for a, v in aliases.items()),
        routing_groups=tuple(groups),
        sources=sources,
    )


def access_groups(data: Any) -> list[tuple[str, tuple[str, ...]]]:
    if not isinstance(data, list):
        raise Unread("GET /v1/access_group: the answer is not a list")
    out = []
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("access_group_name"), str):
            raise Unread("GET /v1/access_group: an entry has no access_group_name")
        name = printable(entry["access_group_name"])[:NAME]
        out.append((name, _names(entry.get("access_model_names"), f"access group {name}")))
    return out


def _fallbacks(values: Mapping[str, Any], where: str) -> tuple[Fallback, ...]:
    """Fallback rules as LiteLLM keeps them: a list of {source: [target, ...]}, a target a
    group name or {"model": name, ...}."""
    out = []
    for kind in FALLBACK_KINDS:
        for rule in _list(values.get(kind), f"{where} {kind}"):
            if not isinstance(rule, dict):
                raise Unread(f"{where} {kind}: a rule is not an object")
            for source, targets in rule.items():
                names = []
                for t in _list(targets, f"{where} {kind}"):
                    name = t.get("model") if isinstance(t, dict) else t
                    if not isinstance(name, str):
                        raise Unread(f"{where} {kind}: a fallback of {source} names no group")
                    names.append(name)
                out.append(Fallback(kind, source, tuple(names)))
    # router_settings.default_fallbacks: the router serves it as fallbacks' "*" rule, and a
    # settings answer may show it under its own key (a config file setting both).
    defaults = values.get("default_fallbacks")
    if defaults is not None:
        out.append(Fallback("fallbacks", "*", _names(defaults, f"{where} default_fallbacks")))
    return tuple(out)


def _alias(alias: str, value: Any, where: str) -> tuple[str, str]:
    """model_group_alias / aliases: alias -> group, or {"model": group, "hidden": ...}."""
    target = value.get("model") if isinstance(value, dict) else value
    if not isinstance(target, str):
        raise Unread(f"{where}: alias {printable(alias)[:NAME]} names no group")
    return alias, target


def _json_text(value: Any, where: str) -> Any:
    """A team's model_aliases LiteLLM may keep as JSON text (LiteLLM_ModelTable: str | dict)."""
    if not isinstance(value, str):
        return value
    try:
        return parse_json(value.encode())
    except ValueError:
        raise Unread(f"{where}: model_aliases is text that is not JSON") from None


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Unread(f"{where}: not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Unread(f"{where}: not a list")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    items = _list(value, where)
    if not all(isinstance(i, str) for i in items):
        raise Unread(f"{where}: not a list of names")
    return tuple(items)
