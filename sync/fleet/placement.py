"""`targets:` in fleet.yaml: the proxies one fleet is synced to, where each model and host goes,
and what changes there. The value objects, the rules JSON Schema cannot say, promotion order.

A top-level `targets:` declares each proxy (proxy_url, api_key, read_api_key as references,
`after` for promotion order). `targets:` on a model or a host says where it goes: a list of
names, or a mapping name -> overlay ({api_key, litellm_params, model_info}) that also says what
changes there; a list is a mapping of empty overlays. On `defaults` it is a mapping of overlays
only (it limits nothing). An overlay obeys every rule of its level: the same checks run on it
(sync/fleet/sections.py), and secret and text checks walk it with the rest of the document.
Pure: no environment is read here (the commands resolve the references).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from sync.fleet.addresses import address_problem
from sync.fleet.plaintext import authority, quote, where
from sync.fleet.problems import Problem
from sync.fleet.promotion import cycles, promotion_order
from sync.fleet.proxyaddress import openai_path_problem, place_key
from sync.fleet.runner import GITHUB_SAYS, github_variable, reference_name
from sync.fleet.sections import ProblemAt, param_problems
from sync.fleet.yamlmarks import JsonPath
from sync.litellm.convergence import MAX_ROUTE_BYTES, route_too_large
from sync.secrets.credentials import credential_kind, is_reference

REFERENCE_PREFIX = "os.environ/"
NO_TARGETS = (
    "the fleet declares no targets; declare them in a top-level targets: or remove this "
    "(without targets:, every model and host goes to the one proxy of LITELLM_PROXY_URL)"
)


@dataclass(frozen=True)
class Overlay:
    """What changes on one target, over the level it is written at (defaults, model, host):
    each key replaces that key of its level, like a host's over its model's."""

    api_key: str | None = None
    litellm_params: Mapping[str, Any] = field(default_factory=dict)
    model_info: Mapping[str, Any] = field(default_factory=dict)


# Where a model or host goes (the keys, in the order written) and what changes there. None on a
# level: every target its enclosing level goes to.
Placement = Mapping[str, Overlay]


@dataclass(frozen=True)
class Target:
    """One proxy the fleet is synced to, named by references only, never a secret value."""

    name: str  # [a-z0-9][a-z0-9-]{0,62}
    proxy_url: str | tuple[str, ...]  # as written: a URL, pod URLs, or "os.environ/NAME"
    api_key: str | None  # "os.environ/NAME" (the write key) or None
    read_api_key: str | None  # "os.environ/NAME" or None
    after: tuple[str, ...]  # promotion predecessors (validated: exist, no self, no cycle)


# --- building (after validation) ------------------------------------------------------------


def targets_of(raw: Any) -> tuple[Target, ...]:
    """The declared targets in promotion order; () without a top-level targets:."""
    if not isinstance(raw, dict):
        return ()
    by_name = {
        name: Target(
            name=name,
            proxy_url=tuple(spec["proxy_url"])
            if isinstance(spec["proxy_url"], list)
            else spec["proxy_url"],
            api_key=spec.get("api_key"),
            read_api_key=spec.get("read_api_key"),
            after=tuple(spec.get("after") or ()),
        )
        for name, spec in raw.items()
    }
    order, _ = promotion_order({name: list(t.after) for name, t in by_name.items()})
    return tuple(by_name[name] for name in order)


def placement_of(raw: Any) -> Placement | None:
    """A level's targets: as a mapping of overlays (a list: empty ones); None when absent."""
    if raw is None:
        return None
    if isinstance(raw, list):
        return {name: Overlay() for name in raw}
    return {
        name: Overlay(
            api_key=spec.get("api_key"),
            litellm_params=spec.get("litellm_params") or {},
            model_info=spec.get("model_info") or {},
        )
        for name, spec in raw.items()
    }


# --- validation -------------------------------------------------------------------------------


def target_problems(data: dict[str, Any], problem: ProblemAt) -> Iterator[Problem]:
    """Every problem of targets: in a fleet document (which the schema has seen), located."""
    raw = data.get("targets")
    declared: dict[str, None] | None = None  # as declared; None: no top-level targets: at all
    if isinstance(raw, dict) and raw:
        declared = dict.fromkeys(raw)
        yield from _declaration_problems(raw, problem)
    known = "targets" not in data or declared is not None  # names can be checked
    sizes = _Sizes()
    defaults = data.get("defaults")
    if isinstance(defaults, dict):
        at: JsonPath = ("defaults", "targets")
        yield from _placement_problems(defaults.get("targets"), at, declared, known, problem)
    models = data.get("models")
    if not isinstance(models, dict):
        return
    for model_name, model in models.items():
        if not isinstance(model, dict):
            continue
        base: JsonPath = ("models", model_name)
        placement = model.get("targets")
        yield from _placement_problems(placement, (*base, "targets"), declared, known, problem)
        hosts = model.get("hosts")
        if not isinstance(hosts, list):
            continue
        # Where the model goes, as far as it names declared targets (else said at the model).
        within = [n for n in dict.fromkeys(_names_of(placement) or ()) if n in (declared or {})]
        for index, host in enumerate(hosts):
            if not isinstance(host, dict):
                continue
            here: JsonPath = (*base, "hosts", index)
            yield from _placement_problems(
                host.get("targets"), (*here, "targets"), declared, known, problem, within or None
            )
            if declared is not None:
                limit = _names_of(host.get("targets")) or within
                levels = [lv for lv in (defaults, model, host) if isinstance(lv, dict)]
                goes = set(limit) if limit else declared
                yield from _size_problems(levels, goes, sizes, here, problem)


