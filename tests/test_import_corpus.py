"""Import of every LiteLLM parameter in the compare corpus (tests/cases/compare/corpus.yaml),
several hosts per group and priced routes, on plain data: each case becomes the routes LiteLLM
would list (tests/support/memproxy.py: coercion, masking, resolution, its defaults and enrichment;
here also its copy of litellm_params prices into model_info), and import writes a file that
validates, sets only values equal to the live ones, and names every other live value as kept on the
routes. Then the round trip through the plan core: only in-place adoptions, every id kept, nothing
the routes hold (api_key included) lost, and the next plan empty."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sync.core.planner import make_plan
from sync.core.render import Route, render
from sync.edit.importer import RESERVED, Imported, import_fleet
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.litellm.convergence import PRICING
from sync.litellm.normalise import same
from sync.litellm.owned import PARAM_DEFAULTS

from .support.memproxy import MemProxy, apply, resolved

CORPUS: dict[str, dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "cases" / "compare" / "corpus.yaml").read_text(encoding="utf-8")
)
PRICES = {"input_cost_per_token": 1e-06, "output_cost_per_token": 2.5e-07}


def priced(route: Route) -> Route:
    """As LiteLLM 1.108.7 lists a route whose litellm_params carry prices: copied into
    model_info, named in pricing_overrides (the real proxy: tests/test_import_live.py)."""
    prices = {k: v for k, v in route.litellm_params.items() if PRICING.search(k)}
    if not prices:
        return route
    info = {**route.model_info, **prices, "pricing_overrides": sorted(prices)}
    return Route(route.id, route.model_name, route.litellm_params, info)


def portal(cases: dict[str, dict[str, Any]]) -> MemProxy:
    """Untagged routes as a runtime portal leaves them: three hosts per case, the third with a
    value of its own, and a priced group; api_key literal where the case has one."""
    proxy = MemProxy()
    for n, (name, case) in enumerate(sorted(cases.items()), start=1):
        for i in range(3):
            params = {
                "model": f"hosted_vllm/org/{name}",
                "api_base": f"http://10.1.{n}.{i}:8000/v1",
                **copy.deepcopy(case.get("litellm_params", {})),
                **({"api_key": f"literal-upstream-key-{n}-{i}"} if "api_key" in case else {}),
                **({"weight": 3} if i == 2 else {}),
            }
            info = {"id": f"portal-{name}-{i}", **copy.deepcopy(case.get("model_info", {}))}
            proxy.create({"model_name": name, "litellm_params": params, "model_info": info})
    for i in range(2):
        params = {"model": "openai/priced", "api_base": f"http://10.2.0.{i}:9000/v1", **PRICES}
        proxy.create(
            {"model_name": "priced", "litellm_params": params, "model_info": {"id": f"p-{i}"}}
        )
    return proxy


def listing(proxy: MemProxy) -> list[Route]:
    return [priced(r) for r in proxy.listing()]


def fleet_of(imported: Imported) -> Fleet:
    return fleet_from_doc(parse_yaml(imported.text, "fleet.yaml"), "fleet.yaml")


def kept_paths(imported: Imported, model: str, host: str) -> set[str]:
    return {k.path for k in imported.kept.get(model, ()) if not k.hosts or host in k.hosts}


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_each_corpus_case_imports_to_a_fleet_that_validates(case: str) -> None:
    proxy = portal({case: CORPUS[case]})
    live = listing(proxy)
    imported = import_fleet(live, "f")
    assert imported.left_out == () and imported.routes == 5
    fleet = fleet_of(imported)  # validates
    by_address = {r.litellm_params["api_base"]: r for r in live}
    for desired in render(fleet):
        route = by_address[desired.litellm_params["api_base"]]
        host = desired.host or ""
        for key, value in desired.litellm_params.items():  # what the file sets is what is live
            assert same(value, route.litellm_params[key]), (case, key)
        for key, value in desired.model_info.items():
            if not key.startswith("fleet_sync_") and key != "id":
                assert same(value, route.model_info[key]), (case, key)
        kept = kept_paths(imported, route.model_name, host)
        for key in route.litellm_params:  # and every other live value is named as kept
            written = key in desired.litellm_params or key in RESERVED
            default = PARAM_DEFAULTS.get(key, ...) == route.litellm_params[key]
            assert written or default or f"litellm_params.{key}" in kept, (case, key)
    assert "resolved-" not in imported.text and "literal-upstream-key" not in imported.text


def test_the_whole_corpus_at_once_validates_and_says_what_it_keeps() -> None:
    imported = import_fleet(listing(portal(CORPUS)), "f")
    fleet = fleet_of(imported)
    assert imported.left_out == () and len(fleet.models) == len(CORPUS) + 1
    for value in (resolved("UPSTREAM_ORG_SECRET"), resolved("UPSTREAM_DSN"), resolved("HOME")):
        assert value not in imported.text
    priced_model = yaml.safe_load(imported.text)["models"]["priced"]
    assert priced_model["litellm_params"] == PRICES and "model_info" not in priced_model
    assert "input_cost_per_token: 1.0e-06" in imported.text
    kept = {k.path: k for k in imported.kept["env-references"]}
    assert set(kept) == {"litellm_params.organization", "litellm_params.api_version"}
    assert kept["litellm_params.organization"].hosts == ()  # every host


def test_import_plan_apply_adopts_in_place_and_loses_nothing() -> None:
    """import → plan → apply on the in-memory proxy: every change an in-place update of an
    imported route, each route still holding everything it held (api_key, masked and resolved
    values) plus fleet-sync's tags, and the next plan empty."""
    proxy = portal(CORPUS)
    before = copy.deepcopy(proxy.rows)
    fleet = fleet_of(import_fleet(listing(proxy), "f"))
    plan = make_plan(fleet, render(fleet), listing(proxy), litellm_version=proxy.version)
    assert {c.action for c in plan.changes} == {"update"}
    assert {c.id for c in plan.changes} == set(before)
    apply(proxy, plan)
    assert set(proxy.rows) == set(before)  # every id kept
    for rid, row in before.items():
        after = proxy.rows[rid]
        assert after.litellm_params == row.litellm_params, rid  # api_key and all, untouched
        assert {k: v for k, v in after.model_info.items() if not k.startswith("fleet_sync_")} == (
            row.model_info
        )
        assert after.model_info["fleet_sync_fleet"] == "f"
    assert make_plan(fleet, render(fleet), listing(proxy)).changes == ()
