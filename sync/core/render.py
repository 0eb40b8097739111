"""Fleet → desired routes (LiteLLM deployments) with deterministic ids and ownership tags."""

from __future__ import annotations

import hashlib
import json
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from sync.fleet.model import Fleet, Host, Model
from sync.litellm.normalise import SECTIONS, Path, leaves, readable
from sync.untrusted.json_parser import parse_json

TAG_FLEET = "fleet_sync_fleet"
TAG_HOST = "fleet_sync_host"
TAG_DIGEST = "fleet_sync_digest"
TAG_SOURCE = "fleet_sync_source"  # the repository that writes the route (see ownership.py)
# The leaf paths fleet-sync wrote, each as "read <path>" (compared with the live value) or
# "sha256:<digest of the value> <path>" (LiteLLM masks or resolves it: compared through this).
TAG_PATHS = "fleet_sync_paths"
TAGS = frozenset({TAG_FLEET, TAG_HOST, TAG_DIGEST, TAG_PATHS, TAG_SOURCE})
TAG_PREFIX = "fleet_sync_"  # every tag's, these and any a later fleet-sync adds
# LiteLLM's pause flag: it lists every database route with model_info.blocked (its
# LiteLLM_ProxyModelTable.blocked column), and its router sends a paused route nothing. On a
# desired route it is the pause state fleet-sync writes (True for a drained host): never part of
# the record of paths or the digest, it is written apart from model_info (sync/live/client.py).
PAUSED = "blocked"
READ = "read"
# What a route id, a host name import makes up, or a branch name may not hold: one rule for
# the three, so a name safe in one is safe in the others.
UNSAFE_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")
# A route id and its generation: <base>, then <base>-g2, <base>-g3 ... for the routes that
# replace it when LiteLLM cannot change it in place (it cannot remove a key).
_GENERATION = re.compile(r"^(?P<base>.+-[0-9a-f]{10})(?:-g(?P<n>[1-9][0-9]{0,5}))?$")


@dataclass(frozen=True)
class Route:
    """One LiteLLM deployment: model_name, litellm_params, model_info (whose id is the key)."""

    id: str
    model_name: str
    litellm_params: Mapping[str, Any]
    model_info: Mapping[str, Any]

    @property
    def fleet(self) -> str | None:
        value = self.model_info.get(TAG_FLEET)
        return value if isinstance(value, str) else None

    @property
    def host(self) -> str | None:
        value = self.model_info.get(TAG_HOST)
        return value if isinstance(value, str) else None

    @property
    def source(self) -> str | None:
        value = self.model_info.get(TAG_SOURCE)
        return value if isinstance(value, str) else None

    @property
    def digest(self) -> str | None:
        value = self.model_info.get(TAG_DIGEST)
        return value if isinstance(value, str) else None

    @property
    def written(self) -> dict[Path, str] | None:
        """What fleet-sync recorded writing (path -> "read" or a value digest), or None for a
        route without (a readable) record: written by hand or by an older fleet-sync."""
        entries = self.model_info.get(TAG_PATHS)
        if not isinstance(entries, list):
            return None
        record = _record(tuple(map(str, entries)))
        return None if record is None else dict(record)

    @property
    def paused(self) -> bool:
        """Paused by LiteLLM's `blocked` flag: listed, but its router sends it nothing."""
        return self.model_info.get(PAUSED) is True

    @property
    def record_malformed(self) -> bool:
        """A record of paths is there but does not read whole (not a list, or an entry that is
        no "marker path"): the next plan rewrites it (sync/core/compare.py)."""
        return TAG_PATHS in self.model_info and self.written is None

    @property
    def salvaged(self) -> dict[Path, str]:
        """What a malformed record still tells: its entries that read as "marker path" ({}
        for a readable record, or none)."""
        entries = self.model_info.get(TAG_PATHS)
        if not isinstance(entries, list) or self.written is not None:
            return {}
        out: dict[Path, str] = {}
        for entry in entries:
            marker, _, raw = entry.partition(" ") if isinstance(entry, str) else ("", "", "")
            if marker and (path := _recorded_path(raw)) is not None:
                out[path] = marker
        return out

    @property
    def api_base(self) -> str | None:
        value = self.litellm_params.get("api_base")
        return value if isinstance(value, str) else None

    @property
    def db_model(self) -> bool:
        """False for routes from the proxy's config file, which the admin API cannot edit."""
        return self.model_info.get("db_model", True) is not False

    def deployment(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "litellm_params": dict(self.litellm_params),
            "model_info": dict(self.model_info),
        }


