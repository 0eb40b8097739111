"""Properties of the plan core on generated fleets and live states (tests/fleetgen.py), applied to
an in-memory LiteLLM (tests/memproxy.py). Hand-written cases (tests/cases/plan) show the
behaviour; these look for the states nobody thought to write down. Example counts: the
hypothesis profile in tests/conftest.py (1,000 per property under CI)."""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from sync.fleet import Fleet
from sync.plan import Create, Delete, Plan, make_plan
from sync.render import Route, canonical_json, render
from sync.safety import MIN_OWNED_FOR_PERCENT, refusals

from .fleetgen import World, worlds
from .memproxy import apply, stored


def owned_by_rule(route: Route, fleet: Fleet, desired: dict[str, Route]) -> bool:
    """Ownership as DESIGN.md and issue 8 state it, written apart from sync/ownership.py."""
    if not route.db_model:
        return False  # config-file route
    if route.fleet is not None:
        return route.fleet == fleet.name
    wanted = desired.get(route.id)
    if wanted is not None:  # our id with the tags lost: ours only in the model group it serves
        return route.model_name == wanted.model_name
    return fleet.owns == "model_groups" and route.model_name in fleet.model_names


def plan_of(world: World, live: list[Route] | None = None) -> Plan:
    return make_plan(world.fleet, world.desired, world.live() if live is None else live)


def explain(world: World, plan: Plan) -> str:
    lines = [json.dumps(world.doc, sort_keys=True), *world.notes]
    lines += [f"{c.action} {c.id}" for c in plan.changes]
    return "\n".join(lines)


@given(worlds())
def test_a_plan_touches_only_routes_the_fleet_owns(world: World) -> None:
    live = {r.id: r for r in world.live()}
    desired = {r.id: r for r in world.desired}
    plan = plan_of(world)
    for change in plan.changes:
        if isinstance(change, Create):
            assert change.id not in live, f"creates over a live route\n{explain(world, plan)}"
        else:
            assert owned_by_rule(live[change.id], world.fleet, desired), (
                f"{change.action} of {change.id}, not the fleet's\n{explain(world, plan)}"
            )
    event(f"deletes: {len(plan.of('delete'))}")


@given(worlds())
def test_plan_apply_plan_is_empty_and_live_is_what_fleet_yaml_says(world: World) -> None:
    desired = {r.id: r for r in world.desired}
    before = copy.deepcopy(world.proxy)
    foreign = {r.id for r in world.live() if not owned_by_rule(r, world.fleet, desired)}
    plan = plan_of(world)
    apply(world.proxy, plan)
    again = plan_of(world)
    assert not again.changes, f"not converged: {[c.id for c in again.changes]}\n" + explain(
        world, plan
    )
    # Nobody else's route moved, and every route the fleet may hold is stored as rendered.
    for rid in foreign:
        assert world.proxy.rows[rid] == before.rows[rid]
    for rid, route in desired.items():
        if rid in foreign:
            continue
        row = world.proxy.rows[rid]
        assert row.model_name == route.model_name
        assert row.litellm_params == stored(route.litellm_params), explain(world, plan)
        assert row.model_info == stored(route.model_info), explain(world, plan)
    event("converged from changes" if plan.changes else "already in sync")


@given(worlds(), st.randoms(use_true_random=False))
def test_plans_are_deterministic(world: World, rng: random.Random) -> None:
    live = world.live()
    first = plan_of(world, live)
    shuffled = list(live)
    rng.shuffle(shuffled)
    again = make_plan(world.fleet, render(world.fleet), shuffled)
    assert again.to_json() == first.to_json()
    assert again.hash == first.hash


def hash_of(body: dict[str, Any]) -> str:
    """The plan hash as DESIGN.md defines it: sha256 over the canonical JSON of its changes."""
    content = {"fleet": body["fleet"], "changes": body["changes"]}
    return "sha256:" + hashlib.sha256(canonical_json(content).encode()).hexdigest()


@given(worlds())
def test_the_json_plan_round_trips_with_its_hash(world: World) -> None:
    body = plan_of(world).to_json()
    loaded = json.loads(json.dumps(body))
    assert loaded == body
    assert hash_of(loaded) == loaded["hash"]


@given(worlds())
def test_the_safety_rules_refuse_exactly_the_unsafe_plans(world: World) -> None:
    live = world.live()
    desired = {r.id: r for r in world.desired}
    plan = plan_of(world, live)
    owned = [r for r in live if owned_by_rule(r, world.fleet, desired)]
    prunes = [c for c in plan.changes if isinstance(c, Delete) and c.replaced_by is None]
    after = copy.deepcopy(world.proxy)
    apply(after, plan)
    serving = {r.model_name for r in after.listing()}
    expected = []
    if prunes and not world.desired:
        expected.append("renders no routes")
    elif (
        len(owned) >= MIN_OWNED_FOR_PERCENT
        and 100 * len(prunes) / len(owned) > world.fleet.max_prune_percent
    ):
        expected.append("max_prune_percent")
    for model in sorted(world.fleet.model_names - serving):
        if any(c.model_name == model for c in prunes):
            expected.append(f"model {model} would be left with no routes")
    got = refusals(plan, world.fleet.max_prune_percent)
    assert len(got) == len(expected), f"{got} != {expected}\n{explain(world, plan)}"
    for reason, wanted in zip(got, expected, strict=True):
        assert wanted in reason and "--force" in reason
    event(f"refusals: {', '.join(e.split(' would')[0] for e in expected) or 'none'}")
