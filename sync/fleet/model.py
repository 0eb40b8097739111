"""fleet.yaml → Fleet: schema (sync/fleet/schema_rules.py) and semantic validation with every
problem located."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# Re-exported: set-host, import, the probe and the tests take the address rules from here.
from sync.collector import held as collector_held
from sync.fleet.addresses import address_problem as address_problem
from sync.fleet.addresses import normalise_address as normalise_address
from sync.fleet.placement import Placement, Target, placement_of, target_problems, targets_of
from sync.fleet.plaintext import address_credential, masked, quote
from sync.fleet.plaintext import secret_problems as _secret_problems
from sync.fleet.plaintext import where as _where
from sync.fleet.problems import FleetError, Problem
from sync.fleet.runner import data_target_variables, key_reference_problems, target_variables

# Re-exported: the tests and benchmarks take the schema from here.
from sync.fleet.schema_rules import SCHEMA_PATH as SCHEMA_PATH
from sync.fleet.schema_rules import passes_compiled_schema as passes_compiled_schema
from sync.fleet.schema_rules import schema as schema
from sync.fleet.schema_rules import schema_problems, type_name
from sync.fleet.sections import ProblemAt, param_problems
from sync.fleet.text import text_problems
from sync.fleet.typecheck import TypedValues, type_problems, typed_values
from sync.fleet.yamlmarks import JsonPath, Marks, YamlDoc, read_yaml
from sync.litellm.convergence import route_too_large

DEFAULT_PROVIDER = "hosted_vllm"
DEFAULT_MAX_PRUNE_PERCENT = 30.0


@dataclass(frozen=True)
class Host:
    name: str
    api_base: str
    enabled: bool
    provider: str | None
    api_key: str | None
    litellm_params: Mapping[str, Any]
    model_info: Mapping[str, Any]
    targets: Placement | None = None  # None: every target its model goes to


@dataclass(frozen=True)
class Model:
    name: str
    served_model: str
    provider: str | None
    api_key: str | None
    litellm_params: Mapping[str, Any]
    model_info: Mapping[str, Any]
    hosts: tuple[Host, ...]
    targets: Placement | None = None  # None: every target


@dataclass(frozen=True)
class Defaults:
    provider: str
    api_key: str | None
    litellm_params: Mapping[str, Any]
    model_info: Mapping[str, Any]
    targets: Placement | None = None  # overlays only: defaults limit nothing


@dataclass(frozen=True)
class Fleet:
    name: str
    owns: str  # "tagged" | "model_groups"
    defaults: Defaults
    max_prune_percent: float
    models: tuple[Model, ...]
    health: str | None = None  # "probe" | "require": probe hosts on every plan and apply
    # The repository that writes this fleet's routes (tag fleet_sync_source): fleet.yaml's
    # source:, else what the command line resolves (GITHUB_REPOSITORY, the git remote).
    source: str | None = None
    # The proxies of fleet.yaml's targets:, in promotion order; () without targets: (one proxy,
    # from LITELLM_PROXY_URL). What one target sees: sync.fleet.targets.for_target.
    targets: tuple[Target, ...] = ()
    # The variables the targets' proxy_url, api_key and read_api_key name (upper case): a
    # target's projection (for_target) keeps them, so the probe never resolves one for a host.
    target_variables: frozenset[str] = frozenset()
    # The file it was read from, as given (-f), and where each host's provider is written
    # (line, col), by (model, host): the host's provider:, else its model's, else defaults'
    # (else the model's key). For messages that point at fleet.yaml after it was read.
    file: str = "fleet.yaml"
    provider_at: Mapping[tuple[str, str], tuple[int, int]] = field(
        default_factory=dict, compare=False, repr=False
    )
    # Every litellm_params and model_info value with its place in fleet.yaml: plan and apply
    # check them against the types of the release the proxy reports (release_problems).
    typed: TypedValues = field(default=TypedValues(), compare=False, repr=False)

    @property
    def requires_health(self) -> bool:
        return self.health == "require"

    @property
    def model_names(self) -> frozenset[str]:
        return frozenset(m.name for m in self.models)


NEWEST = "newest"  # check LiteLLM's types of the newest supported release (validate, no proxy)


def load_fleet(
    path: Path,
    display: str | None = None,
    held: frozenset[str] = frozenset(),
    litellm: str | None = NEWEST,
) -> Fleet:
    """Read, validate and build the Fleet; raise FleetError listing every problem. held: the
    target variables of the job's other fleet files (no host here may name one). `litellm`:
    the release whose declared types the values must pass (NEWEST, a version the proxy
    reported), or None to leave that check to release_problems once the proxy is read."""
    with collector_held():  # sync/collector.py: half the time of a large fleet otherwise
        try:
            doc = read_yaml(path, display)
        except FleetError as exc:
            raise FleetError(masked(exc.problems)) from None
        return fleet_from_doc(doc, display or str(path), held, litellm)


def file_target_variables(path: Path) -> frozenset[str]:
    """The variables a fleet file's targets name (upper case), whether or not it is valid;
    FleetError when it cannot be read or parsed."""
    try:
        return data_target_variables(read_yaml(path).data)
    except FleetError as exc:
        raise FleetError(masked(exc.problems)) from None


def release_problems(fleet: Fleet, version: str | None) -> tuple[Problem, ...]:
    """The values of fleet.yaml the LiteLLM a proxy reports (`version`) would refuse, located
    (none for a Fleet built without its places)."""
    return tuple(masked(type_problems(fleet.typed, version)))


def fleet_from_doc(
    doc: YamlDoc, file: str, held: frozenset[str] = frozenset(), litellm: str | None = NEWEST
) -> Fleet:
    problems = list(doc.problems)
    if not isinstance(doc.data, dict):
        kind = type_name(doc.data)
        problems.append(
            Problem(
                file,
                1,
                1,
                f"top level must be a mapping with version, fleet and models, not {kind}",
            )
        )
        raise FleetError(problems)
    problems.extend(schema_problems(doc.data, doc.marks, file))
    problems.extend(semantic_problems(doc.data, doc.marks, file, held))
    typed = typed_values(doc.data, doc.marks, file)
    if litellm is not None:
        problems.extend(type_problems(typed, None if litellm == NEWEST else litellm))
    if problems:
        raise FleetError(masked(problems))
    fleet = replace(_build(doc.data), file=file, typed=typed)
    return replace(fleet, provider_at=_provider_places(doc.data, doc.marks))


def _provider_places(data: dict[str, Any], marks: Marks) -> dict[tuple[str, str], tuple[int, int]]:
    """Where each host's provider is written (Fleet.provider_at); `data` is valid."""
    defaults = data.get("defaults") or {}
    default_at = marks.of_value(("defaults", "provider")) if "provider" in defaults else None
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for name, model in data["models"].items():
        if "provider" in model:
            model_at = marks.of_value(("models", name, "provider"))
        else:
            model_at = default_at or marks.of_key(("models", name))
        for index, host in enumerate(model["hosts"]):
            here = ("models", name, "hosts", index, "provider")
            out[name, host["name"]] = marks.of_value(here) if "provider" in host else model_at
    return out


