"""targets: in fleet.yaml (issue 17, the fleet part), on plain data: what each target sees.

Each tests/cases/targets/*.yaml holds a fleet with targets: and, per target in promotion order,
the models it sees and the exact model_list it renders (the invalid ones are in
tests/cases/invalid/9[5-9]-targets-*.yaml, read by tests/test_validate_corpus.py). Plus the
properties the issue promises: a host is one identity on every target (the same id and tags),
an overlay shows only on its target, a limited host only on its targets, and a fleet whose
targets carry no overlay renders on each exactly its routes of the hosts that go there.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sync.core.render import TAG_DIGEST, TAG_PATHS, Route, render
from sync.fleet.model import Fleet, load_fleet, schema
from sync.fleet.problems import FleetError
from sync.fleet.promotion import cycles, promotion_order
from sync.fleet.targets import Target, for_target

from .support.fleetgen import Draw, fleet_docs, load

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "cases" / "targets").glob("*.yaml"))
TARGETS = ("dev", "staging", "prod")


def load_case(path: Path, tmp_path: Path) -> tuple[Fleet, dict[str, Any]]:
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(case, dict) and set(case) == {"fleet", "expected"}, path.name
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump(case["fleet"], sort_keys=False), encoding="utf-8")
    return load_fleet(fleet_file), case["expected"]


def identities(routes: tuple[Route, ...]) -> dict[tuple[str, str | None], Route]:
    return {(r.model_name, r.host): r for r in routes}


def tags(route: Route) -> dict[str, Any]:
    """The id and the tags that say whose route it is (not the digest and record of values)."""
    return {k: v for k, v in route.model_info.items() if k.startswith("fleet_sync_") or k == "id"}


def who(route: Route) -> dict[str, Any]:
    return {k: v for k, v in tags(route).items() if k not in {TAG_DIGEST, TAG_PATHS}}


# --- cases as data ----------------------------------------------------------------------------


def test_cases_present() -> None:
    assert {p.name.split("-", 1)[1] for p in CASES} >= {
        "precedence.yaml",
        "limits.yaml",
        "promotion-order.yaml",
    }


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_target_case(path: Path, tmp_path: Path) -> None:
    fleet, expected = load_case(path, tmp_path)
    assert [t.name for t in fleet.targets] == list(expected)  # promotion order
    whole = identities(render(fleet))
    for name, sees in expected.items():
        projected = for_target(fleet, name)
        assert projected.targets == ()
        assert [m.name for m in projected.models] == sees["models"]
        routes = render(projected)
        assert [r.deployment() for r in routes] == sees["model_list"]
        for route in routes:
            # One identity everywhere: the id and ownership tags of the fleet without targets.
            assert who(route) == who(whole[route.model_name, route.host])


def test_precedence_each_overlay_right_after_its_level(tmp_path: Path) -> None:
    fleet, _ = load_case(CASES[0], tmp_path)
    staging, prod = (identities(render(for_target(fleet, n))) for n in ("staging", "prod"))
    host, plain = ("qwen3-8b", "host-overlay"), ("qwen3-8b", "no-host-overlay")
    # defaults' overlay beats defaults, the model beats defaults' overlay (tpm 5000 over 2000),
    # the model's overlay beats the model, the host beats the model's overlay, and so on.
    assert prod[plain].litellm_params["tpm"] == 5000
    assert prod[plain].litellm_params["rpm"] == 600
    assert prod[plain].litellm_params["api_key"] == "os.environ/PROD_DEFAULT_KEY"
    assert prod[host].litellm_params["tpm"] == 7000
    assert prod[host].litellm_params["weight"] == 3
    assert prod[host].litellm_params["api_key"] == "os.environ/PROD_HOST_KEY"
    # Nothing of prod's overlays on staging: it sees the fleet as written.
    assert {k: r.deployment() for k, r in staging.items()} == {
        k: r.deployment() for k, r in identities(render(fleet)).items()
    }


def test_a_limited_host_is_only_on_its_target(tmp_path: Path) -> None:
    fleet, _ = load_case(CASES[1], tmp_path)
    eu, us = (identities(render(for_target(fleet, n))) for n in ("eu", "us"))
    assert ("everywhere", "eu-only") in eu and ("everywhere", "eu-only") not in us
    assert ("us-model", "h") in us and ("us-model", "h") not in eu
    assert eu["everywhere", "both"] == us["everywhere", "both"]  # no overlay: the same route
    assert "eu-hosts-only" not in for_target(fleet, "us").model_names
    assert "no-hosts-yet" in for_target(fleet, "us").model_names


def test_an_unknown_target_is_a_value_error(tmp_path: Path) -> None:
    fleet, _ = load_case(CASES[0], tmp_path)
    with pytest.raises(ValueError, match=r"unknown target 'qa' \(declared: staging, prod\)"):
        for_target(fleet, "qa")
    with pytest.raises(ValueError, match=r"declared: none"):
        for_target(load_fleet(ROOT / "fleet.yaml"), "prod")


def test_a_fleet_without_targets_has_none() -> None:
    fleet = load_fleet(ROOT / "fleet.yaml")
    assert fleet.targets == ()
    assert all(m.targets is None and all(h.targets is None for h in m.hosts) for m in fleet.models)
    assert fleet.defaults.targets is None


def test_targets_as_declared(tmp_path: Path) -> None:
    fleet, _ = load_case(CASES[0], tmp_path)
    assert fleet.targets == (
        Target("staging", "http://10.0.0.1:4000", None, None, ()),
        Target("prod", "os.environ/PROD_URL", "os.environ/PROD_KEY", None, ("staging",)),
    )
    fleet, _ = load_case(CASES[1], tmp_path)
    assert fleet.targets[1].proxy_url == ("http://10.0.0.2:4000", "http://10.0.0.3:4000")


@pytest.mark.parametrize(
    ("after", "order"),
    [
        ({"a": [], "b": [], "c": []}, ["a", "b", "c"]),
        ({"c": ["a"], "b": [], "a": []}, ["b", "a", "c"]),
        ({"prod": ["staging"], "staging": ["dev"], "dev": []}, ["dev", "staging", "prod"]),
        ({"a": ["b"], "b": ["a"], "c": []}, ["c"]),
    ],
)
def test_promotion_order(after: dict[str, list[str]], order: list[str]) -> None:
    placed, held = promotion_order(after)
    assert placed == order
    assert held == [n for n in after if n not in order]


@pytest.mark.parametrize(
    ("after", "found"),
    [
        ({"a": ["b"], "b": ["a"]}, [["a", "b"]]),
        ({"x": [], "b": ["c"], "c": ["a"], "a": ["b"], "d": ["a"]}, [["b", "c", "a"]]),
        # Two knots, in declaration order; the second has two cycles, one is named.
        (
            {"p": ["q"], "q": ["p"], "r": ["s"], "s": ["r", "t"], "t": ["s"]},
            [["p", "q"], ["r", "s"]],
        ),
        ({"a": ["a"], "b": []}, []),  # after itself: said on its own, not as a cycle
    ],
)
def test_cycles(after: dict[str, list[str]], found: list[list[str]]) -> None:
    assert cycles(after) == found


def test_promotion_order_of_thousands_of_targets() -> None:
    """A pull request's fleet.yaml may declare tens of thousands of targets: the order and its
    cycles are found in one pass (a search per step would not end in any useful time)."""
    n = 20_000
    chain = {f"t{i}": [f"t{i + 1}"] if i + 1 < n else [] for i in range(n)}  # written backwards
    assert promotion_order(chain) == ([f"t{i}" for i in reversed(range(n))], [])
    ring = {f"t{i}": [f"t{(i + 1) % n}"] for i in range(n)}
    (cycle,) = cycles(ring)
    assert len(cycle) == n and cycle[:2] == ["t0", "t1"]
    pairs = {f"t{i}": [f"t{i ^ 1}"] for i in range(n)}
    assert len(cycles(pairs)) == n // 2


# --- validation not in the corpus: sizes, the schema's help -----------------------------------

TWO_TARGETS = """\
version: 1
fleet: gpu-fleet
targets:
  staging: {proxy_url: "http://10.0.0.1:4000"}
  prod: {proxy_url: "http://10.0.0.2:4000"}
