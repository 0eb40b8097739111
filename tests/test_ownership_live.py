"""Ownership and read-back against a real LiteLLM proxy with PostgreSQL (issue 8, items 2 and 4):
a write counts only once the router lists it; ids held by routes the fleet does not own are
conflicts; two repositories using one fleet name never touch each other's routes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import yaml

from sync.core.render import route_id
from sync.live.client import LiteLLMClient

from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import Proxy, Run, fleet_sync, write_fleet

OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"
THIRD = "https://abc123-8000.proxy.runpod.net/v1"


def env(proxy: Proxy, repository: str | None = None) -> dict[str, str]:
    """The proxy's environment as CI (GITHUB_REPOSITORY) or a local run (none) would have it."""
    out = {k: v for k, v in proxy.env().items() if k != "GITHUB_REPOSITORY"}
    if repository:
        out["GITHUB_REPOSITORY"] = repository
    return out


def run(args: list[str], environ: dict[str, str]) -> Run:
    return fleet_sync(args, environ)


def plan_json(fleet: Path, environ: dict[str, str], *extra: str) -> tuple[int, dict[str, Any]]:
    done = run(
        ["plan", "-f", str(fleet), "--format", "json", "--detailed-exitcode", *extra], environ
    )
    assert done.code in (0, 2, 3), done.err  # 3: apply would refuse it
    body: dict[str, Any] = json.loads(done.out)
    return done.code, body


def hand_route(proxy: Proxy, model_name: str, api_base: str, **info: Any) -> str:
    """A route written the way a portal or a person would: /model/new, untagged."""
    body = {
        "model_name": model_name,
        "litellm_params": {"model": f"hosted_vllm/{model_name}", "api_base": api_base},
        "model_info": info,
    }
    with proxy.http() as http:
        answer = http.post("/model/new", json=body)
    assert answer.status_code == 200, answer.text
    created: str = answer.json()["model_id"]
    return created


def stored(proxy: Proxy, rid: str) -> bool:
    """Whether LiteLLM's database holds the row, listed by the router or not."""
    with LiteLLMClient([proxy.url], proxy.api_key) as client:
        return client.find_stored(rid) is not None


