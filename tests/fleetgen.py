"""Hypothesis strategies: random fleets (as fleet.yaml data) and random live states of an
in-memory proxy around them (tests/memproxy.py).

Names come from small pools so that generated states collide the way real ones do: live routes
sit at the addresses fleet.yaml lists, other fleets use the same model names, and foreign routes
hold ids this fleet renders.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from sync.fleet import Fleet, fleet_from_doc
from sync.render import TAG_DIGEST, TAG_FLEET, TAG_HOST, Route, render, route_id
from sync.yamlmarks import Marks, YamlDoc

from .memproxy import MemProxy

FLEET = "f1"
OTHER_FLEET = "f2"
MODELS = ("m1", "m2", "m3", "m4")
FOREIGN_MODELS = ("x1", "x2")  # never declared by the fleet under test
HOSTS = ("a", "b", "c", "d")
ADDRESSES = tuple(f"http://10.0.0.{i}:8000/v1" for i in range(1, 7))
SERVED = ("org/alpha", "org/beta")
ENV = ("KEY_A", "KEY_B", "REGION")

Draw = Callable[[st.SearchStrategy[Any]], Any]


def reference(names: tuple[str, ...] = ENV) -> st.SearchStrategy[str]:
    return st.sampled_from([f"os.environ/{n}" for n in names])


TEXT = st.sampled_from(["blue", "green", "2024-06-01", "120"])
# litellm_params a fleet may set, each with values of the kinds LiteLLM coerces, resolves or
# masks: numbers as ints, floats and strings, references, nested mappings, a LiteLLM default.
PARAM_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "rpm": st.integers(1, 500) | st.sampled_from(["120", 60.0]),
    "tpm": st.integers(1000, 100_000),
    "timeout": st.sampled_from([30, 600, 60.5, 600.0]),
    "max_retries": st.integers(0, 4),
    "weight": st.integers(1, 3),
    "organization": TEXT | reference(),
    "region_name": reference(("REGION",)),
    "use_in_pass_through": st.booleans(),
    "extra_headers": st.fixed_dictionaries({"X-Team": TEXT}, optional={"X-Auth-Token": reference()})
    | st.fixed_dictionaries({"X-Auth-Token": reference()}),
    "extra_body": st.fixed_dictionaries(
        {"options": st.fixed_dictionaries({}, optional={"depth": st.integers(1, 3), "tag": TEXT})}
    ),
}
INFO_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "max_input_tokens": st.sampled_from([8192, 131072]),
    "mode": st.sampled_from(["chat", "completion"]),
    "team": TEXT,
    "supports_vision": st.booleans(),
    "input_cost_per_token": st.sampled_from([0.0, 1e-06]),
    "base_model": st.sampled_from(SERVED),
}


def section(values: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=values)


@st.composite
def level(draw: Draw, with_provider: bool = True) -> dict[str, Any]:
    """The keys defaults, a model and a host share, each present or not."""
    out: dict[str, Any] = {}
    if with_provider and draw(st.booleans()):
        out["provider"] = draw(st.sampled_from(["hosted_vllm", "openai"]))
    if draw(st.booleans()):
        out["api_key"] = draw(reference(("KEY_A", "KEY_B")))
    params = draw(section(PARAM_VALUES))
    if params:
        out["litellm_params"] = params
    info = draw(section(INFO_VALUES))
    if info:
        out["model_info"] = info
    return out


@st.composite
def hosts(draw: Draw) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(HOSTS), unique=True, max_size=len(HOSTS)))
    addresses = draw(st.permutations(ADDRESSES))  # one model never lists an address twice
    out = []
    for name, address in zip(names, addresses, strict=False):
        host: dict[str, Any] = {"name": name, "api_base": address}
        if draw(st.integers(0, 3)) == 0:
            host["enabled"] = False
        host.update(draw(level()) if draw(st.booleans()) else {})
        out.append(host)
    return out


@st.composite
def fleet_docs(draw: Draw) -> dict[str, Any]:
    """fleet.yaml as data: 0-4 models of 0-4 hosts, parameters at every level."""
    doc: dict[str, Any] = {"version": 1, "fleet": FLEET}
    if draw(st.booleans()):
        doc["owns"] = draw(st.sampled_from(["tagged", "model_groups"]))
    defaults = draw(level())
    if defaults:
        doc["defaults"] = defaults
    if draw(st.booleans()):
        doc["safety"] = {"max_prune_percent": draw(st.sampled_from([0, 10, 30, 50, 100]))}
    models: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(MODELS), unique=True, max_size=len(MODELS))):
        model = {"served_model": draw(st.sampled_from(SERVED)), "hosts": draw(hosts())}
        model.update(draw(level()))
        models[name] = model
    doc["models"] = models
    return doc


def load(doc: dict[str, Any]) -> Fleet:
    """Through the loader's schema and semantic checks (a generated fleet must be one `validate`
    accepts); the YAML text itself is skipped, it is not what these properties are about."""
    return fleet_from_doc(YamlDoc(copy.deepcopy(doc), Marks(), ()), "fleet.yaml")


@dataclass(frozen=True, repr=False)
class World:
    """One generated case: the fleet, what it renders, and the proxy as it stands."""

    doc: dict[str, Any]
    fleet: Fleet
    desired: tuple[Route, ...]
    proxy: MemProxy
    notes: tuple[str, ...]  # what the generator put on the proxy (shown when a property fails)

    def live(self) -> list[Route]:
        return self.proxy.listing()

    def __repr__(self) -> str:  # what a failing example prints: enough to write it as a case
        return f"World(fleet.yaml={self.doc!r}, live={list(self.notes)!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis prints with this
        printer.text(repr(self))


def untagged(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in (TAG_FLEET, TAG_HOST, TAG_DIGEST)}


def portal_route(rid: str, model: str, address: str) -> dict[str, Any]:
    """A route written by someone else (an older portal, another team): no fleet-sync tags."""
    return {
        "model_name": model,
        "litellm_params": {"model": "hosted_vllm/org/alpha", "api_base": address},
        "model_info": {"id": rid},
    }


# What happens to a route fleet.yaml renders, on the live proxy.
FATES = (
    "absent",
    "matching",
    "drifted",
    "stale_digest",
    "tags_lost",
    "held_by_other_fleet",
    "held_untagged_elsewhere",
    "held_by_config",
)
DRIFTS = ("address", "param_changed", "param_added", "param_missing", "info_changed", "renamed")


@st.composite
def worlds(draw: Draw, fleet_doc: st.SearchStrategy[dict[str, Any]] | None = None) -> World:
    doc = draw(fleet_doc or fleet_docs())
    fleet = load(doc)
    desired = render(fleet)
    proxy = MemProxy()
    notes: list[str] = []
    taken: set[str] = set()

    def put(deployment: dict[str, Any], note: str, config: bool = False) -> None:
        rid = deployment["model_info"]["id"]
        if rid in taken:
            return
        taken.add(rid)
        (proxy.add_config_route if config else proxy.create)(deployment)
        notes.append(f"{rid}: {note}")

    for route in desired:
        fate = draw(st.sampled_from(FATES))
        deployment = route.deployment()
        if fate == "absent":
            continue
        if fate in ("matching", "stale_digest", "drifted"):
            if fate == "stale_digest":
                deployment["model_info"][TAG_DIGEST] = "0000000000000000"
            if fate == "drifted":
                drift = draw(st.sampled_from(DRIFTS))
                fate = f"drifted ({drift})"
                _drift(draw, deployment, drift)
            put(deployment, fate)
        elif fate == "tags_lost":
            deployment["model_info"] = untagged(deployment["model_info"])
            put(deployment, fate)
        elif fate == "held_by_other_fleet":
            model = draw(st.sampled_from([route.model_name, *FOREIGN_MODELS]))
            deployment["model_name"] = model
            deployment["model_info"][TAG_FLEET] = OTHER_FLEET
            put(deployment, f"{fate} in {model}")
        elif fate == "held_untagged_elsewhere":
            model = draw(st.sampled_from(elsewhere(route.model_name)))
            put(portal_route(route.id, model, draw(st.sampled_from(ADDRESSES))), f"{fate} {model}")
        else:
            model = draw(st.sampled_from([route.model_name, *FOREIGN_MODELS]))
            put(portal_route(route.id, model, draw(st.sampled_from(ADDRESSES))), fate, config=True)

    # Routes this fleet tagged for hosts it no longer renders (drained, removed, renamed).
    # Sometimes many: the prune-percentage rule starts at 10 owned routes.
    pairs = st.tuples(st.sampled_from(MODELS), st.sampled_from(HOSTS))
    crowded = draw(st.integers(0, 3)) == 0
    for model, host in draw(
        st.lists(pairs, min_size=8 if crowded else 0, max_size=16, unique=True)
    ):
        rid = route_id(FLEET, model, host)
        deployment = portal_route(rid, model, ADDRESSES[0])
        deployment["model_info"].update({TAG_FLEET: FLEET, TAG_HOST: host, TAG_DIGEST: "0" * 16})
        put(deployment, "tagged, not rendered")
    # Other fleets', untagged and config-file routes, in and outside this fleet's model groups.
    others = st.tuples(
        st.sampled_from(["other_fleet", "untagged", "config"]),
        st.sampled_from((*MODELS, *FOREIGN_MODELS)),
        st.sampled_from(ADDRESSES),
    )
    for index, (kind, model, address) in enumerate(draw(st.lists(others, max_size=6))):
        deployment = portal_route(f"{kind}-{index}", model, address)
        if kind == "other_fleet":
            deployment["model_info"].update({TAG_FLEET: OTHER_FLEET, TAG_HOST: "a"})
        put(deployment, f"{kind} in {model}", config=kind == "config")
    return World(doc, fleet, desired, proxy, tuple(notes))


def _drift(draw: Draw, deployment: dict[str, Any], drift: str) -> None:
    """A hand edit of a live route, or a route an older fleet.yaml wrote."""
    params, info = deployment["litellm_params"], deployment["model_info"]
    if drift == "address":
        moved = [a for a in ADDRESSES if a != params["api_base"]]
        params["api_base"] = draw(st.sampled_from(moved))
    elif drift == "param_changed":
        key = draw(st.sampled_from(sorted(PARAM_VALUES)))
        params[key] = draw(PARAM_VALUES[key])
    elif drift == "param_added":
        params["max_parallel_requests"] = draw(st.integers(1, 9))
    elif drift == "param_missing":
        optional = sorted(set(params) - {"model", "api_base"})
        if optional:
            del params[draw(st.sampled_from(optional))]
    elif drift == "info_changed":
        key = draw(st.sampled_from(sorted(INFO_VALUES)))
        info[key] = draw(INFO_VALUES[key])
    else:
        deployment["model_name"] = draw(st.sampled_from(elsewhere(deployment["model_name"])))


def elsewhere(model: str) -> list[str]:
    """Model groups other than this one, declared by the fleet or not."""
    return [m for m in (*MODELS, *FOREIGN_MODELS) if m != model]