models:
  qwen3-8b:
    served_model: Qwen/Qwen3-8B
    model_info: {note: NOTE}
    targets:
      staging: {}
      prod: {model_info: {big: BIG}}
    hosts:
      - name: runpod-a
        api_base: http://103.196.86.105:17140/v1
"""


def test_a_route_too_large_on_one_target_only(tmp_path: Path) -> None:
    """An overlay that makes one target's route too large to read back is refused there,
    located at the host; the base route (every other target's) is fine."""
    path = tmp_path / "fleet.yaml"
    text = TWO_TARGETS.replace("NOTE", "x" * 2048).replace("BIG", "y" * 31 * 1024)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FleetError) as caught:
        load_fleet(path, "fleet.yaml")
    (problem,) = caught.value.problems
    assert (problem.line, problem.col) == (14, 9)
    assert problem.message.startswith(
        "models.qwen3-8b.hosts[0]: on target 'prod': its route's litellm_params and model_info "
        "come to 33,"
    )
    # Without the overlay, the same fleet is valid.
    path.write_text(text.replace("y" * 31 * 1024, "small"), encoding="utf-8")
    assert [t.name for t in load_fleet(path).targets] == ["staging", "prod"]


@pytest.mark.parametrize("level", ["defaults", "host"])
def test_a_route_too_large_by_an_overlay_at_any_level(level: str, tmp_path: Path) -> None:
    """The overlay that passes the limit may sit on defaults or the host: each is counted
    (the model's overlay sets model_info.big: a defaults overlay of the same key would lose)."""
    big = "y" * 31 * 1024
    text = TWO_TARGETS.replace("NOTE", "x" * 2048).replace("BIG", "small")
    if level == "defaults":
        text = text.replace(
            "models:", f"defaults:\n  targets: {{prod: {{model_info: {{huge: {big}}}}}}}\nmodels:"
        )
    else:
        text += f"        targets: {{prod: {{litellm_params: {{big: {big}}}}}}}\n"
    path = tmp_path / "fleet.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FleetError) as caught:
        load_fleet(path, "fleet.yaml")
    (problem,) = caught.value.problems
    assert problem.message.startswith("models.qwen3-8b.hosts[0]: on target 'prod': its route's")