def test_unknown_provider_create_fails_keeps_the_route_and_shows_in_the_next_plan(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """LiteLLM stores a route whose provider it does not know, then answers 500 "saved to the
    database, but ... not live in this pod's router". The create is failed with that reason, the
    untagged route the group would lose (at an address fleet.yaml no longer lists) keeps
    serving, and the stored row stays visible (and removable) in later plans."""
    model = f"{fleet_name}-m"
    # plan and apply refuse a provider the proxy does not list before writing: let it through
    # as for one the proxy loads without listing it, to see what LiteLLM does with the write.
    environ = {**env(proxy), "FLEET_SYNC_EXTRA_PROVIDERS": "hosted_vlm"}
    portal = hand_route(proxy, model, THIRD)
    fleet = tmp_path / "fleet.yaml"
    typo = {"name": "a", "api_base": OLD, "provider": "hosted_vlm"}
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": typo}}}, owns="model_groups")
    rid = route_id(fleet_name, model, "a")

    done = run(["apply", "-f", str(fleet), "--format", "json"], environ)
    assert done.code == 4, done.out + done.err
    outcomes = {(o["action"], o["id"]): o for o in json.loads(done.out)["outcomes"]}
    create = outcomes[("create", rid)]
    assert create["status"] == "failed"
    assert "not live in this pod's router" in create["detail"]
    assert outcomes[("delete", portal)]["status"] == "skipped"
    assert proxy.ids(model) == [portal]  # the model still has its serving route
    assert stored(proxy, rid)  # ... and LiteLLM kept the row it does not serve

    code, plan = plan_json(fleet, environ)
    assert code == 2
    changes = {(c["action"], c["id"]): c for c in plan["changes"]}
    assert changes[("update", rid)]["listed"] is False
    assert ("delete", portal) in changes
    text = run(["plan", "-f", str(fleet)], environ).out
    assert "not listed by the router" in text

    # The host goes (another one serves the model): the stored row is pruned from the database.
    write_fleet(fleet, fleet_name, {model: {"hosts": {"b": NEW}}}, owns="model_groups")
    code, plan = plan_json(fleet, environ)
    changes = {(c["action"], c["id"]): c for c in plan["changes"]}
    assert changes[("delete", rid)]["listed"] is False
    done = run(["apply", "-f", str(fleet)], environ)
    assert done.code == 0, done.out + done.err
    assert proxy.ids(model) == [route_id(fleet_name, model, "b")]
    assert not stored(proxy, rid)
    assert plan_json(fleet, environ)[0] == 0


def test_a_create_the_router_never_lists_blocks_its_groups_deletes(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """A create answered 200 that the router does not list (older LiteLLM releases answer 200
    where 1.108.7 answers 500; here the answer comes from a proxy in between and the write never
    lands) must not let the group's old route go: deletes wait for the listing."""
    model = f"{fleet_name}-m"
    portal = hand_route(proxy, model, OLD)  # the host moved: this one goes once a is listed
    fleet = tmp_path / "fleet.yaml"
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": NEW}}}, owns="model_groups")
    with FaultProxy(proxy.url) as fp:
        fp.add_rule("POST", "/model/new", Fault.status(200, b'{"model_id": "x"}'), times=None)
        environ = {**env(proxy), "LITELLM_PROXY_URL": fp.url, "LITELLM_PROXY_URLS": fp.url}
        done = run(
            ["apply", "-f", str(fleet), "--format", "json", "--confirm-timeout", "2"], environ
        )
        assert fp.requests("POST", "/model/delete") == []
    assert done.code == 4, done.out + done.err
    statuses = {o["action"]: o["status"] for o in json.loads(done.out)["outcomes"]}
    assert statuses == {"create": "unconfirmed", "delete": "skipped"}
    assert proxy.ids(model) == [portal]


def test_route_of_another_group_holding_our_id_is_a_conflict(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """An untagged route in another model group carrying one of our ids was claimed and patched
    into our group; the plan said "matches" for ids held by routes it may not touch."""
    model, other = f"{fleet_name}-m", f"{fleet_name}-other"
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD, "b": NEW}}}
    )
    rid = route_id(fleet_name, model, "a")
    hand_route(proxy, other, THIRD, id=rid)

    code, plan = plan_json(fleet, env(proxy))
    assert code == 3  # apply refuses a conflict without --force: so does plan (issue 24)
    assert [c["id"] for c in plan["conflicts"]] == [rid]
    assert plan["conflicts"][0]["held_by"]["model_name"] == other
    assert [(c["action"], c["host"]) for c in plan["changes"]] == [("create", "b")]
    text = run(["plan", "-f", str(fleet)], env(proxy)).out
    assert f"! conflict {model} host=a ({rid})" in text
    markdown = run(["plan", "-f", str(fleet), "--format", "markdown"], env(proxy)).out
    assert "Conflicts (1)" in markdown

    refused = run(["apply", "-f", str(fleet)], env(proxy))
    assert refused.code == 3, refused.out + refused.err
    assert "held by a route this fleet does not own" in refused.err
    assert proxy.ids(model) == []  # refused before any write

    forced = run(["apply", "-f", str(fleet), "--force"], env(proxy))
    assert forced.code == 4, forced.out + forced.err  # host a still has no route: not complete
    assert proxy.ids(model) == [route_id(fleet_name, model, "b")]
    holder = proxy.route(rid)
    assert holder is not None and holder["model_name"] == other  # never touched
    assert "fleet_sync_fleet" not in holder["model_info"]


