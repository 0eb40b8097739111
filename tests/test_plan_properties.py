"""Properties of the plan core on generated fleets and live states (tests/support/fleetgen.py),
applied to an in-memory LiteLLM (tests/support/memproxy.py). Hand-written cases (tests/cases/plan)
show the behaviour; these look for the states nobody thought to write down. Example counts: the
hypothesis profile in tests/conftest.py (1,000 per property under CI)."""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from sync.core.compare import ABSENT
from sync.core.plan import Create, Delete, Plan, Update
from sync.core.render import (
    TAG_HOST,
    TAG_PREFIX,
    Route,
    canonical_json,
    generation,
    render_drained,
    route_id,
    with_generation,
    with_id,
)
from sync.core.safety import MIN_OWNED_FOR_PERCENT, refusals
from sync.fleet.model import normalise_address
from sync.litellm.normalise import readable
from sync.litellm.owned import NEVER_LISTED
from sync.live.client import write_body
from sync.live.rollback import restore

from .support.fleetgen import World, worlds
from .support.memproxy import PARAM_DEFAULTS, MemProxy, Row, apply, stored


def owned_by_rule(route: Route, world: World) -> bool:
    """Ownership as DESIGN.md and issue 8 state it, written apart from sync/core/ownership.py: never
    a config-file route; a route tagged with this fleet's name from this source (or none, or
    any under --take-over); an untagged route holding one of the fleet's ids in the model group
    that id is rendered for; an untagged route of a declared model under owns: model_groups;
    never a team's route (LiteLLM scopes it to its team)."""
    fleet = world.fleet
    if not route.db_model or "team_id" in route.model_info:  # a team's model: LiteLLM's team's
        return False
    if route.fleet is not None:
        ours = route.source is None or (
            fleet.source is not None and route.source.lower() == fleet.source.lower()
        )
        return route.fleet == fleet.name and (ours or world.take_over)
    base = generation(route.id)[0]  # a replacement's id is a later generation of the host's
    wanted = next((r for r in every_host(world) if r.id == base), None)
    if wanted is not None:
        return route.model_name == wanted.model_name
    return fleet.owns == "model_groups" and route.model_name in fleet.model_names


def created_by_rule(route: Route, world: World) -> bool:
    """Whether fleet-sync created an owned route: its id is a generation of an id it derives,
    for a host fleet.yaml renders or for the host its tags name. Any other id is LiteLLM's."""
    base = generation(route.id)[0]
    named = (
        route_id(route.fleet, route.model_name, route.host) if route.fleet and route.host else None
    )
    return base == named or any(d.id == base for d in every_host(world))


def every_host(world: World) -> tuple[Route, ...]:
    """The route of every host fleet.yaml lists: the enabled ones, and the drained ones, whose
    routes stay paused (every LiteLLM the in-memory proxy plays can pause)."""
    return (*world.desired, *render_drained(world.fleet))


def host_of(route: Route, world: World) -> Route | None:
    """The desired host an owned route belongs to, by identity as the docs' Ownership states it,
    written apart from sync/core/identity.py: a generation of the host's derived id; this fleet's
    tags naming the host, in its model group; this fleet's tags naming a host fleet.yaml no longer
    renders in that group, on a route fleet-sync did not create, at the host's address (renamed);
    an untagged route of its model at its address (owns: model_groups). None: the route serves
    no host fleet.yaml lists (a drained host's route is its own, paused)."""
    desired = every_host(world)
    by_family = next((d for d in desired if d.id == generation(route.id)[0]), None)
    if by_family is not None:
        return by_family
    if route.fleet is not None:
        by_tags = next(
            (d for d in desired if (d.model_name, d.host) == (route.model_name, route.host)), None
        )
        if by_tags is not None or created_by_rule(route, world) or not route.api_base:
            return by_tags
    elif world.fleet.owns != "model_groups" or not route.api_base:
        return None
    at = normalise_address(route.api_base)
    return next(
        (
            d
            for d in desired
            if d.model_name == route.model_name and normalise_address(d.api_base or "") == at
        ),
        None,
    )


def read(world: World) -> dict[str, Route]:
    """Every route the plan reads, by id: listed, and stored-but-not-listed of its groups."""
    listed = world.listed()
    return {r.id: r for r in [*listed, *world.unlisted(listed)]}