def _names_of(placement: Any) -> list[str] | None:
    if isinstance(placement, list):
        return [n for n in placement if isinstance(n, str)]
    if isinstance(placement, dict):
        return list(placement)
    return None


def _placement_problems(
    value: Any,
    at: JsonPath,
    declared: Mapping[str, None] | None,
    known: bool,
    problem: ProblemAt,
    within: list[str] | None = None,
) -> Iterator[Problem]:
    """A level's targets: names it declares, each once, within its model's; overlays' rules."""
    if isinstance(value, dict):
        for name, overlay in value.items():
            if isinstance(overlay, dict):
                yield from param_problems(overlay, (*at, name), problem)
    if not isinstance(value, list | dict) or not known:
        return
    if declared is None:
        yield problem(at, f"{where(at)}: {NO_TARGETS}", True)
        return
    seen: set[str] = set()
    named = (
        [((*at, name), name, True) for name in value]
        if isinstance(value, dict)
        else [((*at, i), name, False) for i, name in enumerate(value) if isinstance(name, str)]
    )
    for here, name, key in named:
        if name in seen:
            yield problem(here, f"{where(at)}: {quote(name)} is listed twice", key)
        elif name not in declared:
            yield problem(here, f"{where(at)}: {_unknown(name, declared)}", key)
        elif within is not None and name not in set(within):
            yield problem(
                here,
                f"{where(at)}: target {quote(name)} is not one of its model's targets "
                f"({_some(within)}); a host goes only where its model goes",
                key,
            )
        seen.add(name)


def _unknown(name: str, declared: Collection[str]) -> str:
    return f"unknown target {quote(name)} (declared: {_some(declared)})"


def _some(names: Collection[str], most: int = 10) -> str:
    """Names as a message lists them: the first few, then how many in all (a file may hold
    thousands, and a message names them once per problem)."""
    shown = ", ".join(quote(name) for name in islice(names, most))
    return shown + (f", … ({len(names):,} in all)" if len(names) > most else "")


class _Sizes:
    """JSON sizes of the litellm_params and model_info of levels and overlays, each measured
    once. A merged route is never larger than the sum of its layers' sizes, so the size of a
    route on a target is computed (by merging) only where that sum passes the limit: validate
    stays linear in hosts and targets however many overlays a file holds."""

    def __init__(self) -> None:
        self._known: dict[int, int] = {}
        self._largest: dict[int, int] = {}

    def of(self, layer: Any) -> int:
        if not isinstance(layer, dict):
            return 0
        if id(layer) not in self._known:
            size = 0
            for section in ("litellm_params", "model_info"):
                values = layer.get(section)
                with contextlib.suppress(ValueError):  # a number too long: refused on its own
                    size += len(json.dumps(values, ensure_ascii=False).encode("utf-8", "replace"))
            self._known[id(layer)] = size
        return self._known[id(layer)]

    def largest_overlay(self, level: dict[str, Any]) -> int:
        overlays = level.get("targets")
        if not isinstance(overlays, dict):
            return 0
        if id(overlays) not in self._largest:
            self._largest[id(overlays)] = max(map(self.of, overlays.values()), default=0)
        return self._largest[id(overlays)]


def _size_problems(
    levels: list[dict[str, Any]],
    goes: Collection[str],
    sizes: _Sizes,
    here: JsonPath,
    problem: ProblemAt,
) -> Iterator[Problem]:
    """A route too large on a target where overlays add to it. levels: defaults, model, host
    (those that are mappings); goes: where the host goes."""
    base = sum(map(sizes.of, levels))
    if base + sum(map(sizes.largest_overlay, levels)) <= MAX_ROUTE_BYTES:
        return  # no target's route can be too large (the common case: one sum per host)
    if route_too_large(levels):
        return  # said once, for the route every target starts from
    overlays = [lv["targets"] if isinstance(lv.get("targets"), dict) else {} for lv in levels]
    names = dict.fromkeys(name for level in overlays for name in level)
    for name in (n for n in names if n in goes):
        mine = [level.get(name) for level in overlays]
        if base + sum(map(sizes.of, mine)) <= MAX_ROUTE_BYTES:
            continue
        layers = [x for pair in zip(levels, mine, strict=True) for x in pair if isinstance(x, dict)]
        if why := route_too_large(layers):
            yield problem(here, f"{where(here)}: on target {quote(name)}: {why}")


