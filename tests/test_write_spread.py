"""Writes spread over pods: each route always to the same pod, `concurrency` in flight on each.
(apply_plan's scheduling on a transport that answers from memory; the real pods are exercised
in tests/test_multipod.py.)"""

from __future__ import annotations

import collections
import threading

import httpx

from sync.core.plan import Create, Plan
from sync.core.render import Route
from sync.live.apply import apply_plan
from sync.live.client import LiteLLMClient

from .support.owner import owner_of

PODS = ["http://127.0.0.1:4001", "http://127.0.0.1:4002"]


def route(i: int) -> Route:
    rid = f"fleet-m-h{i}-{i:010d}"
    return Route(
        id=rid,
        model_name="m",
        litellm_params={"model": "hosted_vllm/org/m", "api_base": f"http://10.0.0.{i}/v1"},
        model_info={"id": rid, "fleet_sync_fleet": "fleet", "fleet_sync_host": f"h{i}"},
    )


def test_each_route_has_one_pod_and_the_pods_share_the_routes() -> None:
    client = LiteLLMClient(PODS, "k")
    ids = [route(i).id for i in range(400)]
    chosen = [client.pod_for(i) for i in ids]
    assert chosen == [client.pod_for(i) for i in ids]
    # The same in every run (a digest of the id, not Python's per-process hash()).
    assert chosen[:4] == [PODS[1], PODS[0], PODS[0], PODS[1]]
    # The order the pods are listed in does not matter.
    listed_backwards = LiteLLMClient(PODS[::-1], "k")
    assert chosen == [listed_backwards.pod_for(i) for i in ids]
    shares = collections.Counter(chosen)
    assert set(shares) == set(PODS) and min(shares.values()) > 150
    first = LiteLLMClient(PODS, "k", spread_writes=False)
    assert {first.pod_for(i) for i in ids} == {PODS[0]}
    one_pod = LiteLLMClient(PODS[1:], "k")
    assert {one_pod.pod_for(i) for i in ids} == {PODS[1]}


def test_apply_writes_each_route_to_its_pod_with_concurrency_per_pod() -> None:
    routes = [route(i) for i in range(12)]
    lock = threading.Lock()
    in_flight: collections.Counter[str] = collections.Counter()
    most: collections.Counter[str] = collections.Counter()
    received: dict[str, str] = {}
    # Four writes must be in flight at once (two per pod) before any is answered.
    together = threading.Barrier(4, timeout=30)
    created: list[Route] = []

    def answer(request: httpx.Request) -> httpx.Response:
        pod = f"http://{request.url.host}:{request.url.port}"
        if request.url.path == "/model/new":
            body = httpx.Response(200, content=request.content).json()
            with lock:
                in_flight[pod] += 1
                most[pod] = max(most[pod], in_flight[pod])
                received[body["model_info"]["id"]] = pod
                first_four = len(received) <= 4
            if first_four:
                together.wait()  # raises BrokenBarrierError if the pods were not written at once
            with lock:
                in_flight[pod] -= 1
                created.append(next(r for r in routes if r.id == body["model_info"]["id"]))
            return httpx.Response(200, json={})
        with lock:
            entries = [r.deployment() for r in created]
        return httpx.Response(200, json={"data": entries, "total_count": len(entries)})

    client = LiteLLMClient(PODS, "k", transport=httpx.MockTransport(answer))
    assert min(collections.Counter(client.pod_for(r.id) for r in routes).values()) >= 2
    plan = Plan("fleet", tuple(Create(r) for r in routes), (), 0, len(routes), frozenset(), ())
    result = apply_plan(
        plan, client, owner_of(plan.fleet), concurrency=2, confirm_timeout=5, sleep=lambda _: None
    )
    assert result.complete, result.outcomes
    assert received == {r.id: client.pod_for(r.id) for r in routes}
    assert dict(most) == {PODS[0]: 2, PODS[1]: 2}