def conflicts_by_rule(world: World) -> set[str]:
    """Desired ids held by a route the fleet does not own, for hosts no route of the fleet
    serves (by identity: another generation of the id, its tags, its address)."""
    live = read(world)
    served = {
        host.id
        for r in live.values()
        if owned_by_rule(r, world) and (host := host_of(r, world)) is not None
    }
    return {
        r.id
        for r in world.desired
        if r.id in live and not owned_by_rule(live[r.id], world) and r.id not in served
    }


def twins_by_rule(world: World) -> set[tuple[str, str]]:
    """(model, host) of desired hosts no route of the fleet serves and no route holds the id
    of, that a listed route of this fleet's name the fleet does not own (another source)
    serves, by its host tag or its address in the host's group (docs "Source"): a create
    there would be a keyless twin, so the plan holds a conflict instead."""
    live = read(world)
    listed = world.listed()
    served = {
        host.id
        for r in live.values()
        if owned_by_rule(r, world) and (host := host_of(r, world)) is not None
    }
    desired_ids = {d.id for d in world.desired}
    copies = [
        r
        for r in listed
        if r.fleet == world.fleet.name
        and r.db_model
        and not r.paused  # serves nothing: a create beside it is no twin
        and not owned_by_rule(r, world)
        and r.id not in desired_ids
        and "team_id" not in r.model_info
        and "team_public_model_name" not in r.model_info
    ]
    out: set[tuple[str, str]] = set()
    for d in world.desired:
        if d.id in served or d.id in live:
            continue
        at = normalise_address(d.api_base or "")
        if any(
            c.model_name == d.model_name
            and (c.host == d.host or (c.api_base and normalise_address(c.api_base) == at))
            for c in copies
        ):
            out.add((d.model_name, d.host or ""))
    return out


def explain(world: World, plan: Plan) -> str:
    lines = [repr(world), *(f"{c.action} {c.id}" for c in plan.changes)]
    return "\n".join(lines + [f"conflict {c.id}" for c in plan.conflicts])


@given(worlds())
def test_a_plan_touches_only_routes_the_fleet_owns(world: World) -> None:
    live = read(world)
    plan = world.plan()
    for change in plan.changes:
        if isinstance(change, Create):
            assert change.id not in live, f"creates over a live route\n{explain(world, plan)}"
        else:
            assert owned_by_rule(live[change.id], world), (
                f"{change.action} of {change.id}, not the fleet's\n{explain(world, plan)}"
            )
    held = {c.id for c in plan.conflicts if c.held == "id"}
    assert held == conflicts_by_rule(world), explain(world, plan)
    twins = {
        (c.desired.model_name, c.desired.host or "") for c in plan.conflicts if c.held == "host"
    }
    assert twins == twins_by_rule(world), explain(world, plan)
    # Every route read is accounted for: the fleet's, or shown as ignored or as a conflict (a
    # route of another source may stand in the way of two hosts: by its tag and its address).
    shown = [i.route.id for i in plan.ignored] + list({c.held_by.id for c in plan.conflicts})
    assert len(shown) == len(set(shown)), explain(world, plan)
    others = {rid for rid, r in live.items() if not owned_by_rule(r, world)}
    assert set(shown) == others, f"not shown: {others - set(shown)}\n{explain(world, plan)}"
    event(f"conflicts: {len(plan.conflicts)}")
    event(f"deletes: {len(plan.of('delete'))}")


def blind_spots(world: World, host: str, rendered: Route) -> set[str]:
    """Top-level keys of this host's route that a hand edit may have left different, as the
    the docs' comparison model says: a key fleet.yaml never sets is not compared, and a hand edit
    under a key compared through the digest (a reference, a masked value, api_key) is not seen."""
    out = set()
    for rid, section, key in world.hand_edits:
        if rid != host or not section:
            continue
        values = rendered.litellm_params if section == "litellm_params" else rendered.model_info
        if key not in values or not readable((section, key), values[key]):
            out.add(key)
    return out


def foreign_ids(world: World) -> set[str]:
    """Every row on the proxy the fleet does not own, read by the plan or not."""
    proxy = world.proxy
    every = [*proxy.listing(), *proxy.stored_unlisted(r.model_name for r in proxy.rows.values())]
    foreign = {r.id for r in every if not owned_by_rule(r, world)}
    return foreign | {rid for rid, row in proxy.rows.items() if not row.db_model}


