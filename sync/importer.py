"""live routes → fleet.yaml: `fleet-sync import` writes the file a proxy's database routes mean.

Routes are grouped by model_name; what every host of a model shares (provider, litellm_params,
model_info) is written once on the model, and what every model shares once in `defaults`. Host
names come from addresses (`10.0.0.1-8000`), so they are readable and the same on every import.
Which live values may be written at all is decided by provenance (sync/import_rules.py): a
string LiteLLM may have resolved from os.environ/ becomes an os.environ/FLEET_SYNC_IMPORT_...
placeholder, never its value; api_key LiteLLM never returns at all, so the file says so. What
fleet.yaml cannot express, or import cannot write safely, is left out, whole model groups at a
time, and said: with `owns: model_groups` a group in the file is claimed, and a route missing
from it would be pruned.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ruamel.yaml import YAML

from .credentials import has_userinfo, looks_like_credential, looks_secret
from .fleet import DEFAULT_PROVIDER, address_problem, normalise_address
from .import_rules import (
    Refused,
    credential_path,
    info_refusal,
    param_verdict,
    shows_address,
    without_userinfo,
)
from .litellm_owned import COST_MAP_FIELD, INFO_BOOKKEEPING, LITELLM_INFO, PARAM_DEFAULTS
from .render import Route, canonical_json

SCHEMA_LINE = "# yaml-language-server: $schema=schema/fleet.schema.json"
RESERVED = {"model", "api_base", "api_key"}
PLACEHOLDER_PREFIX = "FLEET_SYNC_IMPORT"
# fleet-sync's own tags (fleet_sync_fleet, _host, _digest, _source, ...), which fleet.yaml may
# not set. What LiteLLM adds to every route (an imported route was not written by fleet-sync, so
# it has no record of what was written, and the plan compares only that) is in litellm_owned.
TAG_PREFIX = "fleet_sync_"
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_ENV_UNSAFE = re.compile(r"[^A-Z0-9]+")


@dataclass(frozen=True)
class Placeholder:
    """An os.environ/ name import wrote instead of a live value; the user sets it in the proxy."""

    name: str
    model: str
    hosts: tuple[str, ...]  # the hosts whose litellm_params.<key> it stands for
    key: str
    hidden: bool  # LiteLLM masked the value (a credential) rather than listing it


@dataclass(frozen=True)
class Imported:
    text: str  # the fleet.yaml
    routes: int  # routes the file describes
    models: int
    left_out: tuple[str, ...]  # one line per route or group not imported, with why
    placeholders: tuple[Placeholder, ...]  # names the user must set in the proxy
    notes: tuple[str, ...]  # values changed on the way in (an address without its user:pass@)


@dataclass
class _Host:
    name: str
    api_base: str
    provider: str
    served_model: str
    params: dict[str, Any]
    info: dict[str, Any]
    # litellm_params keys to write as placeholders → a digest of the live value (equal digests
    # on every host of a model share one name), None where the value cannot be compared.
    pending: dict[str, str | None]
    stripped: bool  # api_base came with user:password@


def host_name(api_base: str) -> str:
    """`http://10.0.0.1:8000/v1` → `10.0.0.1-8000`; `https://abc-8000.proxy.runpod.net/v1` →
    `abc-8000.proxy.runpod.net`: the address, readable, in the characters a host name takes."""
    parts = urlsplit(api_base)
    name = (parts.hostname or "host").lower()
    if parts.port:
        name += f"-{parts.port}"
    return _NAME_UNSAFE.sub("-", name).strip("-._")[:63] or "host"


def _unique(hosts: list[_Host]) -> None:
    """Names unique within a model: two addresses that read alike get a hash of the address."""
    seen: dict[str, int] = {}
    for host in hosts:
        seen[host.name] = seen.get(host.name, 0) + 1
    for host in hosts:
        if seen[host.name] > 1:
            digest = hashlib.sha256(host.api_base.encode()).hexdigest()[:6]
            host.name = f"{host.name[:56]}-{digest}"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class _Names:
    """Placeholder names, unique over one import: two (model, host, key) that read alike get a
    hash of what they stand for."""

    def __init__(self) -> None:
        self._owner: dict[str, tuple[str, ...]] = {}

    def claim(self, *parts: str) -> str:
        base = _ENV_UNSAFE.sub("_", "_".join((PLACEHOLDER_PREFIX, *parts)).upper()).strip("_")
        name = base
        if self._owner.get(name, parts) != parts:
            name = f"{base}_{_digest(chr(0).join(parts))[:6].upper()}"
        self._owner[name] = parts
        return name


def _provider_and_model(route: Route) -> tuple[str, str] | None:
    model = route.litellm_params.get("model")
    if not isinstance(model, str) or not model:
        return None
    provider, sep, served = model.partition("/")
    if sep and re.fullmatch(r"[a-z0-9_]+", provider) and served:
        return provider, served
    return None


def _host(route: Route, fleet: str) -> _Host | str:
    """One route as a host, or why it cannot be one (never quoting a value that may be secret:
    a resolved reference can stand on any key, model and api_base included)."""
    split = _provider_and_model(route)
    if split is None:
        model = route.litellm_params.get("model")
        shown = "" if isinstance(model, str) and looks_like_credential(model) else f" {model!r}"
        return f"model{shown} has no provider prefix (provider/model)"
    api_base = route.api_base
    if api_base is None:
        return "no api_base (fleet.yaml gives every host an address)"
    stripped = has_userinfo(api_base)
    if stripped:
        api_base = without_userinfo(api_base)
    if problem := address_problem(api_base):
        return f"api_base {problem}" if shows_address(api_base) else "api_base is not an address"
    tagged = route.fleet == fleet and route.host
    name = route.host if tagged and route.host else host_name(api_base)
    params: dict[str, Any] = {}
    pending: dict[str, str | None] = {}
    for key in sorted(route.litellm_params):
        value = route.litellm_params[key]
        if (
            key in RESERVED
            or value is None
            or (key in PARAM_DEFAULTS and PARAM_DEFAULTS[key] == value)
        ):
            continue
        verdict = param_verdict(key, value)
        if isinstance(verdict, Refused):
            return verdict.reason
        if verdict == "keep":
            params[key] = value
        else:
            comparable = not looks_secret(key) and "*" not in value
            pending[key] = _digest(value) if comparable else None
    known = route.model_info.get("key") not in (None, route.litellm_params.get("model"))
    info = {
        k: v
        for k, v in sorted(route.model_info.items())
        if v is not None
        and k not in INFO_BOOKKEEPING
        and k not in LITELLM_INFO
        and not k.startswith(TAG_PREFIX)
        and not (known and COST_MAP_FIELD.match(k))
    }
    if refused := info_refusal(info):
        return refused.reason
    return _Host(name, api_base, split[0], split[1], params, info, pending, stripped)


def _placeholders(model: str, hosts: list[_Host], names: _Names) -> list[Placeholder]:
    """Write each pending value as os.environ/NAME: one name for the model when every host has
    the same live value, else one per host."""
    out: list[Placeholder] = []
    for key in sorted({k for h in hosts for k in h.pending}):
        digests = {h.pending.get(key, "") for h in hosts}
        if len(hosts) == 1 or (len(digests) == 1 and None not in digests):
            groups, per_host = [hosts], False
        else:
            groups, per_host = [[h] for h in hosts if key in h.pending], True
        for group in groups:
            name = names.claim(model, group[0].name, key) if per_host else names.claim(model, key)
            for host in group:
                host.params[key] = f"os.environ/{name}"
            hidden = any(h.pending[key] is None for h in group)
            out.append(Placeholder(name, model, tuple(h.name for h in group), key, hidden))
    return out


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


def _model(name: str, hosts: list[_Host], names: _Names) -> _Group | str:
    """A model entry from its hosts (shared values lifted), or why the group cannot be one."""
    served = {h.served_model for h in hosts}
    if any(looks_like_credential(s) for s in served):
        return "a served model looks like a credential (not shown)"
    if len(served) > 1:
        return f"its routes serve different models ({', '.join(sorted(served))})"
    addresses = [normalise_address(h.api_base) for h in hosts]
    if len(set(addresses)) < len(addresses):
        return "two of its routes point at the same address (a duplicate: decide which stays)"
    _unique(hosts)
    placeholders = _placeholders(name, hosts, names)
    entries: list[dict[str, Any]] = []
    for host in sorted(hosts, key=lambda h: h.name):
        entry: dict[str, Any] = {"name": host.name, "api_base": host.api_base}
        entry["provider"] = host.provider
        if host.params:
            entry["litellm_params"] = host.params
        if host.info:
            entry["model_info"] = host.info
        entries.append(entry)
    if path := credential_path(entries, "hosts"):
        return f"{path} looks like a credential (not written)"
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
    notes = [
        f"model {name} host {h.name}: api_base carried user:password@, written without it "
        "(give the host its credential as api_key: os.environ/NAME)"
        for h in hosts
        if h.stripped
    ]
    return _Group(model, placeholders, notes)


@dataclass(frozen=True)
class _Group:
    entry: dict[str, Any]
    placeholders: list[Placeholder]
    notes: list[str]


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
        if route.fleet not in (None, fleet):
            others[route.fleet or ""] = others.get(route.fleet or "", 0) + 1
            continue
        host = _host(route, fleet)
        if isinstance(host, str):
            problems.setdefault(route.model_name, []).append(f"{route.id}: {host}")
        else:
            groups.setdefault(route.model_name, []).append(host)
    left_out += [f"{n} route(s) tagged by fleet {name}" for name, n in sorted(others.items())]
    models: dict[str, dict[str, Any]] = {}
    placeholders: list[Placeholder] = []
    notes: list[str] = []
    names = _Names()
    for name in sorted(set(groups) | set(problems)):
        if name in problems:
            reasons = "; ".join(problems[name])
            left_out.append(f"model group {name} left out whole: {reasons}")
            continue
        group = _model(name, groups[name], names)
        if isinstance(group, str):
            left_out.append(f"model group {name} left out whole: {group}")
            continue
        models[name] = group.entry
        placeholders += group.placeholders
        notes += group.notes
    document = _document(fleet, models)
    count = sum(len(m["hosts"]) for m in models.values())
    text = _text(document, placeholders)
    return Imported(text, count, len(models), tuple(left_out), tuple(placeholders), tuple(notes))


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


def placeholder_warning(placeholder: Placeholder) -> str:
    """What the user must do for one placeholder, naming the variable, never the value."""
    hosts = ("host " if len(placeholder.hosts) == 1 else "hosts ") + ", ".join(placeholder.hosts)
    why = (
        "its key names a credential, which LiteLLM masks when it lists routes"
        if placeholder.hidden
        else "LiteLLM may have resolved it from an os.environ/ reference, so it may be a secret"
    )
    return (
        f"set {placeholder.name} in the proxy's environment before apply, to the value "
        f"litellm_params.{placeholder.key} of model {placeholder.model} ({hosts}) has now; "
        f"fleet.yaml refers to it as os.environ/{placeholder.name} and holds no copy ({why})"
    )


def _text(document: dict[str, Any], placeholders: Sequence[Placeholder]) -> str:
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold an address
    out = io.StringIO()
    yaml.dump(document, out)
    head = [
        SCHEMA_LINE,
        "# Written by `fleet-sync import` from the proxy's database routes. owns: model_groups",
        "# claims these groups: `fleet-sync plan` replaces each untagged route with a tagged",
        "# copy (LiteLLM keeps a route's id, so tagging means create, then delete).",
        "# LiteLLM never returns api_key: if these hosts need one, add",
        "# `api_key: os.environ/NAME` (defaults, model or host) before apply.",
    ]
    if placeholders:
        head += [
            "# Set in the proxy's environment before apply, each to the value its route has now",
            "# (import copies no string LiteLLM may have resolved from a secret, nor masked ones):",
        ]
        head += [f"#   {p.name}" for p in placeholders]
    return "\n".join(head) + "\n" + out.getvalue()