@lru_cache(maxsize=1024)  # routes of one fleet record the same few lists of paths
def _record(entries: tuple[str, ...]) -> dict[Path, str] | None:
    """A record of paths read (Route.written); callers get a copy."""
    out: dict[Path, str] = {}
    for entry in entries:
        marker, _, raw = entry.partition(" ")
        path = _recorded_path(raw)
        if path is None:
            return None
        out[path] = marker
    return out


@lru_cache(maxsize=4096)  # every route records the same few paths
def _recorded_path(raw: str) -> Path | None:
    """A path as TAG_PATHS records it (a JSON list), or None when it is not one."""
    try:
        path = parse_json(raw.encode())  # a live tag: whoever edits the row writes it
    except ValueError:
        return None
    if not isinstance(path, list) or len(path) < 2 or path[0] not in SECTIONS:
        return None
    return tuple(str(p) for p in path)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def route_id(fleet: str, model: str, host: str) -> str:
    """Deterministic and URL-safe; from identity (fleet, model, host name), never the address.

    The readable part helps people reading `/v2/model/info`; the hash keeps ids unique even when
    two names slug to the same text.
    """
    digest = hashlib.sha256(f"{fleet}\0{model}\0{host}".encode()).hexdigest()[:10]
    slug = "-".join(
        UNSAFE_NAME_CHARACTERS.sub("-", part).strip("-") for part in (fleet, model, host)
    )
    return f"{slug}-{digest}"


def generation(rid: str) -> tuple[str, int]:
    """(the id of generation 1, this id's generation); an id not made by route_id is its own
    generation 1."""
    match = _GENERATION.match(rid)
    if match is None:
        return rid, 1
    return match["base"], int(match["n"] or 1)


def generation_id(base: str, n: int) -> str:
    return base if n == 1 else f"{base}-g{n}"


def value_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16]


def paths_record(litellm_params: Mapping[str, Any], model_info: Mapping[str, Any]) -> list[str]:
    """The TAG_PATHS entries for what is written (fleet-sync's own tags and the id excluded)."""
    entries = []
    for section, values in (("litellm_params", litellm_params), ("model_info", model_info)):
        for path, value in leaves(section, values):
            if section == "model_info" and (path[1] in ("id", PAUSED) or path[1] in TAGS):
                continue
            marker = READ if readable(path, value) else _marker_digest(value)
            entries.append(f"{marker} {_path_text(path)}")
    return entries  # in path order (leaves walks keys sorted)


def _marker_digest(value: Any) -> str:
    """value_digest, kept for text: the same api_key reference on every host."""
    return _text_digest(value) if type(value) is str else value_digest(value)


@lru_cache(maxsize=1024)
def _text_digest(value: str) -> str:
    return value_digest(value)


@lru_cache(maxsize=4096)  # every route repeats the same few paths
def _path_text(path: tuple[str, ...]) -> str:
    return json.dumps(list(path), ensure_ascii=False)


def route_digest(
    model_name: str, litellm_params: Mapping[str, Any], model_info: Mapping[str, Any]
) -> str:
    """Digest of what we write, api_key reference included: LiteLLM never returns the key, so a
    changed reference is visible only through this tag."""
    body = {"model_name": model_name, "litellm_params": litellm_params, "model_info": model_info}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]


def _render_host(
    fleet: Fleet, model: Model, host: Host, records: dict[tuple[Any, ...], list[str]] | None = None
) -> Route:
    """`records`: the records of paths (TAG_PATHS) of this render's hosts without sections of
    their own, kept across its hosts."""
    d = fleet.defaults
    provider = host.provider or model.provider or d.provider
    api_key = host.api_key or model.api_key or d.api_key
    params: dict[str, Any] = {**d.litellm_params, **model.litellm_params, **host.litellm_params}
    params["model"] = f"{provider}/{model.served_model}"
    params["api_base"] = host.api_base
    if api_key:
        params["api_key"] = api_key
    info: dict[str, Any] = {**d.model_info, **model.model_info, **host.model_info}
    rid = route_id(fleet.name, model.name, host.name)
    record = None
    if records is not None and not host.litellm_params and not host.model_info:
        # The model's other hosts without sections of their own have the same leaves but for
        # api_base, of which the record holds only whether it reads back: one record for all.
        api_base = params["api_base"]
        key = (model.name, params["model"], api_key, readable(_API_BASE, api_base))
        record = records.get(key)
        if record is None:
            user = {k: v for k, v in info.items() if k != PAUSED}  # as _stamp has it, but id
            record = records[key] = paths_record(params, user)  # and tags, which it skips
    return _stamp(model.name, params, info, rid, fleet.name, host.name, fleet.source, record)


