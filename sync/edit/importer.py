"""live routes → fleet.yaml: `fleet-sync import` writes the file a proxy's database routes mean.

Routes are grouped by model_name; what every host of a model shares (provider, litellm_params,
model_info) is written once on the model, and what every model shares once in `defaults`. Host
names come from addresses (`10.0.0.1-8000`), so they are readable and the same on every import.

`plan` adopts an imported route in place: it PATCHes fleet-sync's tags onto it and sets only
what fleet.yaml sets, so whatever the file leaves out stays on the route as it is. Import uses
that: a value it cannot write safely (a string LiteLLM may have resolved from a secret, a masked
one, api_key, which LiteLLM never lists; sync/edit/import_rules.py decides) is left out of the file
and named in a comment above its model, never quoted. Only what fleet.yaml cannot express at all
leaves a whole model group out (and says why): with `owns: model_groups` a group in the file is
claimed, and a route missing from it would be pruned.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sync.core.addressing import never_written
from sync.core.render import UNSAFE_NAME_CHARACTERS, Route, canonical_json
from sync.edit.import_rules import info_verdict, param_verdict, shown_key, shows_address
from sync.edit.import_yaml import COMMENT_WIDTH, fleet_text, wrap
from sync.fleet.model import DEFAULT_PROVIDER, address_problem, normalise_address
from sync.fleet.plaintext import quote
from sync.fleet.text import surrogate
from sync.litellm.convergence import PRICING
from sync.litellm.owned import PARAM_DEFAULTS, bookkeeping, model_information, model_known
from sync.litellm.redirects import REDIRECTS, redirecting
from sync.litellm.teams import team_reason, team_scope
from sync.secrets.credentials import has_userinfo, looks_like_credential, may_quote
from sync.secrets.display import printable

RESERVED = {"model", "api_base", "api_key"}
# fleet-sync's own tags (fleet_sync_fleet, _host, _digest, _source, ...), which fleet.yaml may
# not set. What LiteLLM adds to every route (an imported route was not written by fleet-sync, so
# it has no record of what was written, and the plan compares only that) is in litellm_owned.
TAG_PREFIX = "fleet_sync_"
# Prices fleet.yaml takes in litellm_params only: LiteLLM copies them into the listed model_info.
PRICE_IN_INFO = "pricing in model_info, which fleet.yaml takes in litellm_params only"
# LiteLLM lists another route's model information on every route serving the same model.
SHARED_INFO = (
    "model information LiteLLM lists on every route serving this model, from any of them: "
    "import cannot tell this route's own"
)
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")
API_KEY_NOTE = (
    "api_key stays on each route as it is (LiteLLM never lists it); to manage it, add "
    "api_key: os.environ/NAME"
)
# Why a route whose requests go elsewhere than its api_base (sync/litellm/redirects.py) leaves its
# group out: fleet.yaml cannot say it, and adopting the route would remove it.
REDIRECTED = {
    "base_url": "litellm_params.base_url sends its requests to another address than api_base, "
    "which fleet.yaml cannot express: move it into api_base by hand, then import",
    "litellm_credential_name": "litellm_params.litellm_credential_name fills its keys from a "
    "LiteLLM credential (base_url included, which sends requests elsewhere than api_base), "
    "which fleet.yaml cannot express: set the credential's address as api_base and its key as "
    "api_key on the route by hand, then import",
    "custom_llm_provider": "litellm_params.custom_llm_provider overrides the provider of its "
    "model, which fleet.yaml cannot express: make it the model's prefix (provider/model) by "
    "hand, then import",
}
ADOPTION = (
    "`fleet-sync plan` adopts each route in place: it adds fleet-sync's tags by PATCH, keeping "
    "the route's id, api_key and everything fleet.yaml does not set"
)


@dataclass(frozen=True)
class Kept:
    """A live value import left out of fleet.yaml: its routes keep it, fleet.yaml does not
    manage it."""

    path: str  # litellm_params.organization (the key as shown_key shows it)
    hosts: tuple[str, ...]  # the hosts whose routes hold it; () for every host of the model
    why: str  # one of import_rules' reasons, never the value


@dataclass(frozen=True)
class Imported:
    text: str  # the fleet.yaml
    routes: int  # routes the file describes
    models: int
    left_out: tuple[str, ...]  # one line per route or group not imported, with why
    kept: Mapping[str, tuple[Kept, ...]]  # model → what stays on its routes unmanaged


@dataclass
class _Host:
    name: str
    api_base: str
    provider: str
    served_model: str
    params: dict[str, Any]
    info: dict[str, Any]
    kept: dict[str, str]  # path → why
    paused: bool = False  # LiteLLM's pause: written as `enabled: false`, so a plan keeps it


def host_name(api_base: str) -> str:
    """`http://10.0.0.1:8000/v1` → `10.0.0.1-8000`; `https://abc-8000.proxy.runpod.net/v1` →
    `abc-8000.proxy.runpod.net`: the address, readable, in the characters a host name takes."""
    parts = urlsplit(api_base)
    name = (parts.hostname or "host").lower()
    if parts.port:
        name += f"-{parts.port}"
    return UNSAFE_NAME_CHARACTERS.sub("-", name).strip("-._")[:63] or "host"


def _unique(hosts: list[_Host]) -> None:
    """Names unique within a model: two addresses that read alike get a hash of the address."""
    seen: dict[str, int] = {}
    for host in hosts:
        seen[host.name] = seen.get(host.name, 0) + 1
    for host in hosts:
        if seen[host.name] > 1:
            digest = hashlib.sha256(host.api_base.encode()).hexdigest()[:6]
            host.name = f"{host.name[:56]}-{digest}"


def _provider_and_model(route: Route) -> tuple[str, str] | None:
    model = route.litellm_params.get("model")
    if not isinstance(model, str) or not model:
        return None
    provider, sep, served = model.partition("/")
    if sep and re.fullmatch(r"[a-z0-9][a-z0-9_-]*", provider) and served:
        return provider, served
    return None


@dataclass(frozen=True)
class _No:
    """Why a route or a model group cannot be written (never quoting a value that may be
    secret: a resolved reference can stand on any key, model and api_base included)."""

    reason: str


def _address(route: Route) -> str | _No:
    """The route's api_base, or why fleet.yaml cannot take it."""
    api_base = route.api_base
    if api_base is None:
        return _No("no api_base (fleet.yaml gives every host an address)")
    if has_userinfo(api_base):
        return _No(
            "api_base carries user:password@, which fleet.yaml refuses and adopting the route "
            "would drop: move the credential into the route's api_key by hand, then import"
        )
    if problem := address_problem(api_base):
        shown = f"api_base {problem}" if shows_address(api_base) else "api_base is not an address"
        return _No(shown)
    if looks_like_credential(api_base):
        return _No("api_base looks like a credential (not shown)")
    return api_base


