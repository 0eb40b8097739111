"""Replacements (issue 15, deliverable 7) beyond what a plan case shows: what a replacement
carries leaves the record of what fleet.yaml renders alone (so the next plan converges), and
apply still deletes a replaced route only once its replacement is listed (the group's deletes
wait), for a plan the rails now let through without --force. apply_plan runs on a transport
that answers from memory; the real proxy is in tests/test_compare_live.py and
tests/test_ownership_live.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import yaml

from sync.core.plan import Create, Delete
from sync.core.planner import make_plan
from sync.core.render import TAG_DIGEST, TAG_PATHS, Route, with_generation
from sync.core.safety import refusals
from sync.live.answers import parse_route
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient

from .support.owner import owner_of
from .test_plan_cases import plan_for, rendered

CASES = Path(__file__).parent / "cases" / "plan"
POD = "http://127.0.0.1:4001"


def case(name: str) -> dict[str, Any]:
    path = next(CASES.glob(f"{name}-*.yaml"))
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def test_carried_keys_leave_the_record_and_digest_as_fleet_yaml_renders_them() -> None:
    data = case("27")
    plan, _ = plan_for(data)
    (create,) = [c for c in plan.changes if isinstance(c, Create)]
    fleet, desired = rendered(data["fleet"], None)
    (route,) = desired.values()
    as_rendered = with_generation(route, 2)
    assert create.route.litellm_params == {
        **as_rendered.litellm_params,
        "rpm": 5,
        "api_version": "2024-06-01",
    }
    assert create.route.model_info == as_rendered.model_info  # digest and record untouched
    assert TAG_DIGEST in create.route.model_info and TAG_PATHS in create.route.model_info
    # Applied and listed as LiteLLM lists it: the next plan is empty.
    listed = parse_route(create.route.deployment())
    assert listed is not None
    assert make_plan(fleet, [route], [listed]).empty


class Proxy:
    """POST /model/new and /model/delete answered 200; the listing shows the created routes
    only once `serving` is set (until then the router has not loaded them)."""

    def __init__(self, live: list[Route]) -> None:
        self.rows = {r.id: r.deployment() for r in live}
        self.serving = False
        self.deleted: list[str] = []
        self.lock = threading.Lock()

    def answer(self, request: httpx.Request) -> httpx.Response:
        body: dict[str, Any] = httpx.Response(200, content=request.content or b"{}").json()
        with self.lock:
            if request.url.path == "/model/new":
                self.rows[body["model_info"]["id"]] = {**body, "new": True}
                return httpx.Response(200, json={})
            if request.url.path == "/model/delete":
                self.deleted.append(body["id"])
                self.rows.pop(body["id"], None)
                return httpx.Response(200, json={})
            entries = [
                {k: v for k, v in row.items() if k != "new"}
                for row in self.rows.values()
                if self.serving or not row.get("new")
            ]
        return httpx.Response(200, json={"data": entries, "total_count": len(entries)})


def test_a_replacement_still_waits_for_its_create_to_be_listed() -> None:
    """12 routes replaced to remove one model_info key pass the rails (none is a route lost);
    while the router does not list the new routes, not one old route is deleted."""
    data = case("29")
    plan, max_prune = plan_for(data)
    assert refusals(plan, max_prune) == ()
    deletes = [c for c in plan.changes if isinstance(c, Delete)]
    assert len(deletes) == 12 and all(d.replaced_by and not d.prune for d in deletes)
    live = [d.route for d in deletes]

    stuck = Proxy(live)
    with LiteLLMClient([POD], "k", transport=httpx.MockTransport(stuck.answer)) as client:
        result = apply_plan(
            plan, client, owner_of(plan.fleet), confirm_timeout=0, sleep=lambda _: None
        )
    assert stuck.deleted == []
    assert {o.status for o in result.outcomes if o.change.action == "delete"} == {"skipped"}
    assert {o.status for o in result.outcomes if o.change.action == "create"} == {"unconfirmed"}

    serving = Proxy(live)
    serving.serving = True
    with LiteLLMClient([POD], "k", transport=httpx.MockTransport(serving.answer)) as client:
        result = apply_plan(
            plan, client, owner_of(plan.fleet), confirm_timeout=5, sleep=lambda _: None
        )
    assert result.complete, [(o.change.id, o.status, o.detail) for o in result.outcomes]
    assert sorted(serving.deleted) == sorted(d.id for d in deletes)
