"""Plans on plain data: each tests/cases/plan/*.yaml holds a fleet, the live routes a proxy would
list, and the expected plan (pyinfra style: inputs, mocked live facts, expected output).

A case may also say `source:` (the source the command line resolved, passed in as data) and
`take_over: true`; a live entry may say `holds: model/host` (it carries that desired route's
id) and `unlisted: true` (stored by LiteLLM, not listed by its router)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from sync.fleet import fleet_from_doc
from sync.litellm import parse_route
from sync.normalise import PARAM_DEFAULTS
from sync.plan import Change, Delete, Plan, Update, make_plan
from sync.redaction import plan_json
from sync.render import Route, render
from sync.report import IGNORED_SHOWN, plan_text
from sync.safety import refusals
from sync.yamlmarks import parse_yaml

CASES = sorted((Path(__file__).parent / "cases" / "plan").glob("*.yaml"))
# What LiteLLM 1.108.7 adds to every entry of /v2/model/info (a sample of the ~200 null fields).
ENRICHMENT = {
    "db_model": True,
    "key": "hosted_vllm/org/m",
    "litellm_provider": "hosted_vllm",
    "max_tokens": None,
    "input_cost_per_token": None,
    "supported_openai_params": ["temperature"],
    "pricing_overrides": [],
}


def _desired(desired: dict[str, Route], name: str) -> Route:
    model, host = name.split("/")
    return next(r for r in desired.values() if r.model_name == model and r.host == host)


def live_entry(spec: dict[str, Any], desired: dict[str, Route]) -> dict[str, Any]:
    spec = {k: v for k, v in spec.items() if k != "unlisted"}
    if "holds" in spec:
        entry = {k: v for k, v in spec.items() if k != "holds"}
        entry["model_info"] = {**entry["model_info"], "id": _desired(desired, spec["holds"]).id}
        return entry
    if "rendered" not in spec:
        return spec
    route = _desired(desired, spec["rendered"])
    entry = route.deployment()
    entry["litellm_params"].pop("api_key", None)  # LiteLLM never returns it
    entry["litellm_params"].update(spec.get("litellm_params", {}))
    if spec.get("enrich"):
        entry["litellm_params"].update(PARAM_DEFAULTS)
        entry["model_info"].update(ENRICHMENT)
    if spec.get("stale_digest"):
        entry["model_info"]["fleet_sync_digest"] = "0000000000000000"
    entry["model_info"].update(spec.get("model_info", {}))
    return entry


def describe(change: Change) -> list[str]:
    if isinstance(change, Delete):
        head = f"delete {change.id}" + (" replaced" if change.replaced_by else "")
        listed = [] if change.listed else [f"{head} not listed"]
        return [head, f"{head}: {change.reason}", *listed]
    head = f"{change.action} {change.model_name}/{change.host}"
    if not isinstance(change, Update):
        return [head]
    listed = [] if change.listed else [f"{head} not listed"]
    return (
        [head, *listed]
        + [f"{head} {d.path}" for d in change.diff]
        + [f"{head} {d.path}: {d.before} -> {d.after}" for d in change.diff]
    )


def plan_for(case: dict[str, Any]) -> tuple[Plan, float]:
    doc = parse_yaml(yaml.safe_dump(case["fleet"]), "fleet.yaml")
    fleet = fleet_from_doc(doc, "fleet.yaml")
    if case.get("source") and not fleet.source:
        fleet = replace(fleet, source=case["source"])
    desired = {r.id: r for r in render(fleet)}
    listed: list[Route] = []
    unlisted: list[Route] = []
    for spec in case["live"]:
        route = parse_route(live_entry(spec, desired))
        if route is not None:
            (unlisted if spec.get("unlisted") else listed).append(route)
    plan = make_plan(fleet, list(desired.values()), listed, unlisted, case.get("take_over", False))
    return plan, fleet.max_prune_percent


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_plan_case(path: Path) -> None:
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    plan, max_prune = plan_for(case)
    expect = case["expect"]
    described = [line for change in plan.changes for line in describe(change)]
    for wanted in expect["changes"]:
        assert wanted in described, f"{wanted!r} not in {described}"
    assert len(plan.changes) == len(expect["changes"]), described
    ignored = {i.route.id: i.reason for i in plan.ignored}
    assert set(ignored) == set(expect["ignored"])
    for rid, reason in expect["ignored"].items():
        assert reason in ignored[rid]
    conflicts = {f"{c.desired.model_name}/{c.desired.host}": c.reason for c in plan.conflicts}
    assert set(conflicts) == set(expect.get("conflicts", {})), conflicts
    for name, reason in expect.get("conflicts", {}).items():
        assert reason in conflicts[name], conflicts[name]
    assert plan.empty == (not expect["changes"] and not expect.get("conflicts"))
    refused = refusals(plan, max_prune)
    assert len(refused) == len(expect.get("refused", [])), refused
    for wanted, got in zip(expect.get("refused", []), refused, strict=True):
        assert wanted in got and "--force" in got


def test_plan_hash_is_stable_and_moves_with_live_state() -> None:
    case = yaml.safe_load(CASES[1].read_text(encoding="utf-8"))
    first, _ = plan_for(case)
    again, _ = plan_for(case)
    assert first.hash == again.hash and first.hash.startswith("sha256:")
    case["live"][0]["litellm_params"]["api_base"] = "http://216.243.220.245:16644/v1"
    moved, _ = plan_for(case)
    assert moved.hash != first.hash


def test_plan_json_has_the_contract_shape_and_no_secret() -> None:
    case = yaml.safe_load(CASES[2].read_text(encoding="utf-8"))
    case["live"][1]["litellm_params"]["api_key"] = "sk-live-secret-123"
    case["live"][1]["litellm_params"]["aws_secret_access_key"] = "AKIA-very-secret"
    case["live"][1]["litellm_params"]["extra_headers"] = {"Authorization": "Bearer sk-nested"}
    case["live"][1]["litellm_params"]["vertex_credentials"] = "os.environ/VERTEX_CREDS"
    plan, _ = plan_for(case)
    body = plan_json(plan)  # what every output shows (the core compares raw values)
    text = json.dumps(body)
    assert "sk-live-secret-123" not in text and "AKIA-very-secret" not in text
    assert "sk-nested" not in text
    assert "os.environ/VERTEX_CREDS" in text  # a reference is not a secret
    assert set(body) >= {"version", "fleet", "hash", "changes", "ignored"}
    change = body["changes"][0]
    assert set(change) >= {"action", "id", "model_name", "host", "before", "after", "diff"}
    assert set(body["ignored"][0]) == {"id", "model_name", "reason"}


def test_text_plan_lists_a_bounded_number_of_ignored_routes() -> None:
    case = yaml.safe_load(CASES[2].read_text(encoding="utf-8"))
    others = [
        {"model_name": "x", "litellm_params": {"model": "openai/x"}, "model_info": {"id": f"x-{i}"}}
        for i in range(50)
    ]
    case["live"] += others
    plan, _ = plan_for(case)
    text = plan_text(plan)
    assert f"ignored ({len(plan.ignored)}):" in text
    assert f"... and {len(plan.ignored) - IGNORED_SHOWN} more" in text
    assert (
        len([line for line in text.splitlines() if line.startswith("    x (x-")]) <= IGNORED_SHOWN
    )
    assert len(plan.to_json()["ignored"]) == len(plan.ignored)  # JSON keeps every one
