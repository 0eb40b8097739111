"""What a no-op plan asks the real proxy (issue 27): every page of the listing, and two more.

Each GET /v2/model/info without `modelId` makes LiteLLM deep-copy its whole route list, so the
requests a plan adds to the bare read are cost the proxy pays on every plan. A no-op plan sends,
per pod, one readiness read that also says the LiteLLM version (/health/readiness/details), the
listing's pages, and one search for the stored rows the router does not list: pages + 2 on one
pod. The providers the proxy knows (/public/providers) are asked only when fleet.yaml names one
no listed route has.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .support.faultproxy import Fault, FaultProxy, LogRecord
from .support.proxyharness import Proxy, fleet_sync, write_fleet
from .test_onboarding_live import cleaned, env

ADDRESS = "http://127.0.0.1:9/v1"  # never asked: nothing here sends a request through a route


def through(proxy: Proxy, watched: FaultProxy) -> dict[str, str]:
    return {**env(proxy), "LITELLM_PROXY_URL": watched.url, "LITELLM_PROXY_URLS": watched.url}


def kinds(log: list[LogRecord]) -> list[str]:
    """Each GET by what it asks for."""
    out = []
    for record in log:
        params = record.params
        if record.path != "/v2/model/info":
            out.append(record.path)
        elif "search" in params:
            out.append("search")
        elif params.keys() <= {"page", "size"}:
            out.append("page")
        else:
            out.append(f"model info {sorted(params)}")
    return out


@pytest.mark.litellm_matrix  # what /health/readiness/details answers is each release's
def test_a_no_op_plan_reads_the_pages_and_two_more(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    models = [f"{fleet_name}-a", f"{fleet_name}-b"]
    path = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {m: {"hosts": {"h1": ADDRESS, "h2": ADDRESS.replace(":9", ":10")}} for m in models},
    )
    with cleaned(proxy, *models):
        applied = fleet_sync(["apply", "-f", str(path)], env(proxy))
        assert applied.code == 0, applied.out + applied.err
        with FaultProxy(proxy.url) as watched:
            run = fleet_sync(
                ["plan", "-f", str(path), "--detailed-exitcode"],
                through(proxy, watched),
            )
            asked = kinds(watched.requests())
        assert run.code == 0, run.out + run.err
        pages = asked.count("page")
        assert pages >= 1, asked
        assert sorted(asked) == sorted(
            ["/health/readiness/details", "search", *["page"] * pages]
        ), asked
        assert len(asked) == pages + 2


def test_a_provider_no_listed_route_has_is_asked_about(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    path = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"provider": "hosted_vlm", "hosts": {"a": ADDRESS}}},
    )
    with cleaned(proxy, model), FaultProxy(proxy.url) as watched:
        run = fleet_sync(["plan", "-f", str(path)], through(proxy, watched))
        asked = kinds(watched.requests())
    assert run.code == 1, run.out + run.err
    assert "provider 'hosted_vlm' is unknown" in run.err
    assert asked.count("/public/providers") == 1, asked


def test_a_pod_shutting_down_is_read_but_never_written_to(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """LiteLLM's /health/drain (a pod's preStop hook) turns the public probe into 503
    "shutting_down" while /health/readiness/details, which the read asks, still answers 200
    (1.98.1-1.110.2): the plan goes on, apply asks the probe before its first write."""
    model = f"{fleet_name}-m"
    path = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": ADDRESS}}})
    draining = Fault.status(503, b'{"status": "shutting_down"}')
    with cleaned(proxy, model), FaultProxy(proxy.url) as watched:
        watched.add_rule("GET", r"^/health/readiness$", draining, times=None)
        planned = fleet_sync(["plan", "-f", str(path)], through(proxy, watched))
        applied = fleet_sync(["apply", "-f", str(path)], through(proxy, watched))
        writes = watched.forwarded_writes()
    assert planned.code == 0, planned.out + planned.err
    assert applied.code == 1, applied.out + applied.err
    assert "shutting_down" in applied.err
    assert writes == []
