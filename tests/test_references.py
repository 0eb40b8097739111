"""A prune never leaves a dangling reference silently (issue 26), on plain data: which model
groups a plan leaves without routes, what on the proxy still names them, what refuses and what
only warns, the probable rename, the hash, the reports; and the live edge's reading of
LiteLLM's answers (shapes, pages, counts that move) through a stub that answers like it."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, cast

import pytest

from sync.core import references as refs
from sync.core.plan import Plan
from sync.core.reference_match import collect, find
from sync.core.references import Fallback, Holder, Holdings, RouterSettings
from sync.core.safety import refusals
from sync.live import references as live
from sync.live.client import LiteLLMClient
from sync.live.errors import ErrorKind, ProxyError
from sync.report.json_format import plan_document
from sync.report.markdown import plan_markdown
from sync.report.text import plan_text

from .test_plan_cases import plan_for

A, B = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"
TOKEN = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"


def fleet(models: dict[str, list[str]]) -> dict[str, Any]:
    ports = iter(range(8000, 9000))
    return {
        "version": 1,
        "fleet": "f1",
        "models": {
            m: {
                "served_model": f"org/{m}",
                "hosts": [
                    {"name": h, "api_base": f"http://10.0.0.1:{next(ports)}/v1"} for h in hosts
                ],
            }
            for m, hosts in models.items()
        },
    }


def tagged(model: str, host: str, rid: str, api_base: str = A) -> dict[str, Any]:
    return {
        "model_name": model,
        "litellm_params": {"model": f"hosted_vllm/org/{model}", "api_base": api_base},
        "model_info": {"id": rid, "fleet_sync_fleet": "f1", "fleet_sync_host": host},
    }


def plan_of(models: dict[str, list[str]], live: list[dict[str, Any]]) -> Plan:
    plan, _ = plan_for({"fleet": fleet(models), "live": live})
    return plan


def removing_old(*extra: dict[str, Any]) -> Plan:
    """fleet.yaml keeps m and drops old, whose one route the fleet owns."""
    return plan_of({"m": ["h"]}, [{"rendered": "m/h"}, tagged("old", "h", "o1"), *extra])


# -- which groups vanish ---------------------------------------------------------------------


def test_an_ordinary_plan_leaves_no_group_empty_and_reads_nothing() -> None:
    plan = plan_of({"m": ["h", "k"]}, [{"rendered": "m/h"}, tagged("m", "gone", "o1")])
    assert [c.action for c in plan.changes] == ["create", "delete"]
    assert refs.vanishing(plan) == ()
    assert live.with_references(cast(LiteLLMClient, Refusing()), plan) is plan


def test_the_prune_of_a_groups_last_route_vanishes_it() -> None:
    assert refs.vanishing(removing_old()) == ("old",)


def test_draining_a_groups_last_route_vanishes_it_as_a_prune_does() -> None:
    """A pause takes the route out of service (403 "Model is blocked" once all are paused):
    what names the group breaks alike, so its references are read (an outside attack: a
    forced drain broke keys and fallbacks unseen)."""
    doc = fleet({"m": ["h"]})
    doc["models"]["m"]["hosts"][0]["enabled"] = False
    live = [{"rendered": "m/h", "applied": True}]  # as the fleet with the host enabled wrote it
    plan, _ = plan_for(
        {"fleet": doc, "applied": fleet({"m": ["h"]}), "live": live, "litellm_version": "1.108.7"}
    )
    assert [(c.action, getattr(c, "pause", None)) for c in plan.changes] == [("update", True)]
    assert refs.vanishing(plan) == ("m",)
    kept = plan_of({"m": ["h", "k"]}, [{"rendered": "m/h"}, {"rendered": "m/k"}])
    assert refs.vanishing(kept) == ()
    # The group keeps its (paused) route: a key listing it gets 403 "Model is blocked".
    holdings = Holdings(holders=(Holder("key", "k", models=("m", "x")),))
    [key] = collect(plan, holdings).found
    assert "403 Model is blocked" in key.effect and "400" not in key.effect


def test_a_route_the_fleet_does_not_own_keeps_the_group() -> None:
    foreign = {
        "model_name": "old",
        "litellm_params": {"model": "hosted_vllm/org/old", "api_base": B},
        "model_info": {"id": "x1"},
    }
    plan = removing_old(foreign)
    assert [c.id for c in plan.of("delete")] == ["o1"]
    assert refs.vanishing(plan) == ()


def test_a_create_in_the_same_group_keeps_it() -> None:
    plan = plan_of({"old": ["new-host"]}, [tagged("old", "h", "o1", api_base=B)])
    assert {c.action for c in plan.changes} == {"create", "delete"}
    assert refs.vanishing(plan) == ()


def test_a_group_removed_beside_one_created_is_a_probable_rename() -> None:
    plan = plan_of({"m": ["h"], "new": ["h"]}, [{"rendered": "m/h"}, tagged("old", "h", "o1")])
    assert refs.vanishing(plan) == ("old",)
    assert refs.renames(plan, ["old"]) == (("old", "new"),)


# -- what names a group, and what it does --------------------------------------------------

ROUTER = RouterSettings(
    fallbacks=(
        Fallback("fallbacks", "m", ("old", "spare")),
        Fallback("context_window_fallbacks", "*", ("old",)),
        Fallback("fallbacks", "old", ("m",)),
    ),
    aliases=(("gpt-4", "old"), ("other", "m")),
    routing_groups=(("pool", ("old", "m")),),
    sources={"fallbacks": refs.DATABASE, "model_group_alias": refs.CONFIG_FILE},
)
KEY = Holder(
    "key",
    "ci-bot",
    models=("old",),
    aliases=(("fast", "old"),),
    budget_fallbacks=(("m", ("old",)),),
    budgets=("old",),
    limits=("old",),
)
TEAM = Holder(
    "team", "research", models=("m", "old"), fallbacks=(Fallback("fallbacks", "m", ("old",)),)
)


def found(holdings: Holdings, listed: tuple[str, ...] = ()) -> dict[tuple[str, str], bool]:
    return {(r.kind, r.holder): r.refuses for r in find(["old"], holdings, listed)}


def test_every_kind_of_reference_is_found_with_what_it_does() -> None:
    holdings = Holdings(
        router=ROUTER,
        holders=(KEY, TEAM, Holder("key", "unrelated", models=("m",))),
        access_groups=(("only-old", ("old",)), ("both", ("m", "old")), ("none", ("m",))),
    )
    assert found(holdings, ("m", "old", "org/*", "*", "x/*")) == {
        ("router fallback", "group m"): True,
        ("context-window fallback", "the default (*)"): True,
        ("router fallback", "group old"): False,  # old's own fallbacks only go stale
        ("model_group_alias", "alias gpt-4"): True,
        ("routing group", "routing group pool"): True,
        ("key models", "key ci-bot"): True,
        ("key model alias", "key ci-bot"): True,
        ("budget fallback", "key ci-bot"): True,
        ("model budget", "key ci-bot"): False,
        ("model limit", "key ci-bot"): False,
        ("team models", "team research"): True,
        ("router fallback", "team research, group m"): True,
        ("access group", "access group only-old"): True,
        ("access group", "access group both"): True,
        ("wildcard route", "group *"): False,
    }
    by_holder = {r.holder: r for r in find(["old"], holdings)}
    assert by_holder["group m"].lives == refs.DATABASE
    assert by_holder["alias gpt-4"].lives == refs.CONFIG_FILE
    assert by_holder["routing group pool"].lives == refs.UNSAID
    assert "tries spare instead" in by_holder["group m"].effect
    assert "the client sees its error" in by_holder["the default (*)"].effect
    [models] = [r for r in find(["old"], holdings) if r.kind == "key models"]
    assert models.effect.endswith("it is the only model listed, so the key can call nothing")
    assert "fails closed" in by_holder["access group only-old"].effect
    assert "fails closed" not in by_holder["access group both"].effect


def with_refs(plan: Plan, holdings: Holdings) -> Plan:
    return replace(plan, references=collect(plan, holdings))


def test_a_reference_that_changes_requests_refuses_and_names_its_holder() -> None:
    plan = with_refs(removing_old(), Holdings(holders=(KEY,)))
    [refused] = [r for r in refusals(plan, 100) if "reference(s)" in r]
    assert refused.startswith("model group old would be left with no routes while 3 reference")
    assert "key models in key ci-bot (database)" in refused
    assert refused.endswith("--force required")
    assert TOKEN not in refused


def test_stale_budgets_and_limits_only_warn() -> None:
    key = Holder("key", "ci-bot", budgets=("old",), limits=("old",))
    plan = with_refs(removing_old(), Holdings(holders=(key,)))
    assert plan.references is not None and len(plan.references.found) == 2
    assert refusals(plan, 100) == ()
    assert "~ model budget in key ci-bot (database)" in plan_text(plan)


def test_references_not_fully_read_are_refused_like_unread_data() -> None:
    plan = with_refs(removing_old(), Holdings(unread=("GET /key/list: answered 500",)))
    [refused] = refusals(plan, 100)
    assert "were not fully read (GET /key/list: answered 500)" in refused


def test_a_group_nobody_names_prunes_as_before() -> None:
    plan = with_refs(removing_old(), Holdings(router=RouterSettings(), holders=(TEAM,)))
    assert plan.references is not None and plan.references.groups == ("old",)
    # the team lists old: refused; without it, nothing names old and nothing is refused.
    assert refusals(plan, 100)
    assert refusals(with_refs(removing_old(), Holdings(router=RouterSettings())), 100) == ()


def test_the_hash_covers_the_references() -> None:
    plan = removing_old()
    one = with_refs(plan, Holdings(holders=(KEY,)))
    other = with_refs(plan, Holdings(holders=(replace(KEY, name="ci-bot-2"),)))
    assert len({plan.hash, one.hash, other.hash}) == 3
    assert with_refs(plan, Holdings(holders=(KEY,))).hash == one.hash
    assert "references" not in plan.unredacted_json()  # an ordinary plan's JSON as before


def test_the_reports_show_each_reference_its_effect_and_the_rename() -> None:
    plan = plan_of({"m": ["h"], "new": ["h"]}, [{"rendered": "m/h"}, tagged("old", "h", "o1")])
    plan = with_refs(plan, Holdings(router=ROUTER, holders=(KEY,)))
    why = refusals(plan, 100)
    text = plan_text(plan, refusals=why)
    assert "! router fallback in group m (database): failover of group m to old" in text
    assert "probably renamed to new: the " in text
    assert "REFUSED: model group old would be left with no routes" in text
    assert "(probably renamed to new: they still name the old one)" in text
    md = plan_markdown(plan, refusals=why)
    assert "#### References to model groups left with no routes (1)" in md
    assert "⛔ refused: key models in `key ci-bot` (database)" in md
    body = json.loads(plan_document(plan, why))
    assert body["references"]["groups"] == ["old"]
    assert body["references"]["renames"] == [{"from": "old", "to": "new"}]
    assert {"group": "old", "kind": "key models", "holder": "key ci-bot", "lives": "database",
            "refuses": True} .items() <= next(
        r for r in body["references"]["found"] if r["kind"] == "key models"
    ).items()  # fmt: skip
    assert body["references"]["not_checkable"] == []


# -- the live edge on LiteLLM's answers --------------------------------------------------------


class Refusing:
    """A client no request may reach."""

    def read_json(self, path: str, params: Any) -> Any:
        raise AssertionError(f"an ordinary plan sent GET {path}")


class Answers:
    """Answers like LiteLLM's, by path; records what was asked."""

    def __init__(self, keys: list[dict[str, Any]], teams: list[dict[str, Any]], **over: Any):
        self.keys, self.teams, self.over = keys, teams, over
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def read_json(self, path: str, params: dict[str, Any]) -> Any:
        self.asked.append((path, dict(params)))
        if path in self.over:
            answer = self.over[path]
            return answer(params) if callable(answer) else answer
        if path == "/router/settings":
            return {
                "current_values": {
                    "fallbacks": [{"m": ["old"]}],
                    "model_group_alias": {"fast": {"model": "old", "hidden": True}},
                    "routing_groups": [],
                    "redis_password": "s3cret",
                },
                "source": {"fallbacks": "db", "model_group_alias": "config"},
            }
        if path == "/v1/access_group":
            return [{"access_group_name": "ag", "access_model_names": ["old"]}]
        rows, name, size = (
            (self.keys, "keys", "size")
            if path == "/key/list"
            else (self.teams, "teams", "page_size")
        )
        page, n = params["page"], params[size]
        count = "total_count" if name == "keys" else "total"
        return {name: rows[(page - 1) * n : page * n], count: len(rows)}


