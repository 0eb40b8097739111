"""Onboarding without loss, on the real LiteLLM (issue 15, deliverables 6 and 7).

- Routes a portal left (untagged, a literal api_key LiteLLM never lists, keys of their own),
  described by a fleet.yaml with owns: model_groups, are adopted in place: the plan is in-place
  updates only, apply keeps every id, the next plan is empty, and a request through the proxy
  still reaches each upstream with its key — the proof the key survived (the upstreams answer
  only with it). PATCH merging top-level keys is LiteLLM's behaviour: a matrix test.
- A row LiteLLM stored but cannot serve (a provider typo) is found after its model group left
  fleet.yaml, through fleet.yaml's git history, and pruned; a plan that cannot read the history
  says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import git
import pytest

from sync.core.render import route_id
from sync.live.client import LiteLLMClient

from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .support.upstream import Upstream
from .test_probe_live import chat

KEY = "upstream-key-only-the-portal-knew-4f1c"
OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"


def env(proxy: Proxy) -> dict[str, str]:
    return {k: v for k, v in proxy.env().items() if k != "GITHUB_REPOSITORY"}


def plan_json(fleet: Path, proxy: Proxy, code: int) -> dict[str, Any]:
    run = fleet_sync(
        ["plan", "-f", str(fleet), "--format", "json", "--detailed-exitcode"], env(proxy)
    )
    assert run.code == code, run.out + run.err
    body: dict[str, Any] = json.loads(run.out)
    return body


def stored(proxy: Proxy, rid: str) -> bool:
    """`?modelId=` finds a row the router lists or, failing that, the database holds."""
    with LiteLLMClient([proxy.url], proxy.api_key) as client:
        return client.find_stored(rid) is not None


@contextmanager
def cleaned(proxy: Proxy, *models: str) -> Iterator[None]:
    """Delete the routes of these model groups afterwards (the proxy may be shared)."""
    try:
        yield
    finally:
        with proxy.http() as http:
            for route in proxy.routes():
                if route["model_name"] in models:
                    http.post("/model/delete", json={"id": route["model_info"]["id"]})


@pytest.mark.litellm_matrix
def test_routes_a_portal_left_are_adopted_in_place_and_keep_their_api_key(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    names = {f"{fleet_name}-a": "A", f"{fleet_name}-b": "B"}
    upstreams = {m: Upstream(n, [f"org/{m}"], key=KEY).start() for m, n in names.items()}
    try:
        with cleaned(proxy, *names), proxy.http() as http:
            ids = {}
            for model, upstream in upstreams.items():
                params = {"model": f"hosted_vllm/org/{model}", "api_base": upstream.url}
                body = {
                    "model_name": model,
                    "litellm_params": {**params, "api_key": KEY, "rpm": 7},
                    "model_info": {"team": "portal"},
                }
                answer = http.post("/model/new", json=body)
                assert answer.status_code == 200, answer.text
                ids[model] = answer.json()["model_id"]
            for model, name in names.items():
                assert chat(proxy, model) == name  # the portal's routes serve, with the key
            # What `import` writes for them, and a timeout fleet.yaml adds; no api_key.
            spec = {"litellm_params": {"rpm": 7, "timeout": 30}}
            models = {m: {**spec, "hosts": {"h": u.url}} for m, u in upstreams.items()}
            fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, models, owns="model_groups")

            plan = plan_json(fleet, proxy, 2)
            assert {(c["action"], c["id"]) for c in plan["changes"]} == {
                ("update", rid) for rid in ids.values()
            }  # in place: no create, no delete
            applied = fleet_sync(["apply", "-f", str(fleet)], env(proxy))
            assert applied.code == 0, applied.out + applied.err
            assert plan_json(fleet, proxy, 0)["changes"] == []

            for model, name in names.items():
                assert proxy.ids(model) == [ids[model]]  # LiteLLM's id kept
                route = proxy.route(ids[model])
                assert route is not None
                assert route["model_info"]["fleet_sync_fleet"] == fleet_name
                assert route["model_info"]["fleet_sync_host"] == "h"
                assert route["model_info"]["team"] == "portal"  # not fleet.yaml's: kept
                assert route["litellm_params"]["timeout"] == 30
                before = upstreams[model].chats()
                assert chat(proxy, model) == name  # the api_key survived the adoption
                assert upstreams[model].chats() == before + 1
                assert upstreams[model].authorizations[-1] == f"Bearer {KEY}"
    finally:
        for upstream in upstreams.values():
            upstream.stop()


def test_a_row_of_a_group_fleet_yaml_no_longer_declares_is_found_and_pruned(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """A provider typo: LiteLLM stores the row and its router never lists it. Once the group
    leaves fleet.yaml (a commit), only fleet.yaml's history says where to look: the plan prunes
    the row (listed: false), apply deletes it, and `?modelId=` finds nothing after."""
    typo, kept = f"{fleet_name}-typo", f"{fleet_name}-kept"
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    path = tmp_path / "repo" / "fleet.yaml"
    with cleaned(proxy, typo, kept):
        bad = {"name": "a", "api_base": OLD, "provider": "hosted_vlm"}
        write_fleet(path, fleet_name, {typo: {"hosts": {"a": bad}}, kept: {"hosts": {"b": NEW}}})
        repo.index.add(["fleet.yaml"])
        repo.index.commit("two groups, one with a provider typo")
        # Refused before writing since (GET /public/providers): let it through as for a
        # provider the proxy loads without listing it, to make the row LiteLLM cannot serve.
        typo_env = {**env(proxy), "FLEET_SYNC_EXTRA_PROVIDERS": "hosted_vlm"}
        done = fleet_sync(["apply", "-f", str(path)], typo_env)
        assert done.code == 4, done.out + done.err
        rid = route_id(fleet_name, typo, "a")
        assert stored(proxy, rid) and proxy.ids(typo) == []  # stored, not served

        write_fleet(path, fleet_name, {kept: {"hosts": {"b": NEW}}})
        repo.index.add(["fleet.yaml"])
        repo.index.commit("drop the group")
        plan = plan_json(path, proxy, 2)
        assert [(c["action"], c["id"], c.get("listed")) for c in plan["changes"]] == [
            ("delete", rid, False)
        ]
        assert "notes" not in plan  # the whole history was read
        done = fleet_sync(["apply", "-f", str(path)], env(proxy))
        assert done.code == 0, done.out + done.err
        assert not stored(proxy, rid)
        assert plan_json(path, proxy, 0)["changes"] == []

        # The same fleet.yaml outside any repository: the plan says what it could not look at.
        alone = tmp_path / "alone"
        alone.mkdir()
        (alone / "fleet.yaml").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        run = fleet_sync(["plan", "-f", str(alone / "fleet.yaml"), "--format", "json"], env(proxy))
        assert run.code == 0, run.err
        (note,) = json.loads(run.out)["notes"]
        assert "not in a git repository" in note and "were not looked for" in note
        assert f"note: {note}" in run.err
        markdown = fleet_sync(
            ["plan", "-f", str(alone / "fleet.yaml"), "--format", "markdown"], env(proxy)
        )
        assert f"> [!NOTE]\n> {note}" in markdown.out


def test_a_replacement_carries_readable_hand_added_keys_and_names_the_rest(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """fleet.yaml drops a model_info key (no LiteLLM removes one in place): the host's route is
    replaced. A key added by hand that cannot be a resolved secret (rpm) goes to the new route;
    a string that could be one (organization) and a model_info key are named as dropped. After
    apply the next plan is empty: what was carried is not fleet.yaml's to compare."""
    model = f"{fleet_name}-m"
    path = tmp_path / "fleet.yaml"
    with cleaned(proxy, model):
        noted = {"model_info": {"note": "x"}, "hosts": {"h": NEW}}
        write_fleet(path, fleet_name, {model: noted})
        done = fleet_sync(["apply", "-f", str(path)], env(proxy))
        assert done.code == 0, done.out + done.err
        rid = route_id(fleet_name, model, "h")
        by_hand = {
            "litellm_params": {"rpm": 5, "organization": "org-3f9a2c"},
            "model_info": {"id": rid, "team": "team-7d1e4b"},
        }
        with proxy.http() as http:
            assert http.patch(f"/model/{rid}/update", json=by_hand).status_code == 200

        write_fleet(path, fleet_name, {model: {"hosts": {"h": NEW}}})
        plan = plan_json(path, proxy, 2)
        create, delete = plan["changes"]
        assert (create["action"], create["id"], create["replaces"]) == ("create", f"{rid}-g2", rid)
        assert create["carries"] == ["litellm_params.rpm"]
        assert create["drops"] == ["litellm_params.organization", "model_info.team"]
        # fleet-sync created the old route and wrote no api_key there: one set by hand would
        # go unseen (LiteLLM never lists it), so the plan names it, and the rails let it pass.
        assert "litellm_params.api_key" in create["may_drop"]
        assert (delete["action"], delete["replaced_by"]) == ("delete", f"{rid}-g2")
        shown = json.dumps(plan["changes"]) + fleet_sync(["plan", "-f", str(path)], env(proxy)).out
        assert "org-3f9a2c" not in shown and "team-7d1e4b" not in shown  # paths, never values
        text = fleet_sync(["plan", "-f", str(path)], env(proxy)).out
        assert f"carries from {rid}: litellm_params.rpm" in text
        assert "drops (listed on" in text and "litellm_params.organization, model_info.team" in text

        done = fleet_sync(["apply", "-f", str(path)], env(proxy))
        assert done.code == 0, done.out + done.err
        assert proxy.ids(model) == [f"{rid}-g2"]
        route = proxy.route(f"{rid}-g2")
        assert route is not None and route["litellm_params"]["rpm"] == 5
        assert "organization" not in route["litellm_params"]
        assert plan_json(path, proxy, 0)["changes"] == []


