"""Plans on plain data: each tests/cases/plan/*.yaml holds a fleet, the live routes a proxy would
list, and the expected plan (pyinfra style: inputs, mocked live facts, expected output).

A case may also say `source:` (the source the command line resolved, passed in as data),
`take_over: true` and `litellm_version:` (the proxy's release; default: none known); a live
entry may say `holds: model/host` (it carries that desired route's id), `as_id: ID` (a rendered
route under LiteLLM's id: one the fleet adopted earlier) and `unlisted: true` (stored by
LiteLLM, not listed by its router). `expect.absent` lists what the plan must not say."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from sync.core.plan import Change, Create, Delete, Plan, Update
from sync.core.planner import NOT_CREATED, make_plan
from sync.core.render import Route, render, with_generation, with_id
from sync.core.safety import refusals
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.live.answers import parse_route
from sync.report.redaction import plan_json
from sync.report.text import IGNORED_SHOWN, plan_text

CASES = sorted((Path(__file__).parent / "cases" / "plan").glob("*.yaml"))
# What LiteLLM 1.108.7 adds to every entry of /v2/model/info: its boolean defaults in
# litellm_params, and in model_info bookkeeping plus a sample of the ~200 cost-map fields.
PARAM_DEFAULTS = {
    "allow_client_keepalive_override": False,
    "merge_reasoning_content_in_choices": False,
    "use_in_pass_through": False,
    "use_litellm_proxy": False,
    "use_xai_oauth": False,
}
ENRICHMENT = {
    "db_model": True,
    "blocked": False,  # every database route: its pause flag
    "key": "hosted_vllm/org/m",
    "litellm_provider": "hosted_vllm",
    "max_tokens": None,
    "input_cost_per_token": None,
    "supported_openai_params": ["temperature"],
    "pricing_overrides": [],
}


# What /v2/model/info never returns, and how LiteLLM's masker and env resolution show the rest.
POPPED = ("api_key", "client_secret", "vertex_credentials", "aws_access_key_id")
MASKED = frozenset({"key", "token", "auth", "authorization", "secret", "access", "credential"})


def as_listed(params: dict[str, Any]) -> dict[str, Any]:
    """litellm_params as LiteLLM 1.108.7 lists them: credentials dropped, top-level references
    resolved (to a stand-in value), values under credential-like keys masked, defaults added."""

    def mask(value: Any, hide: bool) -> Any:
        if isinstance(value, dict):
            return {k: mask(v, sensitive(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v, hide) for v in value]
        return "****" if hide else value

    def sensitive(key: str) -> bool:
        words = set(key.lower().replace("-", "_").split("_"))
        return "cost" not in words and bool(words & MASKED)

    out = {k: v for k, v in params.items() if k not in POPPED}
    for key, value in out.items():
        if isinstance(value, str) and value.startswith("os.environ/"):
            out[key] = "resolved-" + value.removeprefix("os.environ/")
    return {**mask(out, False), **PARAM_DEFAULTS}


def _desired(desired: dict[str, Route], name: str) -> Route:
    model, host = name.split("/")
    return next(r for r in desired.values() if r.model_name == model and r.host == host)


def live_entry(spec: dict[str, Any], desired: dict[str, Route]) -> dict[str, Any]:
    """A live entry: given as is; or one holding the id of a desired route (`holds`); or
    `rendered: model/host` from the fleet (or from `applied`, the fleet.yaml applied before;
    under `generation` N of its id, or under `as_id`), then hand edits (`litellm_params`,
    `model_info`)."""
    spec = {k: v for k, v in spec.items() if k != "unlisted"}
    if "holds" in spec:
        entry = {k: v for k, v in spec.items() if k != "holds"}
        entry["model_info"] = {**entry["model_info"], "id": _desired(desired, spec["holds"]).id}
        return entry
    if "rendered" not in spec:
        return spec
    route = _desired(desired, spec["rendered"])
    if "as_id" in spec:
        entry = with_id(route, spec["as_id"]).deployment()
    else:
        entry = with_generation(route, spec.get("generation", 1)).deployment()
    if spec.get("enrich"):  # as LiteLLM lists it
        entry["litellm_params"] = as_listed(entry["litellm_params"])
        entry["model_info"].update(ENRICHMENT)
    else:
        entry["litellm_params"].pop("api_key", None)  # LiteLLM never returns it
    entry["litellm_params"].update(spec.get("litellm_params", {}))
    entry["model_info"].update(spec.get("model_info", {}))
    if spec.get("stale_digest"):
        entry["model_info"]["fleet_sync_digest"] = "0000000000000000"
    return entry


def describe(change: Change) -> list[str]:
    if isinstance(change, Delete):
        head = f"delete {change.id}" + (" replaced" if change.replaced_by else "")
        listed = [] if change.listed else [f"{head} not listed"]
        reason, note, _ = change.reason.partition(NOT_CREATED)
        noted = [f"{head} not created by fleet-sync"] if note else []
        dropped = [f"{head} may drop {p}" for p in change.may_drop]
        return [head, f"{head}: {reason}", *listed, *noted, *dropped]
    head = f"{change.action} {change.model_name}/{change.host}"
    left: list[str] = []
    if isinstance(change, Create) and change.replaces:
        head += " replacing"
        left = [f"{head} {change.replaces}"]
        left += [f"{head} carries {p}" for p in change.carries]
        left += [f"{head} drops {p}" for p in change.drops]
        left += [f"{head} may drop {p}" for p in change.may_drop]
        left += [f"{head} not created by fleet-sync"] if change.foreign else []
    listed = [f"{head} not listed"] if isinstance(change, Update) and not change.listed else []
    paused = [f"{head} paused"] if change.route.paused else []
    return (
        [head, f"{head} id {change.id}", *listed, *left, *paused]
        + [f"{head} {d.path}" for d in change.diff]
        + [f"{head} {d.path}: {d.before} -> {d.after}" for d in change.diff]
    )


def rendered(document: dict[str, Any], source: str | None) -> tuple[Fleet, dict[str, Route]]:
    fleet = fleet_from_doc(parse_yaml(yaml.safe_dump(document), "fleet.yaml"), "fleet.yaml")
    if source and not fleet.source:
        fleet = replace(fleet, source=source)
    return fleet, {r.id: r for r in render(fleet)}


def plan_for(case: dict[str, Any]) -> tuple[Plan, float]:
    fleet, desired = rendered(case["fleet"], case.get("source"))
    _, applied = rendered(case.get("applied", case["fleet"]), case.get("source"))
    listed: list[Route] = []
    unlisted: list[Route] = []
    for spec in case["live"]:
        route = parse_route(live_entry(spec, applied if spec.get("applied") else desired))
        if route is not None:
            (unlisted if spec.get("unlisted") else listed).append(route)
    plan = make_plan(
        fleet,
        list(desired.values()),
        listed,
        unlisted,
        case.get("take_over", False),
        case.get("litellm_version"),
    )
    return plan, fleet.max_prune_percent


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_plan_case(path: Path) -> None:
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    plan, max_prune = plan_for(case)
    expect = case["expect"]
    described = [line for change in plan.changes for line in describe(change)]
    for wanted in expect["changes"]:
        assert wanted in described, f"{wanted!r} not in {described}"
    for unwanted in expect.get("absent", []):
        assert unwanted not in described, f"{unwanted!r} in {described}"
    assert len(plan.changes) == expect.get("count", len(expect["changes"])), described
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
    assert set(body) >= {"version", "fleet", "hash", "changes", "ignored"}
    change = body["changes"][0]
    assert set(change) >= {"action", "id", "model_name", "host", "before", "after", "diff"}
    assert set(body["ignored"][0]) == {"id", "model_name", "reason"}


def test_a_resolved_or_masked_live_value_is_never_in_a_plan() -> None:
    """Where fleet.yaml writes a reference, LiteLLM lists what it resolves to (here
    resolved-NAME); plans show the reference and never the live value, edited or not."""
    case = yaml.safe_load((CASES[0].parent / "14-references-and-masked-values.yaml").read_text())
    for spec in case["live"]:
        spec["litellm_params"]["extra_headers"] = {"X-Team-Key": "****", "X-Team": "hand"}
    case["applied"] = json.loads(json.dumps(case["fleet"]))
    case["applied"]["defaults"]["litellm_params"]["organization"] = "os.environ/OLD_ORG"
    case["live"][0]["applied"] = True
    plan, _ = plan_for(case)
    body = plan.unredacted_json()
    text = json.dumps(body) + plan_text(plan)
    assert "resolved-" not in text and "****" not in text
    assert "os.environ/ORG" in text and "os.environ/NOTE" in text  # a reference is not a secret
    (first, *_) = body["changes"]
    organization = [d for d in first["diff"] if d["path"] == "litellm_params.organization"]
    assert organization == [
        {
            "path": "litellm_params.organization",
            "before": "(not shown: LiteLLM masks or resolves it)",
            "after": "os.environ/ORG",
            "checked": "digest",
        }
    ]
    assert "(checked through the digest)" in plan_text(plan)


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
    assert len(plan.unredacted_json()["ignored"]) == len(plan.ignored)  # JSON keeps every one