def key(alias: str | None, **fields: Any) -> dict[str, Any]:
    return {"token": TOKEN, "key_alias": alias, "models": [], "aliases": {}, **fields}


def test_every_page_is_read_and_nothing_but_names_is_kept() -> None:
    keys = [key(f"k{i}", models=["old"] if i == 150 else ["m"]) for i in range(250)]
    teams = [{"team_id": "t1", "team_alias": None, "models": ["old"],
              "litellm_model_table": {"model_aliases": '{"a": "old"}'}}]  # fmt: skip
    client = Answers(keys, teams)
    plan = live.with_references(cast(LiteLLMClient, client), removing_old())
    pages = [p for p, _ in client.asked]
    assert pages.count("/key/list") == 3 and pages.count("/v2/team/list") == 1
    assert len(client.asked) == 2 + 3 + 1  # 2 + ceil(keys/100) + ceil(teams/100)
    assert plan.references is not None and plan.references.unread == ()
    holders = {(r.kind, r.holder, r.lives) for r in plan.references.found}
    assert holders == {
        ("router fallback", "group m", "database"),
        ("model_group_alias", "alias fast", "config file"),
        ("key models", "key k150", "database"),
        ("team models", "team id t1", "database"),
        ("team model alias", "team id t1", "database"),
        ("access group", "access group ag", "database"),
    }
    shown = plan_text(plan) + json.dumps(plan.unredacted_json())
    assert TOKEN not in shown and "s3cret" not in shown