_API_BASE: Path = ("litellm_params", "api_base")


def _stamp(
    model_name: str,
    params: Mapping[str, Any],
    user_info: Mapping[str, Any],
    rid: str,
    fleet: str | None,
    host: str | None,
    source: str | None,
    record: list[str] | None = None,
) -> Route:
    """The route as written: the id, the ownership tags, the record of paths (`record` when
    known: what paths_record gives), the digest."""
    pause = user_info.get(PAUSED)
    info: dict[str, Any] = {k: v for k, v in user_info.items() if k != PAUSED}
    info.update({"id": rid, TAG_FLEET: fleet, TAG_HOST: host})
    if source:
        info[TAG_SOURCE] = source
    info[TAG_PATHS] = list(record) if record is not None else paths_record(params, info)
    info[TAG_DIGEST] = route_digest(model_name, params, info)
    if isinstance(pause, bool):  # the pause state to write: apart from the record and digest
        info[PAUSED] = pause
    return Route(
        id=rid, model_name=model_name, litellm_params=_sorted(params), model_info=_sorted(info)
    )


def with_generation(route: Route, n: int) -> Route:
    """A desired route under generation n of its id (tags and digest follow the new id)."""
    base, _ = generation(route.id)
    return with_id(route, generation_id(base, n))


def with_id(route: Route, rid: str) -> Route:
    """A desired route under another id: a live route the fleet adopted keeps LiteLLM's id, and
    the route fleet.yaml wants for its host is written under that id (the tags, the record of
    paths and the digest follow the id)."""
    if rid == route.id:
        return route  # its own id: stamping it again gives the same route
    user_info = {k: v for k, v in route.model_info.items() if k != "id" and k not in TAGS}
    return _stamp(
        route.model_name,
        route.litellm_params,
        user_info,
        rid,
        route.fleet,
        route.host,
        route.source,
    )


def pausing(route: Route, paused: bool) -> Route:
    """The route with this pause state to write (its record of paths and digest unchanged)."""
    if route.model_info.get(PAUSED) is paused:
        return route
    info = _sorted({**route.model_info, PAUSED: paused})
    return Route(route.id, route.model_name, route.litellm_params, info)


def _sorted(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {k: mapping[k] for k in sorted(mapping)}


# The last Fleet rendered and its routes: one plan renders the same Fleet for the providers
# check of the live read, the plan and the gates (0.3 s each at 10,000 routes). A Fleet and its
# routes are values nothing changes; the weak reference lets the Fleet go.
_last: tuple[weakref.ref[Fleet], tuple[Route, ...]] | None = None


def render(fleet: Fleet) -> tuple[Route, ...]:
    """One route per enabled host, in a stable order (by model, then host as written)."""
    global _last
    last = _last
    if last is not None and last[0]() is fleet:
        return last[1]
    records: dict[tuple[Any, ...], list[str]] = {}
    routes = tuple(
        _render_host(fleet, model, host, records)
        for model in fleet.models
        for host in model.hosts
        if host.enabled
    )
    _last = (weakref.ref(fleet), routes)
    return routes


def render_drained(fleet: Fleet) -> tuple[Route, ...]:
    """The route of each drained host (enabled: false), paused: what its live route becomes.
    A drained host is never created (a paused route serves nothing); the planner pauses the
    route it has, keeping its id and what LiteLLM never lists (api_key, spend)."""
    return tuple(
        pausing(_render_host(fleet, model, host), True)
        for model in fleet.models
        for host in model.hosts
        if not host.enabled
    )


def render_config(routes: Iterable[Route]) -> str:
    """A LiteLLM config.yaml fragment: {model_list: [...]}, byte-for-byte deterministic."""
    model_list = [r.deployment() for r in routes]
    return yaml.safe_dump(
        {"model_list": model_list}, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