def written_by_fleet_sync(row: Row, rid: str) -> set[tuple[str, ...]]:
    """The top-level keys fleet-sync recorded writing on this stored row."""
    record = Route(rid, row.model_name, row.litellm_params, row.model_info).written or {}
    return {path[:2] for path in record}


def may_keep(
    rid: str, before: MemProxy, create: Create | None, rendered: Route
) -> dict[str, dict[str, Any]]:
    """Per section, what a host's route may hold beyond what fleet.yaml renders: what its row
    held before and fleet-sync did not write (PATCH merges: a key it does not send stays), or
    for a new route what the replacement carried over from the route it replaced."""
    if create is not None:
        carried = {path.split(".", 1)[1] for path in create.carries}
        params = {k: v for k, v in create.route.litellm_params.items() if k in carried}
        return {"litellm_params": stored(params), "model_info": {}}
    row = before.rows.get(rid)
    if row is None:
        return {"litellm_params": {}, "model_info": {}}
    written = written_by_fleet_sync(row, rid)
    out: dict[str, dict[str, Any]] = {}
    for section, values, wanted in (
        ("litellm_params", row.litellm_params, rendered.litellm_params),
        ("model_info", row.model_info, rendered.model_info),
    ):
        out[section] = {
            k: v
            for k, v in values.items()
            if k not in wanted and (section, k) not in written and not k.startswith(TAG_PREFIX)
        }
    return out


@given(worlds())
def test_plan_apply_plan_is_empty_and_live_is_what_fleet_yaml_says(world: World) -> None:
    """Applied as with --force (conflicts and refusals aside): the next plan has no change, the
    same conflicts, nobody else's route moved, and each host without a conflict is served by
    one route, tagged with it, stored as rendered under the id that serves it (a generation of
    its derived id, or LiteLLM's id for a route adopted in place), with nothing stale kept (a
    removed key, an old api_key reference): only what it held that fleet.yaml never set (hand
    edits the comparison model cannot see, keys a person or a portal added, carried keys)."""
    before = copy.deepcopy(world.proxy)
    foreign = foreign_ids(world)
    plan = world.plan()
    apply(world.proxy, plan)
    again = world.plan()
    assert not again.changes, f"not converged: {[c.id for c in again.changes]}\n" + explain(
        world, plan
    )
    assert again.conflicts == plan.conflicts
    for rid in foreign:
        assert world.proxy.rows[rid] == before.rows[rid], f"{rid} moved\n{explain(world, plan)}"
    serving: dict[tuple[str, Any], list[str]] = {}
    for rid in world.proxy.rows.keys() - foreign:
        row = world.proxy.rows[rid]
        serving.setdefault((row.model_name, row.model_info.get(TAG_HOST)), []).append(rid)
    conflicts = {c.id for c in plan.conflicts}
    creates = {c.id: c for c in plan.changes if isinstance(c, Create)}
    for route in world.desired:
        if route.id in conflicts:
            continue
        held = serving.pop((route.model_name, route.host), [])
        assert len(held) == 1, f"{route.id} served by {held}\n{explain(world, plan)}"
        rid = held[0]
        row = world.proxy.rows[rid]
        base, n = generation(rid)
        rendered = with_generation(route, n) if base == route.id else with_id(route, rid)
        assert row.listed and row.model_name == route.model_name, explain(world, plan)
        assert not row.blocked, f"{rid} serves enabled host {route.host} paused"
        unseen = blind_spots(world, route.id, rendered)
        kept = may_keep(rid, before, creates.get(rid), rendered)
        for section, want, have in (
            (
                "litellm_params",
                {**PARAM_DEFAULTS, **stored(rendered.litellm_params)},
                row.serving_params(),
            ),
            ("model_info", stored(rendered.model_info), row.model_info),
        ):
            for key in (want.keys() | have.keys()) - unseen:
                wanted = want.get(key, kept[section].get(key, ABSENT))
                assert have.get(key, ABSENT) == wanted, (
                    f"{rid} stores {section}.{key}={have.get(key, ABSENT)!r}, fleet.yaml "
                    f"says {wanted!r}\n{explain(world, plan)}"
                )
    # A drained host's route stays, paused (its id and what LiteLLM never lists kept).
    drained = {(m.name, h.name) for m in world.fleet.models for h in m.hosts if not h.enabled}
    for host in drained & serving.keys():
        rows = [world.proxy.rows[rid] for rid in serving.pop(host)]
        assert len(rows) == 1 and rows[0].blocked, f"{host}: {rows}\n{explain(world, plan)}"
    assert not serving, f"owned routes serving no host: {serving}\n{explain(world, plan)}"
    event("converged from changes" if plan.changes else "already in sync")
    for note in world.notes:  # which live states the generator made (--hypothesis-show-statistics)
        event("live: " + note.split(": ", 1)[1].split(" (")[0].split(" in ")[0])


