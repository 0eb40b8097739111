"""A team's model is never the fleet's (issue 23), on plain data: every marker LiteLLM scopes a
route to a team by (sync/litellm/teams.py), import leaving such routes out and saying why, and
the 403 LiteLLM answers without an Enterprise licence said as what it is. The plan's side is in
tests/cases/plan/4[0-2]-*.yaml; the real proxy's in tests/test_teams_live.py."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import yaml

from sync.core.render import Route
from sync.edit.import_rules import refused_by_validate
from sync.edit.importer import import_fleet
from sync.litellm.teams import team_scope
from sync.live.client import ErrorKind, LiteLLMClient, ProxyError, classify
from sync.live.errors import error_message

UUID = "0b4e28ba-2fa1-41d2-883f-0016d3cca427"
# CommonProxyErrors.not_premium_user, as LiteLLM 1.98.1 to 1.110.2 raise it (HTTPException
# detail={"error": ...}; FastAPI wraps it in "detail").
ENTERPRISE = (
    "You must be a LiteLLM Enterprise user to use this feature. If you have a license please set "
    "`LITELLM_LICENSE` in your env. Get a 7 day trial key here: "
    "https://www.litellm.ai/enterprise#trial. \nPricing: https://www.litellm.ai/#pricing"
)
REFUSED_BODY = json.dumps({"detail": {"error": ENTERPRISE}})


@pytest.mark.parametrize(
    ("model_name", "info", "scope"),
    [
        ("alpha", {"team_id": "t1", "team_public_model_name": "alpha"}, "team t1"),
        (f"model_name_t1_{UUID}", {"team_id": "t1"}, "team t1"),  # before the public-name field
        ("alpha", {"team_id": ""}, "team "),  # LiteLLM excludes it from other teams' keys too
        ("alpha", {"team_public_model_name": "alpha"}, "a team (model_info.team_public_model_name"),
        (f"model_name_t2_{UUID}", {}, "team t2 (stored name"),
        ("alpha", {"team_id": "t\x1b[2J" + "x" * 100}, "team t?[2J"),  # shown, never obeyed
    ],
)
def test_every_marker_litellm_scopes_a_route_by_is_read(
    model_name: str, info: dict[str, Any], scope: str
) -> None:
    found = team_scope(model_name, info)
    assert found is not None and found.startswith(scope)
    assert found.isprintable() and len(found) < 120


@pytest.mark.parametrize(
    ("model_name", "info"),
    [
        ("alpha", {"access_via_team_ids": ["t1"], "direct_access": True}),  # access, not scope
        ("model_name_alpha", {}),
        (f"my_model_name_t1_{UUID}", {}),
        ("model_name_t1_not-a-uuid", {}),
    ],
)
def test_a_public_route_has_no_team(model_name: str, info: dict[str, Any]) -> None:
    assert team_scope(model_name, info) is None


def route(rid: str, name: str, **info: Any) -> Route:
    params = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1:8000/v1"}
    return Route(rid, name, params, {"id": rid, "db_model": True, **info})


def test_import_never_writes_a_team_route_and_says_why() -> None:
    imported = import_fleet(
        [
            route("public-1", "alpha"),
            route("team-1", "alpha", team_id="t1", team_public_model_name="alpha"),
            route("team-2", "beta", team_id="t1", team_public_model_name="beta"),
            route("team-3", f"model_name_t2_{UUID}"),
        ],
        "f",
    )
    doc = yaml.safe_load(imported.text)
    assert list(doc["models"]) == ["alpha"]  # beta is only a team's: no group at all
    assert [h["api_base"] for h in doc["models"]["alpha"]["hosts"]] == ["http://10.0.0.1:8000/v1"]
    assert imported.routes == 1
    assert "team" not in imported.text and "t1" not in imported.text
    said = {line.split(":")[0]: line for line in imported.left_out}
    assert set(said) == {"alpha (team-1)", "beta (team-2)", f"model_name_t2_{UUID} (team-3)"}
    assert "team model of team t1: LiteLLM scopes it to that team" in said["alpha (team-1)"]
    assert all(line.endswith("not imported") for line in said.values())


def test_fleet_yaml_cannot_make_a_route_a_team_model() -> None:
    assert refused_by_validate("model_info", "team_id", "t1")
    assert refused_by_validate("model_info", "team_public_model_name", "alpha")


def test_the_enterprise_refusal_is_not_a_read_only_key() -> None:
    assert classify(403, REFUSED_BODY, True) is ErrorKind.CLIENT
    assert classify(403, json.dumps({"detail": "View-only users cannot manage models."}), True) is (
        ErrorKind.AUTH
    )


def test_the_client_says_what_the_enterprise_refusal_is() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, text=REFUSED_BODY)

    client = LiteLLMClient(["http://127.0.0.1:9"], "sk-x", transport=httpx.MockTransport(answer))
    with pytest.raises(ProxyError) as refused:
        client.delete("team-1")
    said = str(refused.value)
    assert refused.value.kind is ErrorKind.CLIENT and refused.value.status == 403
    assert "no LiteLLM Enterprise licence" in said and "not a matter of the key" in said
    assert "can read but not write" not in said
    assert error_message(REFUSED_BODY).startswith("You must be a LiteLLM Enterprise user")
