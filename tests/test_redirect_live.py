"""A key added by hand that sends a managed route's requests elsewhere is drift, and apply
repairs it, on the real proxy (matrix: in place from 1.109, a replacement before).

Found by the outside attack (a15): `PATCH litellm_params: {base_url: <another upstream>}` on a
route fleet-sync manages moved all its traffic, and the key LiteLLM resolves for it, to an
address fleet-sync never probes or shows, and `drift` saw nothing ("live keys fleet.yaml never
set are not compared"). Keys that redirect a route (sync/litellm/redirects.py) are now always
compared. Attack c (F1): a hand-added `mock_response` answered every request itself, the upstream
saw none, and plan said "No changes"; it is one of those keys now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sync.core.render import route_id

from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .support.upstream import Upstream
from .test_probe_live import chat


@pytest.mark.litellm_matrix
def test_a_base_url_added_by_hand_is_drift_and_apply_sends_traffic_back(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    reviewed = Upstream("reviewed", [f"org/{model}"]).start()
    elsewhere = Upstream("elsewhere", [f"org/{model}"]).start()
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": reviewed.url}}}
    )
    try:
        assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
        assert chat(proxy, model) == "reviewed"
        rid = route_id(fleet_name, model, "a")
        with proxy.http() as http:
            edit = {"litellm_params": {"base_url": elsewhere.url}}
            assert http.patch(f"/model/{rid}/update", json=edit).status_code == 200
        # LiteLLM honours it: the route's requests now go elsewhere.
        assert chat(proxy, model) == "elsewhere"

        drift = fleet_sync(["drift", "-f", str(fleet), "--format", "json"], proxy.env())
        assert drift.code == 2, drift.out + drift.err
        # From 1.109 an update that removes it in place; before, a replacement (create first).
        changes = json.loads(drift.out)["changes"]
        diffs = [d for c in changes for d in c.get("diff", [])]
        (seen,) = [d for d in diffs if d["path"] == "litellm_params.base_url"]
        assert seen["after"] == "(absent)"  # its live value is shown by provenance rules

        applied = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
        assert applied.code == 0, applied.out + applied.err
        again = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode"], proxy.env())
        assert again.code == 0, again.out + again.err
        (route,) = [r for r in proxy.routes() if r["model_name"] == model]
        assert "base_url" not in route["litellm_params"]
        before = elsewhere.chats()
        assert chat(proxy, model) == "reviewed"
        assert elsewhere.chats() == before
    finally:
        empty = tmp_path / "empty.yaml"
        empty.write_text(f"version: 1\nfleet: {fleet_name}\nmodels: {{}}\n", encoding="utf-8")
        fleet_sync(["apply", "-f", str(empty), "--force"], proxy.env())
        reviewed.stop()
        elsewhere.stop()


def test_a_mock_response_added_by_hand_is_drift_and_apply_sends_traffic_back(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-mock"
    reviewed = Upstream("reviewed", [f"org/{model}"]).start()
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": reviewed.url}}}
    )
    try:
        assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
        rid = route_id(fleet_name, model, "a")
        with proxy.http() as http:
            edit = {"litellm_params": {"mock_response": "canned"}}
            assert http.patch(f"/model/{rid}/update", json=edit).status_code == 200
        before = reviewed.chats()
        assert chat(proxy, model) == "canned"  # LiteLLM answers itself
        assert reviewed.chats() == before

        drift = fleet_sync(["drift", "-f", str(fleet), "--format", "json"], proxy.env())
        assert drift.code == 2, drift.out + drift.err
        diffs = [d for c in json.loads(drift.out)["changes"] for d in c.get("diff", [])]
        # From 1.109 an update that removes it in place; before, a replacement (create first).
        assert "litellm_params.mock_response" in [d["path"] for d in diffs]

        applied = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
        assert applied.code == 0, applied.out + applied.err
        again = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode"], proxy.env())
        assert again.code == 0, again.out + again.err
        assert chat(proxy, model) == "reviewed"
        assert reviewed.chats() == before + 1
    finally:
        empty = tmp_path / "empty.yaml"
        empty.write_text(f"version: 1\nfleet: {fleet_name}\nmodels: {{}}\n", encoding="utf-8")
        fleet_sync(["apply", "-f", str(empty), "--force"], proxy.env())
        reviewed.stop()