def test_a_host_renamed_at_its_address_keeps_the_route_and_key_it_was_adopted_with(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """attack-b f2: `import` names a host after its address; renaming it in fleet.yaml is an
    update of the adopted route's host tag (same id, the portal's api_key kept), never a create
    plus a prune. Draining it says what goes with the route."""
    model = f"{fleet_name}-m"
    upstream = Upstream("R", [f"org/{model}"], key=KEY).start()
    path = tmp_path / "fleet.yaml"
    try:
        with cleaned(proxy, model), proxy.http() as http:
            params = {"model": f"hosted_vllm/org/{model}", "api_base": upstream.url, "api_key": KEY}
            answer = http.post("/model/new", json={"model_name": model, "litellm_params": params})
            assert answer.status_code == 200, answer.text
            rid = answer.json()["model_id"]
            imported = upstream.url.split("//", 1)[1].split("/", 1)[0].replace(":", "-")
            fleet: dict[str, Any] = {model: {"hosts": {imported: upstream.url}}}
            write_fleet(path, fleet_name, fleet, owns="model_groups")
            done = fleet_sync(["apply", "-f", str(path)], env(proxy))
            assert done.code == 0, done.out + done.err

            write_fleet(path, fleet_name, {model: {"hosts": {"runpod-a": upstream.url}}})
            plan = plan_json(path, proxy, 2)
            (change,) = plan["changes"]
            assert (change["action"], change["id"], change["host"]) == ("update", rid, "runpod-a")
            tag = [d for d in change["diff"] if d["path"] == "model_info.fleet_sync_host"]
            assert tag == [
                {
                    "path": "model_info.fleet_sync_host",
                    "before": imported,
                    "after": "runpod-a",
                    "checked": "read",
                }
            ]
            done = fleet_sync(["apply", "-f", str(path)], env(proxy))
            assert done.code == 0, done.out + done.err
            assert proxy.ids(model) == [rid]
            assert chat(proxy, model) == "R"
            assert upstream.authorizations[-1] == f"Bearer {KEY}"  # the portal's key survived
            assert plan_json(path, proxy, 0)["changes"] == []

            drained = {"runpod-a": {"name": "runpod-a", "api_base": upstream.url, "enabled": False}}
            write_fleet(path, fleet_name, {model: {"hosts": drained}})
            # Draining it pauses the route (issue 23): the portal's key stays with it. The
            # model's only host then serves nothing, which apply refuses: so does plan (exit 3,
            # issue 24).
            drained_plan = plan_json(path, proxy, 3)
            (pause,) = drained_plan["changes"]
            assert (pause["action"], pause["id"], pause["pause"]) == ("update", rid, "pause")
            (why,) = drained_plan["refused"]
            assert f"model {model} would be left with no routes" in why
    finally:
        upstream.stop()


def test_two_portal_routes_at_one_address_are_refused_not_thinned(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """attack-b f1: a portal left two routes for one host, one with a stale key. Deleting
    either as a duplicate may lose the only key that works, and nothing read from the proxy
    says which: apply refuses, naming both, and writes nothing. Once a person deletes the stale
    one, the other is adopted in place and requests reach the upstream with its key."""
    model = f"{fleet_name}-m"
    upstream = Upstream("D", [f"org/{model}"], key=KEY).start()
    path = tmp_path / "fleet.yaml"
    stale, right = f"{fleet_name}-0-stale", f"{fleet_name}-1-right"
    try:
        with cleaned(proxy, model), proxy.http() as http:
            for rid, key in ((stale, "stale-key-the-upstream-refuses"), (right, KEY)):
                params = {"model": f"hosted_vllm/org/{model}", "api_base": upstream.url}
                body = {
                    "model_name": model,
                    "litellm_params": {**params, "api_key": key},
                    "model_info": {"id": rid},
                }
                assert http.post("/model/new", json=body).status_code == 200
            write_fleet(
                path, fleet_name, {model: {"hosts": {"h": upstream.url}}}, owns="model_groups"
            )
            done = fleet_sync(["apply", "-f", str(path)], env(proxy))
            assert done.code == 3, done.out + done.err
            assert (
                f"route {right} would be deleted as a duplicate while route {stale} serves"
                in done.err
            )
            assert f"delete the wrong one of {right} and {stale} by hand" in done.err
            assert proxy.ids(model) == [stale, right]  # nothing written

            assert http.post("/model/delete", json={"id": stale}).status_code == 200
            done = fleet_sync(["apply", "-f", str(path)], env(proxy))
            assert done.code == 0, done.out + done.err
            assert proxy.ids(model) == [right]
            assert chat(proxy, model) == "D"
            assert upstream.authorizations[-1] == f"Bearer {KEY}"
    finally:
        upstream.stop()