def semantic_problems(
    data: dict[str, Any], marks: Marks, file: str, held: frozenset[str] = frozenset()
) -> Iterator[Problem]:
    """Rules JSON Schema cannot say: addresses, duplicates, secrets, reserved keys. held: the
    target variables of the job's other fleet files."""

    def problem(path: JsonPath, message: str, key: bool = False) -> Problem:
        return Problem(file, *(marks.of_key(path) if key else marks.of_value(path)), message)

    yield from _secret_problems(data, problem)
    yield from text_problems(data, problem)
    yield from target_problems(data, problem)
    yield from key_reference_problems(data, problem, held)
    defaults = data.get("defaults")
    if isinstance(defaults, dict):
        yield from param_problems(defaults, ("defaults",), problem)
    models = data.get("models")
    if not isinstance(models, dict):
        return
    for model_name, model in models.items():
        if isinstance(model, dict):
            layers = [d for d in (defaults, model) if isinstance(d, dict)]
            yield from _model_problems(model_name, model, layers, problem)


def _model_problems(
    model_name: Any, model: dict[str, Any], layers: list[dict[str, Any]], problem: ProblemAt
) -> Iterator[Problem]:
    """One model's: its own sections', and each host's (`layers`: defaults and the model)."""
    base: JsonPath = ("models", model_name)
    yield from param_problems(model, base, problem)
    hosts = model.get("hosts")
    if not isinstance(hosts, list):
        return
    names: dict[str, int] = {}
    bases: dict[str, int] = {}
    # A host without sections of its own has the route size of its model's: measured once.
    plain_size: list[str | None] = []
    for index, host in enumerate(hosts):
        if not isinstance(host, dict):
            continue
        here: JsonPath = (*base, "hosts", index)
        yield from param_problems(host, here, problem)
        if any(isinstance(host.get(s), Mapping) for s in ("litellm_params", "model_info")):
            too_large = route_too_large([*layers, host])
        else:
            plain_size = plain_size or [route_too_large(layers)]
            too_large = plain_size[0]
        if too_large:
            yield problem(here, f"{_where(here)}: {too_large}")
        name = host.get("name")
        if isinstance(name, str):
            if name in names:
                yield problem(
                    (*here, "name"),
                    f"{_where(here)}: duplicate host name {quote(name)} in model "
                    f"{quote(model_name)} (first at hosts[{names[name]}])",
                )
            else:
                names[name] = index
        api_base = host.get("api_base")
        if not isinstance(api_base, str):
            continue
        error = address_credential(api_base) or address_problem(api_base)
        if error:
            yield problem((*here, "api_base"), f"{_where(here)}.api_base: {error}")
            continue
        normal = normalise_address(api_base)
        if normal in bases:
            yield problem(
                (*here, "api_base"),
                f"{_where(here)}.api_base: same address as hosts[{bases[normal]}] of model "
                f"{quote(model_name)}; two routes to one server",
            )
        else:
            bases[normal] = index