def test_a_route_too_large_everywhere_is_said_once(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    text = TWO_TARGETS.replace("NOTE", "x" * 33 * 1024).replace("BIG", "y")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FleetError) as caught:
        load_fleet(path, "fleet.yaml")
    (problem,) = caught.value.problems
    assert problem.message.startswith("models.qwen3-8b.hosts[0]: its route's litellm_params")


def described(node: Any, at: str = "") -> list[str]:
    """Paths of the schema's properties (and $defs) that an editor would show without help."""
    missing = []
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            if isinstance(value, dict) and "description" not in value and "$ref" not in value:
                missing.append(f"{at}/{key}")
            missing += described(value, f"{at}/{key}")
        for key, value in node.get("$defs", {}).items():
            if key in {"target", "target_name", "placement", "overlay"}:
                missing += [] if "description" in value else [f"$defs/{key}"]
                missing += described(value, f"$defs/{key}")
    return missing


def test_the_schema_describes_every_targets_key() -> None:
    """Editors show the schema's descriptions: every key of targets: has one."""
    tree = schema()
    assert "targets" in tree["properties"] and "description" in tree["properties"]["targets"]
    assert "description" in tree["properties"]["defaults"]["properties"]["targets"]
    assert described(tree) == []


# --- properties -------------------------------------------------------------------------------


@st.composite
def targeted_docs(draw: Draw) -> dict[str, Any]:
    """A generated fleet (tests/support/fleetgen.py) with targets:, each model and host limited
    (or not) to some of them, overlays empty."""
    doc: dict[str, Any] = draw(fleet_docs())
    names = draw(st.lists(st.sampled_from(TARGETS), min_size=1, unique=True))
    doc["targets"] = {
        name: {"proxy_url": f"http://10.9.0.{i}:4000", "after": names[:i][-1:]}
        for i, name in enumerate(names)
    }
    for model in doc["models"].values():
        chosen = draw(st.none() | st.lists(st.sampled_from(names), min_size=1, unique=True))
        if chosen is not None:
            model["targets"] = chosen if draw(st.booleans()) else {n: {} for n in chosen}
        for host in model["hosts"]:
            allowed = chosen or names
            mine = draw(st.none() | st.lists(st.sampled_from(allowed), min_size=1, unique=True))
            if mine is not None:
                host["targets"] = mine
    return doc