def _host(route: Route, fleet: str) -> _Host | _No:
    """One route as a host: what import writes, and what it leaves on the route and why."""
    split = _provider_and_model(route)
    if split is None:
        model = route.litellm_params.get("model")
        shown = "" if isinstance(model, str) and not may_quote(model) else f" {model!r}"
        return _No(f"model{shown} has no provider prefix (provider/model)")
    api_base = _address(route)
    if isinstance(api_base, _No):
        return api_base
    if redirects := redirecting(route.litellm_params, split[0]):
        return _No(REDIRECTED[redirects[0]])
    ours = route.fleet == fleet
    tagged = route.host if ours and route.host and _HOST_NAME.fullmatch(route.host) else None
    host = _Host(
        tagged or host_name(api_base), api_base, split[0], split[1], {}, {}, {}, route.paused
    )
    for key in sorted(route.litellm_params):
        value = route.litellm_params[key]
        if key in RESERVED or key in REDIRECTS or value is None:
            continue  # a custom_llm_provider left here is the model's prefix: implied
        if key in PARAM_DEFAULTS and PARAM_DEFAULTS[key] == value:
            continue  # LiteLLM's default, on every route
        if (leave := param_verdict(key, value)) is None:
            host.params[key] = value
        else:
            host.kept[f"litellm_params.{shown_key(key)}"] = leave.why
    info, priced, shared = _route_info(route)
    for key, value in info.items():
        if (leave := info_verdict(key, value)) is None:
            host.info[key] = value
        else:
            host.kept[f"model_info.{shown_key(key)}"] = leave.why
    for key in priced:
        host.kept[f"model_info.{shown_key(key)}"] = PRICE_IN_INFO
    for key in shared:
        host.kept[f"model_info.{shown_key(key)}"] = SHARED_INFO
    lost = _lost(route, host) if ours else None
    return host if lost is None else _No(lost)


