"""A team's model is never the fleet's, on a real LiteLLM (issue 23, run by hand on 1.98.1,
1.108.7 and 1.110.2: the markers and the behaviour are the same in the three).

LiteLLM makes a team (BYOK) model only with an Enterprise licence, which the harness has not.
So the rows are stored the way its own `add_team_model_to_db` stores them: the route is written
by LiteLLM's /model/new (which encrypts litellm_params and serialises model_info), then copied
in SQL under a new id with the stored name `model_name_<team>_<uuid>` and model_info's
`team_id` and `team_public_model_name`, for a team made by /team/new. The router loads the rows
on its next reload from the database; the test waits until it lists them.

Then, in a model group where a portal's public route serves a host: a team route at that host's
address (adopting it would PATCH it public, with the team's key), a team route at another
address (an orphan of the group with owns: model_groups), and a team route alone in a group of
its own. import writes none and says why; plan lists them ignored and changes none; apply leaves
their rows byte-identical; a write to one is answered by LiteLLM's licence 403, which fleet-sync
says as that.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sync.core.render import Route
from sync.live.answers import parse_route
from sync.live.client import ErrorKind, LiteLLMClient, ProxyError

from .support.proxyharness import Proxy, fleet_sync, remove_fleet
from .support.upstream import silent_address
from .test_value_limits_live import sql

TABLE = '"LiteLLM_ProxyModelTable"'
# LiteLLM reloads the database's routes every 30 s by default (PROXY_CONFIG_RELOAD_INTERVAL); a
# loaded machine delays its scheduler: a bound that only ends a test that would hang.
RELOAD_WAIT = 300.0


def listed_until(proxy: Proxy, ids: set[str], seen: Callable[[dict[str, Any]], bool]) -> bool:
    """Poll the listing until each of `ids` is listed and `seen` holds for it (the router's
    reload is the event; there is no signal for it but the listing itself)."""
    deadline = time.monotonic() + RELOAD_WAIT
    while time.monotonic() < deadline:
        by_id = {r["model_info"]["id"]: r for r in proxy.routes()}
        if all(i in by_id and seen(by_id[i]) for i in ids):
            return True
        time.sleep(0.5)
    return False


class Team:
    """A team of the proxy, and the team routes stored for it."""

    def __init__(self, proxy: Proxy, run: Callable[[str], str], team_id: str) -> None:
        self.proxy, self.run, self.id = proxy, run, team_id
        self.routes: dict[str, str] = {}  # route id -> public model name

    def add(self, public: str, api_base: str) -> str:
        """One team route as add_team_model_to_db stores it (LiteLLM's encryption and
        serialisation, the stored name, the two team fields)."""
        rid = f"{self.id}-route-{len(self.routes)}"
        stored_name = f"model_name_{self.id}_{uuid.uuid4()}"
        body = {
            "model_name": f"{rid}-draft",
            "litellm_params": {
                "model": f"hosted_vllm/org/{public}",
                "api_base": api_base,
                "api_key": "sk-team-byok-key",
            },
            "model_info": {"id": f"{rid}-draft", "team_public_model_name": public},
        }
        with self.proxy.http() as http:
            assert http.post("/model/new", json=body).status_code == 200
        info = json.dumps({"id": rid, "team_id": self.id, "team_public_model_name": public})
        self.run(
            f"insert into {TABLE} (model_id, model_name, litellm_params, model_info, created_by, "
            f"updated_by) select '{rid}', '{stored_name}', litellm_params, "
            f"model_info || '{info}'::jsonb, created_by, updated_by from {TABLE} "
            f"where model_id = '{rid}-draft'"
        )
        with self.proxy.http() as http:
            assert http.post("/model/delete", json={"id": f"{rid}-draft"}).status_code == 200
        self.routes[rid] = public
        return rid

    def rows(self) -> str:
        """The team routes' database rows, every column as text."""
        ids = ", ".join(f"'{r}'" for r in sorted(self.routes))
        return self.run(f"select t::text from {TABLE} t where model_id in ({ids}) order by 1")


@pytest.fixture
def team(proxy: Proxy, fleet_name: str) -> Iterator[Team]:
    with sql(proxy) as run:
        made = Team(proxy, run, f"{fleet_name}-team")
        with proxy.http() as http:
            answer = http.post("/team/new", json={"team_id": made.id, "team_alias": made.id})
        assert answer.status_code == 200, answer.text
        try:
            yield made
        finally:
            run(f"delete from {TABLE} where model_id like '{made.id}-route-%'")
            with proxy.http() as http:
                http.post("/team/delete", json={"team_ids": [made.id]})
                for route in proxy.routes():
                    if route["model_name"].startswith(f"{fleet_name}-"):
                        http.post("/model/delete", json={"id": route["model_info"]["id"]})
            remove_fleet(proxy, fleet_name)