@given(worlds())
def test_apply_keeps_what_litellm_never_lists_on_every_route_that_stays(world: World) -> None:
    """Applying a plan never takes a key LiteLLM never lists (api_key, ...) from a route that
    still serves a desired host, unless fleet.yaml changes it: adoption is in place, and PATCH
    keeps what it is not sent. A replacement cannot carry such a key: the safety property below
    checks that replacing a route fleet-sync did not create is refused."""
    before = copy.deepcopy(world.proxy)
    live = read(world)
    foreign = foreign_ids(world)
    plan = world.plan()
    apply(world.proxy, plan)
    desired = {(r.model_name, r.host): r for r in every_host(world)}
    for rid, row in world.proxy.rows.items():
        old = before.rows.get(rid)
        host = desired.get((row.model_name, row.model_info.get(TAG_HOST)))
        if old is None or host is None or rid in foreign:  # not the fleet's: never written
            continue
        written = written_by_fleet_sync(old, rid)
        for key in NEVER_LISTED & old.litellm_params.keys():
            if key in host.litellm_params:
                wanted = stored(host.litellm_params)[key]  # fleet.yaml sets it
            elif ("litellm_params", key) in written:
                continue  # fleet-sync wrote it and fleet.yaml dropped it: removed on purpose
            else:
                wanted = old.litellm_params[key]
            assert row.litellm_params.get(key, ABSENT) == wanted, (
                f"{rid} lost {key}\n{explain(world, plan)}"
            )
            event("kept a never-listed key")
    # A host served only by routes fleet-sync did not create (under LiteLLM's ids) keeps one of
    # them, with what LiteLLM never lists on it, unless the plan was refused for one of them.
    refused = " ".join(refusals(plan, world.fleet.max_prune_percent))
    served: dict[str, list[Route]] = {}
    for route in live.values():
        host = host_of(route, world) if owned_by_rule(route, world) else None
        if host is not None:
            served.setdefault(host.id, []).append(route)
    for host_id, routes in served.items():
        host = next(d for d in every_host(world) if d.id == host_id)
        held = {
            key: before.rows[r.id].litellm_params[key]
            for r in routes
            for key in NEVER_LISTED - host.litellm_params.keys()
            if key in before.rows[r.id].litellm_params
            and ("litellm_params", key) not in written_by_fleet_sync(before.rows[r.id], r.id)
        }
        if not held or any(generation(r.id)[0] == host_id for r in routes):
            continue
        if any(f"route {r.id} " in refused for r in routes):  # replaced, or a duplicate
            continue
        (now,) = [
            row
            for rid, row in world.proxy.rows.items()
            if rid not in foreign
            and (row.model_name, row.model_info.get(TAG_HOST)) == (host.model_name, host.host)
        ]
        for key, value in held.items():
            assert now.litellm_params.get(key) == value, (
                f"host {host.host} of {host.model_name} lost {key}\n{explain(world, plan)}"
            )
        event("a host onboarded without loss")


@given(worlds())
def test_no_route_fleet_sync_did_not_create_goes_unrefused_while_its_host_is_wanted(
    world: World,
) -> None:
    """A route fleet-sync did not create may hold what LiteLLM never lists (a portal's api_key)
    and nothing read from the proxy shows it or can take it over: a plan that deletes one whose
    host fleet.yaml still wants (a duplicate beside the host's route, a replacement) is refused
    by a rule naming it. Two portal routes at one address, one with a stale key, both seem to
    serve (LiteLLM retries a 401 on the other): deleting either may lose the only key that
    works. A host renamed at its address keeps its route (adopted again in place)."""
    live = read(world)
    plan = world.plan()
    refused = " ".join(refusals(plan, world.fleet.max_prune_percent))
    apply(world.proxy, plan)
    for route in live.values():
        if not owned_by_rule(route, world) or created_by_rule(route, world):
            continue
        if host_of(route, world) is None:
            continue  # its host left fleet.yaml (or was drained): the plan says what goes
        if route.id in world.proxy.rows:
            event("a route fleet-sync did not create kept")
            continue
        assert f"route {route.id} " in refused, f"{route.id} deleted\n{explain(world, plan)}"
        event("a route fleet-sync did not create, refused")