def goes(doc: dict[str, Any], model: str, host: str, target: str) -> bool:
    spec = doc["models"][model]
    entry = next(h for h in spec["hosts"] if h["name"] == host)
    return all(target in level.get("targets", [target]) for level in (spec, entry))


@given(targeted_docs())
def test_without_overlays_a_target_renders_the_fleet_restricted_to_it(doc: dict[str, Any]) -> None:
    fleet = load(doc)
    plain = copy.deepcopy(doc)
    for spec in [plain, *plain["models"].values()] + [
        h for m in plain["models"].values() for h in m["hosts"]
    ]:
        spec.pop("targets", None)
    whole = render(load(plain))
    assert render(fleet) == whole  # targets: changes nothing of what the fleet renders
    assert [t.name for t in fleet.targets] == list(doc["targets"])
    for target in doc["targets"]:
        mine = render(for_target(fleet, target))
        assert mine == tuple(r for r in whole if goes(doc, r.model_name, r.host or "", target))


OVERLAY = st.fixed_dictionaries(
    {},
    optional={
        "api_key": st.sampled_from(["os.environ/T_KEY_A", "os.environ/T_KEY_B"]),
        "litellm_params": st.fixed_dictionaries({}, optional={"rpm": st.integers(1, 900)}),
        "model_info": st.fixed_dictionaries({}, optional={"team": st.sampled_from(["a", "b"])}),
    },
)


@given(targeted_docs(), st.data())
def test_overlays_change_values_never_identity(doc: dict[str, Any], data: st.DataObject) -> None:
    """With overlays on any level, every target renders each of its hosts under the id and
    ownership tags the host has without targets:, and a target without any overlay renders
    exactly the routes of the fleet as written."""
    names = list(doc["targets"])
    overlaid = set(data.draw(st.lists(st.sampled_from(names), unique=True)))
    levels = [doc.setdefault("defaults", {})]
    for model in doc["models"].values():
        levels += [model, *model["hosts"]]
    for level in levels:
        for name in overlaid:
            overlay = data.draw(OVERLAY)
            placement = level.get("targets")
            if level is levels[0]:
                level.setdefault("targets", {})[name] = overlay
            elif isinstance(placement, dict) and name in placement:
                placement[name] = overlay
            elif isinstance(placement, list) and name in placement:
                level["targets"] = {n: (overlay if n == name else {}) for n in placement}
    if not doc["defaults"]:
        del doc["defaults"]
    fleet = load(doc)
    whole = identities(render(fleet))
    for name in names:
        seen = render(for_target(fleet, name))
        for route in seen:
            base = whole[route.model_name, route.host]
            assert who(route) == who(base), json.dumps([route.deployment(), base.deployment()])
            if name not in overlaid:
                assert route == base


def test_the_guide_targets_example_is_valid(tmp_path: Path) -> None:
    """The fleet.yaml guide's targets: example, as a whole fleet.yaml, is valid and does what its
    comments say: rpm 600 on prod only, the canary host on staging only, prod after staging."""
    guide = (ROOT / "docs" / "guides" / "fleet-yaml.md").read_text(encoding="utf-8")
    section = guide.split("## `targets:` — one fleet.yaml for several proxies", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "fleet.yaml"
    path.write_text("version: 1\nfleet: gpu-fleet\n" + block, encoding="utf-8")
    fleet = load_fleet(path)
    assert [t.name for t in fleet.targets] == ["staging", "prod"]
    staging, prod = (identities(render(for_target(fleet, n))) for n in ("staging", "prod"))
    assert set(staging) == {("qwen3.8-27b", "runpod-a"), ("qwen3.8-27b", "runpod-canary")}
    assert set(prod) == {("qwen3.8-27b", "runpod-a")}
    assert "rpm" not in staging["qwen3.8-27b", "runpod-a"].litellm_params
    assert prod["qwen3.8-27b", "runpod-a"].litellm_params["rpm"] == 600
    assert prod["qwen3.8-27b", "runpod-a"].litellm_params["timeout"] == 300
