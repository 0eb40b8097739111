"""The listing's page size (issue 18): pages as large as the body cap allows, since LiteLLM
copies its whole route list for every page; a page over the cap (large routes) is read again in
pages half as large, down to 200, and the error stays the cap's when even those are too large.
A unit test of the client's paging against answers built here (the real proxy's side is
benchmarks/real_proxy.py; real pages in test_hostile_proxy.py and the live tests)."""

from __future__ import annotations

import json

import httpx
import pytest

from sync.live import client as client_module
from sync.live.client import PAGE_SIZE, SMALL_PAGE_SIZE, LiteLLMClient, ProxyError

ROUTES = 1000
PER_ROUTE = 200  # bytes of JSON each listed entry takes here, about


def answers(asked: list[int]) -> httpx.MockTransport:
    entries = [
        {"model_name": "m", "litellm_params": {"pad": "x" * 120}, "model_info": {"id": f"r{i}"}}
        for i in range(ROUTES)
    ]

    def handle(request: httpx.Request) -> httpx.Response:
        page, size = int(request.url.params["page"]), int(request.url.params["size"])
        asked.append(size)
        body = {
            "data": entries[(page - 1) * size : page * size],
            "total_count": ROUTES,
            "total_pages": -(-ROUTES // size),
        }
        return httpx.Response(200, content=json.dumps(body).encode())

    return httpx.MockTransport(handle)


def test_a_page_over_the_cap_is_read_again_in_pages_half_as_large(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "MAX_BODY_BYTES", 500 * PER_ROUTE)  # 400 fit, 850 not
    asked: list[int] = []
    with LiteLLMClient(["http://proxy.test"], "k", transport=answers(asked)) as client:
        routes = client.list_routes()
        assert [r.id for r in routes] == [f"r{i}" for i in range(ROUTES)]
        assert asked == [PAGE_SIZE, PAGE_SIZE // 2, PAGE_SIZE // 4, *[PAGE_SIZE // 4] * 2]
        asked.clear()
        client.list_routes()  # the next read (another pod, a read-back) starts small
    assert asked == [PAGE_SIZE // 4] * 3


def test_routes_that_fit_are_one_page_of_up_to_the_page_size() -> None:
    asked: list[int] = []
    with LiteLLMClient(["http://proxy.test"], "k", transport=answers(asked)) as client:
        assert len(client.list_routes()) == ROUTES
    assert asked == [PAGE_SIZE]


def test_a_page_of_200_over_the_cap_is_the_caps_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "MAX_BODY_BYTES", 50 * PER_ROUTE)
    asked: list[int] = []
    with (
        LiteLLMClient(["http://proxy.test"], "k", transport=answers(asked)) as client,
        pytest.raises(ProxyError, match="the answer is larger than"),
    ):
        client.list_routes()
    assert asked[-1] == SMALL_PAGE_SIZE and asked.count(SMALL_PAGE_SIZE) == 1