@given(worlds())
def test_writing_back_an_update_restores_every_stored_value_it_changed(world: World) -> None:
    """An update LiteLLM stored but did not load is written back (sync/live/rollback.py) from what
    the plan read: where it can be, the stored row is afterwards what it was before the update,
    every key of it; where it cannot, the reason names one the update changed."""
    plan = world.plan()
    for change in plan.of("update"):
        assert isinstance(change, Update)
        proxy = copy.deepcopy(world.proxy)
        before = copy.deepcopy(proxy.rows[change.id])
        if change.removes:
            proxy.remove_keys(change.id, [path.split(".", 1)[1] for path in change.removes])
        proxy.patch(change.id, write_body(change.route))
        undo = restore(change)
        if isinstance(undo, str):
            event("an update that cannot be written back")
            continue
        proxy.patch(change.id, write_body(undo.route))
        after = proxy.rows[change.id]
        # LiteLLM lists a key of PARAM_DEFAULTS with its default whether stored or not: the
        # write-back may store the default the update's `before` listed. A PATCH sends the
        # whole route: a key LiteLLM never lists that the row lacked and fleet.yaml sets (no
        # plan can see it missing) is written by it, and no PATCH removes it again; an update
        # for another reason (a pause's resume, say) sends it too.
        resent = {
            k
            for k in NEVER_LISTED & change.route.litellm_params.keys()
            if k not in before.litellm_params
        }
        kept = {k: v for k, v in after.litellm_params.items() if k not in resent}
        assert (
            after.model_name,
            as_listed(kept),
            after.model_info,
            after.blocked,  # a pause or resume is written back too
        ) == (
            before.model_name,
            as_listed(before.litellm_params),
            before.model_info,
            before.blocked,
        ), explain(world, plan)
        event("an update written back")


def as_listed(params: dict[str, Any]) -> dict[str, Any]:
    """litellm_params as LiteLLM lists them: a key at its PARAM_DEFAULTS value is no key."""
    return {k: v for k, v in params.items() if k not in PARAM_DEFAULTS or PARAM_DEFAULTS[k] != v}


@given(worlds(), st.randoms(use_true_random=False))
def test_plans_are_deterministic(world: World, rng: random.Random) -> None:
    first = world.plan()
    again = world.plan(shuffle=rng.shuffle)
    assert again.unredacted_json() == first.unredacted_json()
    assert again.hash == first.hash


def hash_of(body: dict[str, Any]) -> str:
    """The plan hash as DESIGN.md defines it: sha256 over the canonical JSON of what the plan
    changes (and the conflicts it leaves)."""
    content = {"fleet": body["fleet"], "changes": body["changes"]}
    if body["conflicts"]:
        content["conflicts"] = body["conflicts"]
    return "sha256:" + hashlib.sha256(canonical_json(content).encode()).hexdigest()


@given(worlds())
def test_the_json_plan_round_trips_with_its_hash(world: World) -> None:
    body = world.plan().unredacted_json()
    loaded = json.loads(json.dumps(body))
    assert loaded == body
    assert hash_of(loaded) == loaded["hash"]


