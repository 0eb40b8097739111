"""Hypothesis strategies: random fleets (as fleet.yaml data) and random live states of an
in-memory proxy around them (tests/support/memproxy.py).

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

from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import (
    TAG_DIGEST,
    TAG_FLEET,
    TAG_HOST,
    TAG_SOURCE,
    TAGS,
    Route,
    render,
    route_id,
    with_generation,
    with_id,
)
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import Marks, YamlDoc

from .memproxy import MemProxy

FLEET = "f1"
OTHER_FLEET = "f2"
SOURCE = "org/fleet-a"
OTHER_SOURCE = "org/fleet-b"  # another repository that copied `fleet: f1`
MODELS = ("m1", "m2", "m3", "m4")
FOREIGN_MODELS = ("x1", "x2")  # never declared by the fleet under test
HOSTS = ("a", "b", "c", "d")
# What LiteLLM lists on a team (BYOK) model (sync/litellm/teams.py): never the fleet's.
TEAM_INFO = {"team_id": "team-t", "team_public_model_name": "public"}
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
    "input_cost_per_token": st.sampled_from([0.0, 1e-06, 2.5e-06]),
    # X-Team-Key: LiteLLM masks it (a "key" segment), yet it is no credential by name or shape.
    # No reference below the top level: LiteLLM would send its text (validate refuses it).
    "extra_headers": st.fixed_dictionaries({"X-Team": TEXT}, optional={"X-Team-Key": TEXT})
    | st.fixed_dictionaries({"X-Team-Key": TEXT}),
    "extra_body": st.fixed_dictionaries(
        {"options": st.fixed_dictionaries({}, optional={"depth": st.integers(1, 3), "tag": TEXT})}
    ),
}
INFO_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "max_input_tokens": st.sampled_from([8192, 131072]),
    "mode": st.sampled_from(["chat", "completion"]),
    "team": TEXT,
    "supports_vision": st.booleans(),
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
    source = draw(st.sampled_from([None, SOURCE, SOURCE.upper()]))
    if source:
        doc["source"] = source
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
    take_over: bool  # apply --take-over
    notes: tuple[str, ...]  # what the generator put on the proxy (shown when a property fails)
    hand_edits: frozenset[tuple[str, str, str]]  # (id, section, top-level key) edited by hand

    def listed(self) -> list[Route]:
        return self.proxy.listing()

    def unlisted(self, listed: list[Route]) -> list[Route]:
        """Stored rows the router does not list, of the groups sync.live.state.read_live asks:
        those fleet.yaml declares or the fleet has listed routes in (every row), and those its
        git history declared (rows tagged with the fleet). Every tagged row the generator puts
        is of a model in MODELS, which some earlier fleet.yaml declared to write it."""
        groups = self.fleet.model_names | {r.model_name for r in listed if r.fleet == FLEET}
        rows = self.proxy.stored_unlisted(groups | set(MODELS))
        return [r for r in rows if r.model_name in groups or r.fleet == FLEET]

    def plan(self, shuffle: Callable[[list[Route]], None] | None = None) -> Plan:
        listed = self.listed()
        unlisted = self.unlisted(listed)
        if shuffle:
            shuffle(listed)
            shuffle(unlisted)
        return make_plan(
            self.fleet, self.desired, listed, unlisted, self.take_over, self.proxy.version
        )

    def __repr__(self) -> str:  # what a failing example prints: enough to write it as a case
        return (
            f"World(fleet.yaml={self.doc!r}, litellm={self.proxy.version}, "
            f"take_over={self.take_over}, live={list(self.notes)!r})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis prints with this
        printer.text(repr(self))


def untagged(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in TAGS}


def portal_route(rid: str, model: str, address: str) -> dict[str, Any]:
    """A route written by someone else (an older portal, another team): no fleet-sync tags."""
    return {
        "model_name": model,
        "litellm_params": {"model": "hosted_vllm/org/alpha", "api_base": address},
        "model_info": {"id": rid},
    }


# What an older fleet.yaml set for a host that this one no longer sets (or sets otherwise): the
# route fleet-sync wrote then is what the proxy holds now.
OLDER = {
    "param_added": ("litellm_params", {"max_parallel_requests": 4}),
    "header_added": ("litellm_params", {"extra_headers": {"X-Team": "red", "X-Old": "1"}}),
    "masked_header_added": ("litellm_params", {"extra_headers": {"X-Team-Key": "old"}}),
    "reference_added": ("litellm_params", {"organization": "os.environ/OLD_ORG"}),
    "info_added": ("model_info", {"team": "old", "max_input_tokens": 4096}),
    "api_key_other": ("api_key", "os.environ/OLD_KEY"),
    "address_other": ("api_base", "http://10.0.0.9:8000/v1"),
}


def older_route(doc: dict[str, Any], route: Route, older: str) -> Route:
    """The route an older fleet.yaml rendered for this host: this one with one host-level
    setting more (or other), rendered by fleet-sync itself (tags and record included)."""
    where, value = OLDER[older]
    earlier = copy.deepcopy(doc)
    host = next(h for h in earlier["models"][route.model_name]["hosts"] if h["name"] == route.host)
    if isinstance(value, dict):
        host[where] = {**host.get(where, {}), **value}
    else:
        host[where] = value
    return next(r for r in render(load(earlier)) if r.id == route.id)


# What a portal or a person put on a route that fleet.yaml may not set: a literal api_key
# (LiteLLM never lists it, so only adoption in place keeps it), a number and a routing-shaped
# string a replacement can carry, a string it cannot (it may be a secret LiteLLM resolved), and
# model_info keys.
PORTAL_KEY = "sk-portal-literal-0123456789"
HAND_PARAMS: dict[str, st.SearchStrategy[Any]] = {
    "max_parallel_requests": st.integers(1, 9),
    "api_version": st.sampled_from(["2024-06-01", "v1"]),
    "organization": st.sampled_from(["acme-org", "os.environ/KEY_B"]),
}
HAND_INFO: dict[str, st.SearchStrategy[Any]] = {
    "owner": st.sampled_from(["portal", "ops"]),
    "team": TEXT,
}

# What happens to a route fleet.yaml renders, on the live proxy.
FATES = (
    "absent",
    "matching",
    "drifted",
    "stale_digest",
    "written_by_older_yaml",
    "next_generation",
    "two_generations",
    "stored_not_listed",
    "tags_lost",
    "no_source_tag",
    "held_by_same_fleet_other_source",
    "held_by_other_fleet",
    "held_untagged_elsewhere",
    "held_by_config",
)
# Onboarding: routes fleet-sync did not create, under LiteLLM's ids (drawn twice as often: the
# first thing every new user does).
ONBOARDING = (
    "portal_at_address",  # untagged, at the host's address: adopted in place (owns: model_groups)
    "adopted_earlier",  # tagged by an earlier adoption, LiteLLM's id kept
    "adopted_by_older_yaml",  # the same, written by an older fleet.yaml (a removal replaces it)
    "duplicates",  # the host's own route and an untagged one at its address
)
DRIFTS = ("address", "param_changed", "param_added", "param_missing", "info_changed", "renamed")


@st.composite
def worlds(draw: Draw, fleet_doc: st.SearchStrategy[dict[str, Any]] | None = None) -> World:
    doc = draw(fleet_doc or fleet_docs())
    fleet = load(doc)
    desired = render(fleet)
    builder = Builder(draw, doc, MemProxy(draw(st.sampled_from(["1.98.1", "1.108.7", "1.110.2"]))))
    for route in desired:
        builder.place(route)
    builder.place_others()
    return World(
        doc,
        fleet,
        desired,
        builder.proxy,
        draw(st.booleans()),
        tuple(builder.notes),
        frozenset(builder.hand_edits),
    )


class Builder:
    """Puts generated routes on the in-memory proxy, noting what each one is."""

    def __init__(self, draw: Draw, doc: dict[str, Any], proxy: MemProxy) -> None:
        self.draw = draw
        self.doc = doc
        self.proxy = proxy
        self.notes: list[str] = []
        self.hand_edits: set[tuple[str, str, str]] = set()

    def put(self, deployment: dict[str, Any], note: str, how: str = "db") -> None:
        """Onto the proxy: a database route (db), one its router does not list (unlisted), or
        one from its config file (config). An id already there is skipped."""
        rid = deployment["model_info"]["id"]
        if rid in self.proxy.rows:
            return
        add = {"db": self.proxy.create, "unlisted": self.proxy.add_unlisted_route}
        add.get(how, self.proxy.add_config_route)(deployment)
        if how != "config" and self.draw(st.integers(0, 4)) == 0:  # an admin paused it
            self.proxy.rows[rid].blocked = True
            note += ", paused"
        self.notes.append(f"{rid}: {note}" + ("" if how == "db" else f" ({how})"))

    def place(self, route: Route) -> None:
        """A route fleet.yaml renders, as the live proxy holds it (or not)."""
        draw, put = self.draw, self.put
        fate = draw(st.sampled_from(FATES + ONBOARDING * 2))
        deployment = route.deployment()
        info = deployment["model_info"]
        if fate == "absent":
            return
        if fate in ("matching", "stale_digest", "stored_not_listed"):
            if fate == "stale_digest":
                info[TAG_DIGEST] = "0000000000000000"
            put(deployment, fate, "unlisted" if fate == "stored_not_listed" else "db")
        elif fate == "drifted":
            drift = draw(st.sampled_from(DRIFTS))
            self.hand_edits.add((route.id, *_drift(draw, deployment, drift)))
            put(deployment, f"{fate} ({drift})")
        elif fate == "written_by_older_yaml":
            older = draw(st.sampled_from(sorted(OLDER)))
            put(older_route(self.doc, route, older).deployment(), f"{fate} ({older})")
            if draw(st.booleans()):  # the next generation, which a replacement would take
                self.hold(with_generation(route, 2).id, route.model_name, "next generation")
        elif fate in ("next_generation", "two_generations"):
            if fate == "two_generations":
                put(older_route(self.doc, route, "param_added").deployment(), "generation 1")
            put(with_generation(route, 2).deployment(), "generation 2")
        elif fate in ("portal_at_address", "duplicates"):
            if fate == "duplicates":
                put(deployment, "the host's own route")
            put(self.portal_copy(route), fate)
        elif fate in ("adopted_earlier", "adopted_by_older_yaml"):
            rid = f"adopted-{route.model_name}-{route.host}"
            written = route
            if fate == "adopted_by_older_yaml":
                older = draw(st.sampled_from(sorted(OLDER)))
                written, fate = older_route(self.doc, route, older), f"{fate} ({older})"
            adopted = with_id(written, rid).deployment()
            self.hand_keys(adopted)
            if draw(st.booleans()):
                drift = draw(st.sampled_from([d for d in DRIFTS if d != "renamed"]))
                self.hand_edits.add((route.id, *_drift(draw, adopted, drift)))
            put(adopted, fate)
        elif fate == "tags_lost":
            deployment["model_info"] = untagged(info)
            put(deployment, fate)
        elif fate == "no_source_tag":  # written before fleet_sync_source existed
            info.pop(TAG_SOURCE, None)
            put(deployment, fate)
        elif fate == "held_by_same_fleet_other_source":  # another team copied fleet: f1
            info[TAG_SOURCE] = OTHER_SOURCE
            put(deployment, fate)
        else:
            self.hold(route.id, route.model_name, "this fleet's id")

    def portal_copy(self, route: Route) -> dict[str, Any]:
        """The route a portal left for this host: untagged, LiteLLM's id, the same address (as
        the portal wrote it), a literal api_key and keys of its own."""
        deployment = portal_route(
            f"portal-{route.model_name}-{route.host}",
            route.model_name,
            (route.api_base or "") + self.draw(st.sampled_from(["", "/"])),
        )
        deployment["litellm_params"]["model"] = route.litellm_params["model"]
        self.hand_keys(deployment)
        return deployment

    def hand_keys(self, deployment: dict[str, Any]) -> None:
        """Keys fleet.yaml does not set, added by hand (a literal api_key among them)."""
        params, info = deployment["litellm_params"], deployment["model_info"]
        if "api_key" not in params:
            params["api_key"] = PORTAL_KEY
        extra = self.draw(section(HAND_PARAMS))
        params.update({k: v for k, v in extra.items() if k not in params})
        info.update({k: v for k, v in self.draw(section(HAND_INFO)).items() if k not in info})

    def hold(self, rid: str, model: str, what: str) -> None:
        """A route this fleet does not own holding one of its ids: another fleet's, an untagged
        one in another model group, or a config-file route; in this model group or another."""
        draw = self.draw
        kind = draw(st.sampled_from(["other_fleet", "untagged", "config", "team"]))
        if kind == "untagged" or (kind != "team" and draw(st.booleans())):
            model = draw(st.sampled_from(elsewhere(model)))
        deployment = portal_route(rid, model, draw(st.sampled_from(ADDRESSES)))
        if kind == "other_fleet":
            deployment["model_info"].update({TAG_FLEET: OTHER_FLEET, TAG_HOST: "a"})
        if kind == "team":  # a team's model in the host's own group, with this fleet's tags
            deployment["model_info"].update({**TEAM_INFO, TAG_FLEET: FLEET, TAG_HOST: "a"})
        self.put(
            deployment, f"{what} held by {kind} in {model}", "config" if kind == "config" else "db"
        )

    def place_others(self) -> None:
        draw, put = self.draw, self.put
        # Routes tagged with this fleet's name for hosts it may no longer render (drained,
        # removed, renamed), from this source, no source or another one, under the id
        # fleet-sync derives or LiteLLM's (adopted earlier), at any address. Sometimes many:
        # the prune-percentage rule starts at 10 owned routes.
        pairs = draw(st.permutations([(m, h) for m in MODELS for h in HOSTS]))
        crowded = draw(st.integers(0, 3)) == 0
        for model, host in pairs[: draw(st.integers(8, 16) if crowded else st.integers(0, 6))]:
            ours = draw(st.booleans())
            rid = route_id(FLEET, model, host) if ours else f"litellm-{model}-{host}"
            deployment = portal_route(rid, model, draw(st.sampled_from(ADDRESSES)))
            if not ours:
                self.hand_keys(deployment)
            info = deployment["model_info"]
            info.update({TAG_FLEET: FLEET, TAG_HOST: host, TAG_DIGEST: "0" * 16})
            source = draw(st.sampled_from([None, None, SOURCE, OTHER_SOURCE]))
            if source:
                info[TAG_SOURCE] = source
            how = draw(st.sampled_from(["db", "db", "db", "unlisted"]))
            put(deployment, f"tagged {FLEET} for host {host} (source {source})", how)
        # Other fleets', untagged and config-file routes, in and outside the fleet's groups.
        others = st.tuples(
            st.sampled_from(["other_fleet", "untagged", "config", "unlisted_other_fleet", "team"]),
            st.sampled_from((*MODELS, *FOREIGN_MODELS)),
            st.sampled_from(ADDRESSES),
        )
        for index, (kind, model, address) in enumerate(draw(st.lists(others, max_size=6))):
            deployment = portal_route(f"{kind}-{index}", model, address)
            if kind.endswith("other_fleet"):
                deployment["model_info"].update({TAG_FLEET: OTHER_FLEET, TAG_HOST: "a"})
            if kind == "team":  # LiteLLM's team model, listed under the group's public name
                deployment["model_info"].update(TEAM_INFO)
                if draw(st.booleans()):
                    deployment["model_info"].update(
                        {TAG_FLEET: FLEET, TAG_HOST: draw(st.sampled_from(HOSTS))}
                    )
            how = {"config": "config", "unlisted_other_fleet": "unlisted"}.get(kind, "db")
            put(deployment, f"{kind} in {model}", how)


def _drift(draw: Draw, deployment: dict[str, Any], drift: str) -> tuple[str, str]:
    """A hand edit of a live route; returns the (section, top-level key) it changed."""
    params, info = deployment["litellm_params"], deployment["model_info"]
    if drift == "address":
        moved = [a for a in ADDRESSES if a != params["api_base"]]
        params["api_base"] = draw(st.sampled_from(moved))
        return "litellm_params", "api_base"
    if drift == "param_changed":
        key = draw(st.sampled_from(sorted(PARAM_VALUES)))
        params[key] = draw(PARAM_VALUES[key])
        return "litellm_params", key
    if drift == "param_added":
        params["max_parallel_requests"] = draw(st.integers(1, 9))
        return "litellm_params", "max_parallel_requests"
    if drift == "param_missing":
        key = draw(st.sampled_from(sorted(set(params) - {"model", "api_base"}) or ["model"]))
        if key != "model":
            del params[key]
        return "litellm_params", key
    if drift == "info_changed":
        key = draw(st.sampled_from(sorted(INFO_VALUES)))
        info[key] = draw(INFO_VALUES[key])
        return "model_info", key
    deployment["model_name"] = draw(st.sampled_from(elsewhere(deployment["model_name"])))
    return "", "model_name"


def elsewhere(model: str) -> list[str]:
    """Model groups other than this one, declared by the fleet or not."""
    return [m for m in (*MODELS, *FOREIGN_MODELS) if m != model]