def test_a_team_model_is_never_imported_claimed_adopted_updated_or_pruned(
    proxy: Proxy, team: Team, tmp_path: Path, fleet_name: str
) -> None:
    model, only_team = f"{fleet_name}-m", f"{fleet_name}-t"
    host, elsewhere = silent_address(), silent_address()
    while elsewhere == host:  # two free ports in a row may be one
        elsewhere = silent_address()
    body = {
        "model_name": model,
        "litellm_params": {"model": f"hosted_vllm/org/{model}", "api_base": host},
        "model_info": {"id": f"{fleet_name}-portal"},
    }
    with proxy.http() as http:
        assert http.post("/model/new", json=body).status_code == 200
    at_host = team.add(model, host)
    orphan = team.add(model, elsewhere)
    alone = team.add(only_team, elsewhere)
    assert listed_until(
        proxy, set(team.routes), lambda r: r["model_info"].get("team_id") == team.id
    ), "the router never listed the team routes stored in its database"
    listing = {r["model_info"]["id"]: r for r in proxy.routes()}
    # As LiteLLM lists a team route: under its public name, both team fields in model_info.
    assert listing[at_host]["model_name"] == model and listing[alone]["model_name"] == only_team
    before = team.rows()

    out = tmp_path / "fleet.yaml"
    only = ["--model", model, "--model", only_team]
    imported = fleet_sync(["import", "--fleet", fleet_name, "-o", str(out), *only], proxy.env())
    assert imported.code == 0, imported.err
    doc = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert list(doc["models"]) == [model] and doc["owns"] == "model_groups"
    assert [h["api_base"] for h in doc["models"][model]["hosts"]] == [host]
    assert team.id not in out.read_text(encoding="utf-8")
    for rid in (at_host, orphan, alone):
        assert f"({rid}): team model of team {team.id}: LiteLLM scopes it" in imported.err

    plan = fleet_sync(["plan", "-f", str(out), "--format", "json"], proxy.env())
    assert plan.code == 0, plan.err
    body_json = json.loads(plan.out)
    changed = {c["id"] for c in body_json["changes"]}
    assert changed == {f"{fleet_name}-portal"}, plan.out  # the portal's route adopted, only it
    ignored = {i["id"]: i["reason"] for i in body_json["ignored"]}
    for rid in (at_host, orphan, alone):
        assert ignored.get(rid, "").startswith(f"team model of team {team.id}: LiteLLM scopes it")

    applied = fleet_sync(["apply", "-f", str(out)], proxy.env())
    assert applied.code == 0, applied.out + applied.err
    assert team.rows() == before, applied.out  # byte-identical: never written
    again = fleet_sync(["plan", "-f", str(out), "--detailed-exitcode"], proxy.env())
    assert again.code == 0, again.out + again.err

    # A host fleet.yaml puts at the orphan's address gets a route of its own: the team route
    # there is not adopted (which would PATCH it into the fleet's group without its team_id).
    doc["models"][model]["hosts"].append({"name": "b", "api_base": elsewhere})
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    moved = json.loads(fleet_sync(["plan", "-f", str(out), "--format", "json"], proxy.env()).out)
    assert [(c["action"], c["host"]) for c in moved["changes"]] == [("create", "b")], moved
    assert team.rows() == before


def test_a_write_to_a_team_model_is_refused_for_the_licence_not_the_key(
    proxy: Proxy, team: Team, fleet_name: str
) -> None:
    """What LiteLLM answers a write to a team route without an Enterprise licence, and how
    fleet-sync says it (it never sends one: this is the answer a hand-made write gets)."""
    rid = team.add(f"{fleet_name}-m", silent_address())
    assert listed_until(proxy, {rid}, lambda r: r["model_info"].get("team_id") == team.id)
    listed = proxy.route(rid)
    route = parse_route(listed)
    assert isinstance(route, Route)
    before = team.rows()
    with LiteLLMClient([proxy.url], proxy.api_key) as client, pytest.raises(ProxyError) as refused:
        client.update(route)
    said = str(refused.value)
    assert refused.value.status == 403 and refused.value.kind is ErrorKind.CLIENT, said
    assert "no LiteLLM Enterprise licence" in said and "can read but not write" not in said
    assert team.rows() == before
