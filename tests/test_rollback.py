"""An update LiteLLM stored but its router did not load (sync/live/rollback.py), on plain data: how
apply tells it (every pod still lists the previous values) and what it can write back (only
values it can read as stored). The real proxy: tests/test_provider_typo_live.py."""

from __future__ import annotations

from typing import Any

import pytest

from sync.core.plan import Update
from sync.core.planner import make_plan
from sync.core.render import Route
from sync.live.answers import parse_route
from sync.live.rollback import Restore, restore, still_previous

from .test_plan_cases import rendered

HOST = {"name": "a", "api_base": "http://10.0.0.1:8000/v1"}


def fleet(**model: Any) -> dict[str, Any]:
    body = {"served_model": "org/m", "hosts": [HOST], **model}
    return {"version": 1, "fleet": "f1", "models": {"m": body}}


def listed(route: Route, **params: Any) -> Route:
    """The route as LiteLLM lists it: no api_key, a reference resolved, then `params`."""
    entry = route.deployment()
    entry["litellm_params"].pop("api_key", None)
    for key, value in entry["litellm_params"].items():
        if isinstance(value, str) and value.startswith("os.environ/"):
            entry["litellm_params"][key] = "resolved-secret-value"
    entry["litellm_params"].update(params)
    parsed = parse_route(entry)
    assert parsed is not None
    return parsed


def update(applied: dict[str, Any], wanted: dict[str, Any], **live: Any) -> Update:
    _, before = rendered(applied, None)
    desired_fleet, desired = rendered(wanted, None)
    (old,) = before.values()
    plan = make_plan(desired_fleet, list(desired.values()), [listed(old, **live)])
    (change,) = plan.changes
    assert isinstance(change, Update)
    return change


def test_a_provider_typo_is_written_back_model_and_tags() -> None:
    change = update(fleet(), fleet(provider="hosted_vlm", litellm_params={"rpm": 5}), rpm=3)
    undo = restore(change)
    assert isinstance(undo, Restore)
    body = undo.route.deployment()
    assert body["model_name"] == "m"
    assert body["litellm_params"] == {"model": "hosted_vllm/org/m", "rpm": 3}
    info = body["model_info"]
    assert info["id"] == change.id
    assert info["fleet_sync_digest"] == change.before.digest
    assert info["fleet_sync_paths"] == change.before.model_info["fleet_sync_paths"]


@pytest.mark.parametrize(
    ("applied", "wanted", "live", "why"),
    [
        # api_key is never listed: its previous value is unknown.
        (fleet(api_key="os.environ/A"), fleet(api_key="os.environ/B"), {}, "never lists"),
        # A key the update adds cannot be taken away by PATCH (before 1.109).
        (fleet(), fleet(litellm_params={"organization": "acme"}), {}, "was not set before"),
        # The listed value may be a secret LiteLLM resolved from a reference.
        (
            fleet(litellm_params={"organization": "os.environ/ORG"}),
            fleet(litellm_params={"organization": "acme"}),
            {},
            "resolved or masked",
        ),
    ],
)
def test_what_cannot_be_written_back_is_said(
    applied: dict[str, Any], wanted: dict[str, Any], live: dict[str, Any], why: str
) -> None:
    change = update(applied, wanted, **live)
    undo = restore(change)
    assert isinstance(undo, str) and why in undo


def test_every_pod_must_still_list_the_previous_values() -> None:
    change = update(fleet(), fleet(provider="hosted_vlm"))
    old, new = change.before, change.route
    assert still_previous(change, [{old.id: old}, {old.id: old}])
    # One pod loaded it (the write pod reloads at once): it is being loaded, not refused.
    assert not still_previous(change, [{old.id: old}, {new.id: new}])
    assert not still_previous(change, [{old.id: old}, {}])  # gone from a pod
    assert not still_previous(change, [])