def test_two_sources_with_one_fleet_name_never_prune_each_other(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Two teams copied `fleet: <name>` onto one proxy. Each applies; neither prunes, updates or
    overwrites the other's routes. Moving the fleet from one to the other takes --take-over."""
    model = f"{fleet_name}-m"
    team_a = write_fleet(
        tmp_path / "a.yaml", fleet_name, {model: {"hosts": {"a1": OLD, "a2": NEW}}}, source="org/a"
    )
    team_b = tmp_path / "b.yaml"
    write_fleet(team_b, fleet_name, {model: {"hosts": {"b1": THIRD}}})
    as_b = env(proxy, "org/b")  # team B's CI: the source is its GITHUB_REPOSITORY
    ids_a = [route_id(fleet_name, model, h) for h in ("a1", "a2")]
    b1 = route_id(fleet_name, model, "b1")

    assert run(["apply", "-f", str(team_a)], env(proxy)).code == 0
    done = run(["apply", "-f", str(team_b)], as_b)
    assert done.code == 0, done.out + done.err
    assert proxy.ids(model) == sorted([*ids_a, b1])
    done = run(["apply", "-f", str(team_a)], env(proxy))
    assert done.code == 0, done.out + done.err
    assert proxy.ids(model) == sorted([*ids_a, b1])
    code, plan = plan_json(team_a, env(proxy))
    assert code == 0
    assert "another source (org/b" in {i["id"]: i["reason"] for i in plan["ignored"]}[b1]
    assert plan_json(team_b, as_b)[0] == 0

    # Team B names a host like team A did: same id, team A's route. A conflict, refused.
    write_fleet(
        team_b, fleet_name, {model: {"hosts": {"b1": THIRD, "a1": "http://10.1.0.1:8000/v1"}}}
    )
    refused = run(["apply", "-f", str(team_b)], as_b)
    assert refused.code == 3, refused.out + refused.err
    route_a1 = proxy.route(ids_a[0])
    assert route_a1 is not None and route_a1["litellm_params"]["api_base"] == OLD
    assert route_a1["model_info"]["fleet_sync_source"] == "org/a"

    # Moving the fleet to team B's repository: --take-over owns A's routes.
    code, plan = plan_json(team_b, as_b, "--take-over")
    assert plan["conflicts"] == []
    assert {(c["action"], c["id"]) for c in plan["changes"]} == {
        ("update", ids_a[0]),
        ("delete", ids_a[1]),
    }
    done = run(["apply", "-f", str(team_b), "--take-over"], as_b)
    assert done.code == 0, done.out + done.err
    assert proxy.ids(model) == sorted([ids_a[0], b1])
    assert plan_json(team_b, as_b)[0] == 0


def test_untagged_source_routes_stay_owned_and_a_local_clone_matches_ci(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Routes an earlier fleet-sync wrote carry no source: the first run with a source owns them
    and tags them in place. A local run in a clone of the same repository (no
    GITHUB_REPOSITORY) resolves the same source from the origin remote: it sees no change."""
    model = f"{fleet_name}-m"
    spec = {model: {"hosts": {"a": OLD, "b": NEW}}}
    clone = tmp_path / "clone"
    clone.mkdir()
    repo = git.Repo.init(clone)
    repo.create_remote("origin", "git@github.com:Org/LLM-Fleet.git")
    fleet = write_fleet(clone / "fleet.yaml", fleet_name, spec)
    plain = write_fleet(tmp_path / "fleet.yaml", fleet_name, spec)  # outside any repository
    ids = sorted(route_id(fleet_name, model, h) for h in ("a", "b"))

    assert run(["apply", "-f", str(plain)], env(proxy)).code == 0  # no source known
    assert all("fleet_sync_source" not in (proxy.route(i) or {})["model_info"] for i in ids)

    ci = env(proxy, "org/llm-fleet")
    code, plan = plan_json(plain, ci)
    assert code == 2 and plan["conflicts"] == []
    assert {(c["action"], c["id"]) for c in plan["changes"]} == {("update", i) for i in ids}
    assert run(["apply", "-f", str(plain)], ci).code == 0
    assert all(
        (proxy.route(i) or {})["model_info"]["fleet_sync_source"] == "org/llm-fleet" for i in ids
    )

    assert plan_json(fleet, env(proxy))[0] == 0  # the local clone: same source, no change
    pinned = yaml.safe_load(plain.read_text(encoding="utf-8"))
    pinned["source"] = "org/llm-fleet"
    plain.write_text(yaml.safe_dump(pinned), encoding="utf-8")
    assert plan_json(plain, env(proxy, "someone/else"))[0] == 0  # source: wins over the env


def test_a_host_adopted_under_a_source_gets_no_keyless_twin_from_a_run_without_one(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """A new user's trap: a portal route (its api_key hidden by LiteLLM) adopted by CI keeps
    LiteLLM's id and carries CI's source. A local run that resolves no source does not own it,
    and no id of fleet.yaml's collides with it: it used to create a second, keyless route
    beside it (a quarter of the requests failed). Now the host is a conflict: apply refuses,
    creates nothing, and the run says why and how to fix it."""
    model = f"{fleet_name}-m"
    with proxy.http() as http:
        answer = http.post(
            "/model/new",
            json={
                "model_name": model,
                "litellm_params": {
                    "model": f"hosted_vllm/{model}",
                    "api_base": OLD,
                    "api_key": "sk-portal-only-litellm-holds-this",
                },
                "model_info": {},
            },
        )
    assert answer.status_code == 200, answer.text
    portal = answer.json()["model_id"]
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    doc = yaml.safe_load(fleet.read_text(encoding="utf-8"))
    doc["owns"] = "model_groups"
    fleet.write_text(yaml.safe_dump(doc), encoding="utf-8")

    done = run(["apply", "-f", str(fleet)], env(proxy, "org/a"))  # CI adopts it in place
    assert done.code == 0, done.out + done.err
    assert proxy.ids(model) == [portal]

    local = env(proxy)  # no source: fleet.yaml is in no repository
    done = run(["plan", "-f", str(fleet), "--format", "json"], local)
    plan = json.loads(done.out)
    assert [c["action"] for c in plan["changes"]] == [], plan["changes"]
    (conflict,) = plan["conflicts"]
    assert conflict["held"] == "host" and conflict["held_by"]["id"] == portal
    assert "carry a source tag, and this run resolves no source" in done.err
    refused = run(["apply", "-f", str(fleet)], local)
    assert refused.code == 3, refused.out + refused.err
    assert f"is served by route {portal}" in refused.out + refused.err
    assert proxy.ids(model) == [portal]  # no twin, the portal's route untouched