def test_a_key_without_alias_is_never_named_by_its_token() -> None:
    plan = live.with_references(
        cast(LiteLLMClient, Answers([key(None, models=["old"], team_id="t9")], [])),
        removing_old(),
    )
    assert plan.references is not None
    [named] = [r.holder for r in plan.references.found if r.kind == "key models"]
    assert named == "key without an alias (team t9)"
    assert TOKEN not in json.dumps(plan.unredacted_json())


def failing(params: Any) -> Any:
    raise ProxyError(ErrorKind.TRANSIENT, "GET /key/list answered 500: boom", 500)


def moving(params: dict[str, Any]) -> Any:
    return {"keys": [key("k")], "total_count": 150 + params["page"]}


@pytest.mark.parametrize(
    ("over", "said"),
    [
        ({"/key/list": failing}, "GET /key/list: GET /key/list answered 500: boom"),
        ({"/key/list": moving}, "GET /key/list: the count moved from 151 to 152 between pages"),
        ({"/key/list": {"keys": "x", "total_count": 1}}, "the answer has no keys list"),
        ({"/key/list": {"keys": [], "total_count": 10**6}}, "over the 100000 read"),
        (
            {"/key/list": {"keys": [key("k", models="old")], "total_count": 1}},
            "key k: models: not a list",
        ),
        (
            {"/router/settings": {"current_values": {"fallbacks": [{"m": [7]}]}}},
            "router fallbacks: a fallback of m names no group",
        ),
        ({"/v1/access_group": {"data": []}}, "GET /v1/access_group: the answer is not a list"),
    ],
    ids=["page-fails", "count-moves", "shape", "cap", "field", "router-shape", "groups-shape"],
)
def test_what_cannot_be_read_fully_is_said_and_refused(over: dict[str, Any], said: str) -> None:
    plan = live.with_references(cast(LiteLLMClient, Answers([], [], **over)), removing_old())
    assert plan.references is not None
    assert any(said in why for why in plan.references.unread), plan.references.unread
    assert any("were not fully read" in r for r in refusals(plan, 100))


