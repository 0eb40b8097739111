"""live routes → fleet.yaml: `fleet-sync import` writes the file a proxy's database routes mean.

Routes are grouped by model_name; what every host of a model shares (provider, litellm_params,
model_info) is written once on the model, and what every model shares once in `defaults`. Host
names come from addresses (`10.0.0.1-8000`), so they are readable and the same on every import.
Credentials LiteLLM returns (masked or not) become os.environ/NAME placeholders; api_key it never
returns at all, so the file says so. What fleet.yaml cannot express is left out, whole model
groups at a time, and said: with `owns: model_groups` a group in the file is claimed, and a
route missing from it would be pruned.
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

from .credentials import is_reference, looks_secret
from .fleet import DEFAULT_PROVIDER, address_problem, normalise_address
from .normalise import clean_info, clean_params
from .render import TAG_DIGEST, TAG_FLEET, TAG_HOST, Route, canonical_json

SCHEMA_LINE = "# yaml-language-server: $schema=schema/fleet.schema.json"
RESERVED = {"model", "api_base", "api_key"}
# model_info LiteLLM maintains itself, whatever the route.
LITELLM_INFO = {"id", "key", "litellm_provider", "supported_openai_params", TAG_FLEET, TAG_HOST}
LITELLM_INFO.add(TAG_DIGEST)
# Fields LiteLLM fills in from its cost map (context window, prices, capabilities) when it knows
# the model; for a model it knows they are its values, not the route's.
COST_MAP_FIELD = re.compile(
    r"^(mode|max_(input_|output_)?tokens|.*cost.*|.*_per_.*|supports_.*|tpm|rpm|"
    r"output_vector_size|tiered_pricing|source|deprecation_date|metadata)$"
)
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_ENV_UNSAFE = re.compile(r"[^A-Z0-9]+")


@dataclass(frozen=True)
class Imported:
    text: str  # the fleet.yaml
    routes: int  # routes the file describes
    models: int
    left_out: tuple[str, ...]  # one line per route or group not imported, with why
    placeholders: tuple[str, ...]  # os.environ names the user must set in the proxy


@dataclass
class _Host:
    name: str
    api_base: str
    provider: str
    served_model: str
    params: dict[str, Any]
    info: dict[str, Any]


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


def _env_name(*parts: str) -> str:
    return _ENV_UNSAFE.sub("_", "_".join(parts).upper()).strip("_")


def _nested_credential(params: dict[str, Any], path: str = "") -> str | None:
    """The path of a credential inside a nested litellm_param (extra_headers.Authorization)."""
    for key, value in params.items():
        here = f"{path}.{key}" if path else str(key)
        if path and looks_secret(str(key)) and not is_reference(value):
            return here
        if isinstance(value, dict) and (found := _nested_credential(value, here)):
            return found
    return None


def _reference(value: Any, path: tuple[str, ...], found: list[str]) -> Any:
    if not isinstance(value, str) or is_reference(value):
        return value
    name = _env_name(*path)
    found.append(name)
    return f"os.environ/{name}"


def _provider_and_model(route: Route) -> tuple[str, str] | None:
    model = route.litellm_params.get("model")
    if not isinstance(model, str) or not model:
        return None
    provider, sep, served = model.partition("/")
    if sep and re.fullmatch(r"[a-z0-9_]+", provider) and served:
        return provider, served
    return None


def _host(route: Route, fleet: str, found: list[str]) -> _Host | str:
    """One route as a host, or why it cannot be one."""
    split = _provider_and_model(route)
    if split is None:
        model = route.litellm_params.get("model")
        return f"model {model!r} has no provider prefix (provider/model)"
    api_base = route.api_base
    if api_base is None:
        return "no api_base (fleet.yaml gives every host an address)"
    if problem := address_problem(api_base):
        return f"api_base {problem}"
    tagged = route.fleet == fleet and route.host
    name = route.host if tagged and route.host else host_name(api_base)
    prefix = (route.model_name, name)
    raw = {k: v for k, v in route.litellm_params.items() if k not in RESERVED}
    if nested := _nested_credential(raw):
        # LiteLLM resolves os.environ/ only in top-level litellm_params, and fleet.yaml refuses
        # a written-out credential: a placeholder here would be sent as the header's value.
        return f"a credential inside litellm_params.{nested} cannot be written as a reference"
    raw = {k: _reference(v, (*prefix, k), found) if looks_secret(k) else v for k, v in raw.items()}
    params = clean_params(raw)
    known = route.model_info.get("key") not in (None, route.litellm_params.get("model"))
    info = {
        k: v
        for k, v in clean_info(route.model_info).items()
        if k not in LITELLM_INFO and not (known and COST_MAP_FIELD.match(k))
    }
    return _Host(name, api_base, split[0], split[1], params, info)


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


def _model(hosts: list[_Host]) -> dict[str, Any] | str:
    """A model entry from its hosts (shared values lifted), or why the group cannot be one."""
    served = {h.served_model for h in hosts}
    if len(served) > 1:
        return f"its routes serve different models ({', '.join(sorted(served))})"
    addresses = [normalise_address(h.api_base) for h in hosts]
    if len(set(addresses)) < len(addresses):
        return "two of its routes point at the same address (a duplicate: decide which stays)"
    _unique(hosts)
    entries: list[dict[str, Any]] = []
    for host in sorted(hosts, key=lambda h: h.name):
        entry: dict[str, Any] = {"name": host.name, "api_base": host.api_base}
        entry["provider"] = host.provider
        if host.params:
            entry["litellm_params"] = host.params
        if host.info:
            entry["model_info"] = host.info
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
    return model


def import_fleet(routes: Iterable[Route], fleet: str, only: Sequence[str] = ()) -> Imported:
    """The fleet.yaml for these live routes (only the model groups named in `only`, if any)."""
    left_out: list[str] = []
    others: dict[str, int] = {}
    found: list[str] = []
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
        host = _host(route, fleet, found)
        if isinstance(host, str):
            problems.setdefault(route.model_name, []).append(f"{route.id}: {host}")
        else:
            groups.setdefault(route.model_name, []).append(host)
    left_out += [f"{n} route(s) tagged by fleet {name}" for name, n in sorted(others.items())]
    models: dict[str, dict[str, Any]] = {}
    for name in sorted(set(groups) | set(problems)):
        if name in problems:
            reasons = "; ".join(problems[name])
            left_out.append(f"model group {name} left out whole: {reasons}")
            continue
        model = _model(groups[name])
        if isinstance(model, str):
            left_out.append(f"model group {name} left out whole: {model}")
            continue
        models[name] = model
    document = _document(fleet, models)
    count = sum(len(m["hosts"]) for m in models.values())
    return Imported(_text(document, found), count, len(models), tuple(left_out), tuple(found))


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


def _text(document: dict[str, Any], placeholders: Sequence[str]) -> str:
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
        head.append("# Set in the proxy's environment before apply (credentials LiteLLM hid):")
        head += [f"#   {name}" for name in placeholders]
    return "\n".join(head) + "\n" + out.getvalue()