def _declaration_problems(raw: dict[str, Any], problem: ProblemAt) -> Iterator[Problem]:
    """Each declared target: its proxy_url, its after; promotion order without a cycle; no two
    targets at one proxy."""
    graph: dict[str, list[str]] = {}
    proxies: dict[str, str] = {}  # normal address -> the first target at it
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            continue
        here: JsonPath = ("targets", name)
        urls = yield from _proxy_url_problems(spec.get("proxy_url"), (*here, "proxy_url"), problem)
        for field_name in ("proxy_url", "api_key", "read_api_key"):
            if why := _github_variable(spec.get(field_name)):
                at = (*here, field_name)
                yield problem(at, f"{where(at)}: {why}")
        for at, normal in urls:
            if normal in proxies and proxies[normal] != name:
                yield problem(
                    at,
                    f"{where(at)}: the same proxy as target {quote(proxies[normal])}; two "
                    "targets on one proxy would each prune the other's routes",
                )
            proxies.setdefault(normal, name)
        after = spec.get("after")
        graph[name] = []
        if not isinstance(after, list):
            continue
        named: set[str] = set()
        for index, before in enumerate(after):
            at = (*here, "after", index)
            if not isinstance(before, str):
                continue
            if before == name:
                yield problem(at, f"{where(at)}: a target cannot come after itself")
            elif before not in raw:
                yield problem(at, f"{where(at)}: {_unknown(before, raw)}")
            elif before in named:
                yield problem(at, f"{where(at)}: {quote(before)} is listed twice")
            else:
                named.add(before)
                graph[name].append(before)
    for cycle in cycles(graph):
        first, second = cycle[0], cycle[1]
        at = ("targets", first, "after", raw[first]["after"].index(second))
        shown = (*cycle, first) if len(cycle) <= 10 else (*cycle[:8], "…", cycle[-1], first)
        chain = " after ".join(n if n == "…" else quote(n) for n in shown)
        if len(cycle) > 10:
            chain += f" ({len(cycle):,} targets)"
        yield problem(
            at,
            f"{where(at)}: promotion order has a cycle: {chain}; remove one of these after entries",
        )


def _proxy_url_problems(
    value: Any, at: JsonPath, problem: ProblemAt
) -> Generator[Problem, None, list[tuple[JsonPath, str]]]:
    """A URL, a list of pod URLs, or a reference os.environ/NAME: the address rules of
    --proxy-url and a host's api_base (sync/fleet/addresses.py); never quoting a credential.
    Yields the problems, returns the valid URLs (where, normal form)."""
    valid: list[tuple[JsonPath, str]] = []
    if isinstance(value, str):
        why = _reference_problem(value) if value.startswith(REFERENCE_PREFIX) else _url(value)
        if why:
            yield problem(at, f"{where(at)}: {why}")
        elif not value.startswith(REFERENCE_PREFIX):
            valid.append((at, place_key(value)))
    elif isinstance(value, list):
        seen: dict[str, int] = {}
        for index, item in enumerate(value):
            here: JsonPath = (*at, index)
            if not isinstance(item, str):
                continue
            if item.startswith(REFERENCE_PREFIX):
                yield problem(
                    here,
                    f"{where(here)}: a list holds the pods' URLs; to read them from the "
                    "environment write proxy_url: os.environ/NAME (NAME holding the URLs, "
                    "comma-separated)",
                )
            elif why := _url(item):
                yield problem(here, f"{where(here)}: {why}")
            elif (normal := place_key(item)) in seen:
                yield problem(
                    here, f"{where(here)}: same address as proxy_url[{seen[normal]}]; one pod twice"
                )
            else:
                seen[normal] = index
                valid.append((here, normal))
    return valid


def _github_variable(value: Any) -> str | None:
    """Why a target's reference names a variable GitHub sets itself, or None (the rule of
    sync/fleet/runner.py, which a host's references obey in full)."""
    name = reference_name(value)
    if name is None or not github_variable(name):
        return None
    return (
        f"{quote(value)} names a variable GitHub Actions sets itself ({GITHUB_SAYS}), never a "
        "proxy's address or key; name the variable that holds the proxy's"
    )


def _reference_problem(value: str) -> str | None:
    if is_reference(value):
        return None
    return (
        f"{quote(value)} is not a reference os.environ/NAME (NAME: letters, digits and _, "
        "not starting with a digit)"
    )


def _url(address: str) -> str | None:
    """Why a proxy URL is refused, or None: a credential by its shape (never quoted), else the
    address rules."""
    kind = None if "@" in authority(address) else credential_kind(address)
    if kind:
        return (
            f"looks like a credential ({kind}); a proxy URL carries no key: give the key as "
            "api_key: os.environ/NAME"
        )
    return address_problem(address) or openai_path_problem(address)