def _build(data: dict[str, Any]) -> Fleet:
    d = data.get("defaults") or {}
    defaults = Defaults(
        provider=d.get("provider", DEFAULT_PROVIDER),
        api_key=d.get("api_key"),
        litellm_params=d.get("litellm_params") or {},
        model_info=d.get("model_info") or {},
        targets=placement_of(d.get("targets")),
    )
    models = tuple(
        Model(
            name=name,
            served_model=m["served_model"],
            provider=m.get("provider"),
            api_key=m.get("api_key"),
            litellm_params=m.get("litellm_params") or {},
            model_info=m.get("model_info") or {},
            hosts=tuple(
                Host(
                    name=h["name"],
                    api_base=h["api_base"],
                    enabled=h.get("enabled", True),
                    provider=h.get("provider"),
                    api_key=h.get("api_key"),
                    litellm_params=h.get("litellm_params") or {},
                    model_info=h.get("model_info") or {},
                    targets=placement_of(h.get("targets")),
                )
                for h in m["hosts"]
            ),
            targets=placement_of(m.get("targets")),
        )
        for name, m in data["models"].items()
    )
    safety = data.get("safety") or {}
    targets = targets_of(data.get("targets"))
    return Fleet(
        name=data["fleet"],
        owns=data.get("owns", "tagged"),
        defaults=defaults,
        max_prune_percent=float(safety.get("max_prune_percent", DEFAULT_MAX_PRUNE_PERCENT)),
        models=models,
        health=data.get("health"),
        source=data.get("source"),
        targets=targets,
        target_variables=target_variables(targets),
    )