def _route_info(route: Route) -> tuple[dict[str, Any], list[str], list[str]]:
    """The model_info its author set on the route; the keys of prices set there (not copied
    from litellm_params); and the fields of LiteLLM's model information it lists for a model
    its cost map does not know (maybe another route's: LiteLLM shares them among the routes
    of a model). Without LiteLLM's bookkeeping, its cost map's values, its copies of
    litellm_params prices, and fleet-sync's tags."""
    params = route.litellm_params
    known = model_known(route.model_info, params)
    info: dict[str, Any] = {}
    priced: list[str] = []
    shared: list[str] = []
    for key, value in sorted(route.model_info.items()):
        if value is None or bookkeeping(key) or key.startswith(TAG_PREFIX):
            continue
        if known and model_information(key):
            continue  # the cost map's, prices included
        if PRICING.search(key):
            if key not in params or canonical_json(params[key]) != canonical_json(value):
                priced.append(key)
        elif model_information(key):
            shared.append(key)
        else:
            info[key] = value
    return info, priced, shared


def _lost(route: Route, host: _Host) -> str | None:
    """For a route this fleet wrote: a path fleet-sync recorded writing that the file cannot
    carry, which a plan would then remove."""
    for path in sorted(route.written or {}):
        top = f"{path[0]}.{shown_key(path[1])}"
        if top == "litellm_params.api_key" or top in host.kept:
            why = host.kept.get(top, "LiteLLM never lists api_key")
            return (
                f"fleet-sync wrote {top} on these routes and import cannot write it back "
                f"({why}), so a plan would remove it: keep the fleet.yaml that wrote them"
            )
    return None