@given(worlds())
def test_the_safety_rules_refuse_exactly_the_unsafe_plans(world: World) -> None:
    """Refused exactly when a rule says so: nothing renders and the plan prunes; it prunes more
    than max_prune_percent of >= 10 owned routes; it prunes a serving route of a declared model
    that then serves nothing; a desired id is held by a route the fleet does not own; it
    replaces a route fleet-sync did not create (it may hold keys LiteLLM never lists); it
    deletes one as a duplicate while its host keeps another route; or it prunes one it adopted
    (tagged), its host not drained, while it creates a route at its address or in its model
    without api_key."""
    live = read(world)
    plan = world.plan()
    owned = [r for r in live.values() if owned_by_rule(r, world)]
    # A route is lost when no host fleet.yaml wants is its (its host keeps a route otherwise),
    # unless a route fleet-sync created takes its place at its address (a host renamed).
    replaced = {c.replaces: c for c in plan.changes if isinstance(c, Create) and c.replaces}
    prunes = [
        c
        for c in plan.changes
        if isinstance(c, Delete) and host_of(live[c.id], world) is None and c.id not in replaced
    ]
    for old, create in replaced.items():
        if host_of(live[old], world) is None:  # a rename: a route fleet-sync created, same place
            route = live[old]
            assert created_by_rule(route, world) and route.model_name == create.model_name
            assert normalise_address(route.api_base or "") == normalise_address(
                create.route.api_base or ""
            ), explain(world, plan)
    after = copy.deepcopy(world.proxy)
    apply(after, plan)
    # A team's route serves its team only (LiteLLM's router), and a paused one nobody.
    serving = {
        r.model_name for r in after.listing() if "team_id" not in r.model_info and not r.paused
    }
    listed = {r.id for r in world.listed()}
    expected = []
    if prunes and not world.desired:
        expected.append("renders no routes")
    elif (
        len(owned) >= MIN_OWNED_FOR_PERCENT
        and 100 * len(prunes) / len(owned) > world.fleet.max_prune_percent
    ):
        expected.append("max_prune_percent")
    for model in sorted(world.fleet.model_names - serving):
        if any(
            c.model_name == model and c.id in listed and not live[c.id].paused for c in prunes
        ) or any(
            c.model_name == model
            and (
                # A pause of a row the router does not list takes nothing out of service.
                (isinstance(c, Update) and c.pause is True and c.id in listed)
                or (isinstance(c, Create) and c.replaces in listed and c.route.paused)
            )
            and not live[c.replaces if isinstance(c, Create) and c.replaces else c.id].paused
            for c in plan.changes
        ):
            expected.append(f"model {model} would be left with no routes")
    expected += [f"id {rid} is held" for rid in sorted(conflicts_by_rule(world))]
    expected += [f"{m} host {h} is served by route" for m, h in sorted(twins_by_rule(world))]
    for change in plan.changes:  # a replacement of a route fleet-sync did not create
        gone = change.replaces if isinstance(change, Create) else None
        if gone and not created_by_rule(live[gone], world):
            expected.append(f"replacing route {gone} ")
    for delete in plan.changes:  # a duplicate fleet-sync did not create: its host keeps a route
        if (
            isinstance(delete, Delete)
            and delete.id not in replaced
            and host_of(live[delete.id], world) is not None
            and not created_by_rule(live[delete.id], world)
        ):
            expected.append(f"route {delete.id} would be deleted as a duplicate")
    drained = {(m.name, h.name) for m in world.fleet.models for h in m.hosts if not h.enabled}
    creates = [c for c in plan.changes if isinstance(c, Create)]
    for delete in prunes:  # one it did not create, pruned beside a create at its place
        route = live[delete.id]
        if (
            created_by_rule(route, world)
            or route.fleet is None  # an untagged orphan of a claimed group: pruned as such
            or delete.id not in listed
            or (route.model_name, route.host) in drained
        ):
            continue
        if any(
            "api_key" not in c.route.litellm_params
            and (
                c.model_name == route.model_name
                or normalise_address(c.route.api_base or "")
                == normalise_address(route.api_base or "")
            )
            for c in creates
        ):
            expected.append(f"route {delete.id} would be pruned while the plan creates")
    got = refusals(plan, world.fleet.max_prune_percent)
    unmatched = list(got)
    for wanted in expected:
        reason = next((r for r in unmatched if wanted in r), None)
        assert reason is not None, f"no refusal says {wanted!r}: {got}\n{explain(world, plan)}"
        assert "--force" in reason
        unmatched.remove(reason)
    assert not unmatched, f"refused for no rule: {unmatched}\n{explain(world, plan)}"
    rules = sorted(
        {
            e.split(" would")[0]
            .split(" is held")[0]
            .split(" is served")[0]
            .split(" f1-")[0]
            .split(" adopted-")[0]
            .split(" portal-")[0]
            for e in expected
        }
    )
    event(f"refusals: {', '.join(rules) or 'none'}")