def test_an_endpoint_a_release_lacks_is_not_checkable_not_unread() -> None:
    def missing(params: Any) -> Any:
        raise ProxyError(ErrorKind.NOT_FOUND, "GET /router/settings answered 404", 404)

    client = Answers([], [], **{"/router/settings": missing})
    plan = live.with_references(cast(LiteLLMClient, client), removing_old())
    assert plan.references is not None and plan.references.unread == ()
    assert plan.references.unchecked[0].startswith("router fallbacks, aliases and routing groups")
    assert not refusals(plan, 100) or all("reference(s)" in r for r in refusals(plan, 100))


def test_strategy_routers_and_model_access_groups_come_from_the_listing() -> None:
    old = tagged("old", "h", "o1")
    old["model_info"]["access_groups"] = ["solo", "shared", "unused"]
    other = {
        "model_name": "other",
        "litellm_params": {"model": "hosted_vllm/org/other", "api_base": B},
        "model_info": {"id": "x1", "access_groups": ["shared"]},
    }
    smart = {
        "model_name": "smart",
        "litellm_params": {"model": "auto_router/smart", "auto_router_default_model": "old"},
        "model_info": {"id": "x2"},
    }
    plan = plan_of({"m": ["h"]}, [{"rendered": "m/h"}, old, other, smart])
    assert refs.vanishing(plan) == ("old",)
    users = Holder("key", "k", models=("solo",))
    plan = with_refs(plan, Holdings(holders=(users,)))
    assert plan.references is not None
    got = {(r.kind, r.holder): (r.refuses, r.effect) for r in plan.references.found}
    assert got == {
        ("strategy router model", "group smart"): (
            True,
            "its auto_router_default_model is old: what it sends there fails",
        ),
        ("model access group", "access group solo"): (
            True,
            "model access group solo loses its last model group: key k given it fail closed",
        ),
        ("model access group", "access group shared"): (
            False,
            "model access group shared no longer includes old",
        ),
        ("model access group", "access group unused"): (
            False,
            "model access group unused is left empty (no key or team lists it)",
        ),
    }
    assert len([r for r in refusals(plan, 100) if "reference(s)" in r]) == 1


def test_a_hostile_alias_is_shown_escaped_and_bounded() -> None:
    alias = "evil\x1b[2J\nREFUSED: nothing" + "x" * 500
    plan = live.with_references(
        cast(LiteLLMClient, Answers([key(alias, models=["old"])], [])), removing_old()
    )
    text = plan_text(plan, refusals=refusals(plan, 100))
    assert "\x1b" not in text and "\nREFUSED: nothing" not in text
    assert plan.references is not None
    [holder] = [r.holder for r in plan.references.found if r.kind == "key models"]
    assert len(holder) <= len("key ") + live.NAME


def test_router_default_fallbacks_under_their_own_key_are_read_as_the_star_rule() -> None:
    """A config file setting both fallbacks and default_fallbacks: the settings answer shows
    the default under its own key, and the router serves it as fallbacks' "*" rule (an outside
    attack found it unread)."""
    settings = live.router_settings(
        {"current_values": {"fallbacks": [{"a": ["b"]}], "default_fallbacks": ["old"]}}
    )
    assert [(f.kind, f.source, f.targets) for f in settings.fallbacks] == [
        ("fallbacks", "a", ("b",)),
        ("fallbacks", "*", ("old",)),
    ]
