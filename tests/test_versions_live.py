"""What fleet-sync knows about the LiteLLM it talks to, on every version of the matrix (issue 10):
the version it reads (never through /health), what plans say about it, how the proxy's real error
answers classify, and whether PATCH removes a key in place where the version says it does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sync.core.render import route_id
from sync.litellm.releases import TESTED_RANGE, LiteLLMRelease
from sync.live.client import LiteLLMClient, classify

from .support.faultproxy import Fault, FaultProxy
from .support.litellm_answers import (
    CASES_DIR,
    Case,
    client,
    existing_route,
    expected,
    proxy_cases,
    send,
)
from .support.proxyharness import Proxy, fleet_sync, write_fleet

pytestmark = pytest.mark.litellm_matrix
OLD = "http://216.243.220.245:16643/v1"


def test_reads_the_version_without_calling_health(proxy: Proxy) -> None:
    with FaultProxy(proxy.url) as watched, LiteLLMClient([watched.url], proxy.api_key) as c:
        version = c.read_version(watched.url)
        paths = [r.path for r in watched.log]
    assert version == proxy.litellm_version()
    assert proxy.version is None or version == proxy.version
    assert "/health" not in paths, paths  # it would call every route's upstream


def test_plans_say_which_litellm_they_were_made_against(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    version = proxy.litellm_version()
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    text = fleet_sync(["plan", "-f", str(fleet)], proxy.env())
    assert text.code == 0, text.err
    assert text.out.splitlines()[0].endswith(f"LiteLLM {version}")
    assert "warning" not in text.err  # a tested version
    markdown = fleet_sync(["plan", "-f", str(fleet), "--format", "markdown"], proxy.env())
    assert f"· LiteLLM `{version}`</sub>" in markdown.out
    body = json.loads(fleet_sync(["plan", "-f", str(fleet), "--format", "json"], proxy.env()).out)
    assert body["litellm_version"] == version


def test_real_error_answers_classify_as_captured(proxy: Proxy, fleet_name: str) -> None:
    """Each error this proxy gives to fleet-sync's requests has the class the unit tests pin
    for it, and the status recorded in tests/cases/litellm/<version>.json (recapture there
    when LiteLLM changes: python -m tests.support.litellm_answers)."""
    version = proxy.litellm_version()
    existing = f"{fleet_name}-a"
    path = CASES_DIR / f"{version}.json"
    captured = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    by_case = (
        {a["case"]: a for a in captured["answers"] if a["target"] == "proxy"} if captured else {}
    )
    with client(proxy.url) as http:
        setup = Case("setup", "POST", "/model/new", existing_route(existing))
        send(http, setup, proxy.api_key).raise_for_status()
        for case in proxy_cases(existing):
            answer = send(http, case, proxy.api_key)
            if by_case:
                assert answer.status_code == by_case[case.name]["status"], case.name
            if answer.status_code < 400:
                continue
            kind = classify(answer.status_code, answer.text, case.write)
            assert kind is expected("proxy", case.name, version), (case.name, answer.text)


def test_patch_removes_a_key_in_place_exactly_where_the_version_says(
    proxy: Proxy, fleet_name: str
) -> None:
    release = LiteLLMRelease(proxy.litellm_version())
    rid = route_id(fleet_name, f"{fleet_name}-m", "a")
    with proxy.http() as http:
        created = http.post("/model/new", json=existing_route(rid, f"{fleet_name}-m"))
        assert created.status_code == 200, created.text
        patched = http.patch(
            f"/model/{rid}/update",
            json={"model_info": {"id": rid}, "litellm_params_to_remove": ["rpm"]},
        )
        assert patched.status_code == 200, patched.text
    route = proxy.route(rid)
    assert route is not None
    assert ("rpm" not in route["litellm_params"]) is release.removes_params_in_place


def test_untested_version_is_a_warning_naming_the_range_not_a_refusal(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    fleet = write_fleet(
        tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {"a": OLD}}}
    )
    details = json.dumps({"status": "healthy", "db": "connected", "litellm_version": "1.200.0"})
    with FaultProxy(proxy.url) as newer:
        newer.add_rule(
            "GET", "/health/readiness/details", Fault.status(200, details.encode()), times=None
        )
        env = proxy.env()
        env.update(LITELLM_PROXY_URL=newer.url, LITELLM_PROXY_URLS=newer.url)
        plan = fleet_sync(["plan", "-f", str(fleet), "--format", "markdown"], env)
        applied = fleet_sync(["apply", "-f", str(fleet)], env)
    assert plan.code == 0, plan.err
    assert (
        f"LiteLLM 1.200.0 is outside the versions fleet-sync is tested with ({TESTED_RANGE})"
        in plan.err
    )
    assert "> [!WARNING]" in plan.out and "1.200.0" in plan.out
    assert applied.code == 0, applied.out + applied.err
    assert "warning: LiteLLM 1.200.0" in applied.err
    assert proxy.route(route_id(fleet_name, f"{fleet_name}-m", "a")) is not None