def _shared(sections: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The key/value pairs every section has, equal everywhere."""
    if not sections:
        return {}
    first = sections[0]
    return {
        k: v
        for k, v in first.items()
        if all(k in s and canonical_json(s[k]) == canonical_json(v) for s in sections[1:])
    }


def _lift(entries: Sequence[dict[str, Any]], field: str) -> dict[str, Any]:
    """Move what every entry's `field` shares out of them; return it."""
    shared = _shared([e.get(field, {}) for e in entries])
    for entry in entries:
        rest = {k: v for k, v in entry.get(field, {}).items() if k not in shared}
        if rest:
            entry[field] = rest
        else:
            entry.pop(field, None)
    return shared


@dataclass(frozen=True)
class _Group:
    entry: dict[str, Any]
    kept: tuple[Kept, ...]


def _model(hosts: list[_Host]) -> _Group | _No:
    """A model entry from its hosts (shared values lifted), or why the group cannot be one."""
    served = {h.served_model for h in hosts}
    if any(looks_like_credential(s) for s in served):
        return _No("a served model looks like a credential (not shown)")
    if any(surrogate(s) for s in served):
        return _No("a served model holds a lone surrogate, which fleet.yaml cannot hold")
    if len(served) > 1:
        return _No(f"its routes serve different models ({', '.join(sorted(served))})")
    addresses = [normalise_address(h.api_base) for h in hosts]
    if len(set(addresses)) < len(addresses):
        return _No("two of its routes point at the same address (a duplicate: decide which stays)")
    _unique(hosts)
    entries: list[dict[str, Any]] = []
    for host in sorted(hosts, key=lambda h: h.name):
        entry: dict[str, Any] = {"name": host.name, "api_base": host.api_base}
        entry["provider"] = host.provider
        if host.params:
            entry["litellm_params"] = host.params
        if host.info:
            entry["model_info"] = host.info
        if host.paused:
            entry["enabled"] = False
        entries.append(entry)
    model: dict[str, Any] = {"served_model": served.pop()}
    providers = {e["provider"] for e in entries}
    if len(providers) == 1:
        model["provider"] = providers.pop()
        for entry in entries:
            del entry["provider"]
    for field in ("litellm_params", "model_info"):
        if shared := _lift(entries, field):
            model[field] = shared
    model["hosts"] = entries
    return _Group(model, _kept(hosts))


def _kept(hosts: Sequence[_Host]) -> tuple[Kept, ...]:
    out = []
    for path in sorted({p for h in hosts for p in h.kept}):
        holders = [h for h in hosts if path in h.kept]
        every = len(holders) == len(hosts)
        names = () if every else tuple(sorted(h.name for h in holders))
        out.append(Kept(path, names, "; ".join(sorted({h.kept[path] for h in holders}))))
    return tuple(out)


def _named(route: Route) -> str:
    """A route as a message names it: the proxy's strings, printable and bounded."""
    return f"{printable(route.model_name[:128])} ({printable(route.id[:128])})"


def import_fleet(routes: Iterable[Route], fleet: str, only: Sequence[str] = ()) -> Imported:
    """The fleet.yaml for these live routes (only the model groups named in `only`, if any)."""
    left_out: list[str] = []
    others: dict[str, int] = {}
    groups: dict[str, list[_Host]] = {}
    problems: dict[str, list[str]] = {}
    for route in routes:
        if only and route.model_name not in only:
            continue
        if not route.db_model:
            left_out.append(f"{route.model_name} ({route.id}): config-file route (db_model false)")
            continue
        if (team := team_scope(route.model_name, route.model_info)) is not None:
            left_out.append(f"{_named(route)}: {team_reason(team)}; not imported")
            continue
        if route.fleet not in (None, fleet):
            others[route.fleet or ""] = others.get(route.fleet or "", 0) + 1
            continue
        if unwritable := never_written(route.id):  # plan would ignore it: no host of fleet.yaml
            left_out.append(f"{route.model_name}: {unwritable}")
            continue
        host = _host(route, fleet)
        if isinstance(host, _No):
            problems.setdefault(route.model_name, []).append(f"{route.id}: {host.reason}")
        else:
            groups.setdefault(route.model_name, []).append(host)
    left_out += [f"{n} route(s) tagged by fleet {name}" for name, n in sorted(others.items())]
    models: dict[str, dict[str, Any]] = {}
    kept: dict[str, tuple[Kept, ...]] = {}
    for name in sorted(set(groups) | set(problems)):
        group = _No("; ".join(problems[name])) if name in problems else _model(groups[name])
        shown = name
        if not _MODEL_NAME.fullmatch(name):
            shown = quote(name[:128])
            group = _No("its name is not one fleet.yaml takes (letters, digits and ._:/@+-)")
        if isinstance(group, _No):
            left_out.append(f"model group {shown} left out whole: {group.reason}")
            continue
        models[name] = group.entry
        if group.kept:
            kept[name] = group.kept
    count = sum(len(m["hosts"]) for m in models.values())
    comments = {name: kept_comment(items) for name, items in kept.items()}
    text = fleet_text(_document(fleet, models), comments)
    return Imported(text, count, len(models), tuple(left_out), kept)


def _document(fleet: str, models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    entries = list(models.values())
    providers = {m.get("provider") for m in entries}
    if len(entries) > 1 and len(providers) == 1 and None not in providers:
        defaults["provider"] = providers.pop()
        for model in entries:
            del model["provider"]
    if len(entries) > 1:
        for field in ("litellm_params", "model_info"):
            if shared := _lift(entries, field):
                defaults[field] = shared
    if defaults.get("provider") == DEFAULT_PROVIDER:
        del defaults["provider"]  # the default anyway
    document: dict[str, Any] = {"version": 1, "fleet": fleet, "owns": "model_groups"}
    if defaults:
        document["defaults"] = defaults
    document["models"] = {
        name: {k: model[k] for k in _ORDER if k in model} for name, model in models.items()
    }
    return document


_ORDER = ("served_model", "provider", "litellm_params", "model_info", "hosts")


def _holders(kept: Kept) -> str:
    if not kept.hosts:
        return "every host"
    return ("host " if len(kept.hosts) == 1 else "hosts ") + ", ".join(kept.hosts)


def kept_comment(kept: Sequence[Kept]) -> list[str]:
    """The comment above a model in the file: what its routes keep, unmanaged."""
    lines = wrap(
        "Kept on the live routes as they are, not managed by this file (import cannot write "
        "them safely; plan leaves alone what the file does not set):",
        width=COMMENT_WIDTH,
    )
    for item in kept:
        lines += wrap(f"  {item.path} ({_holders(item)}): {item.why}", "      ", COMMENT_WIDTH)
    return [*lines, "To manage one, add it here, a secret as os.environ/NAME (set in the proxy)."]


def kept_warning(model: str, kept: Sequence[Kept]) -> str:
    """The stderr line for a model whose routes keep values fleet.yaml does not manage."""
    items = "; ".join(f"{k.path} ({_holders(k)}: {k.why})" for k in kept)
    one = len(kept) == 1
    return (
        f"model {model}: {items} "
        + ("stays on the live routes as it is" if one else "stay on the live routes as they are")
        + ", not in fleet.yaml (import cannot write "
        + ("it" if one else "them")
        + " safely); to manage "
        + ("it" if one else "one")
        + ", add it to fleet.yaml, a secret as os.environ/NAME"
    )
