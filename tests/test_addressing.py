"""Nothing the proxy says steers a request (issue 23): which route ids fleet-sync can address
exactly in LiteLLM's admin URL (sync/core/addressing.py), on plain data; and the client refusing
every request that would carry another, at every endpoint that takes an id, before anything is
sent (a transport that records what reaches it). The plan side: tests/cases/plan/34-*; the
real proxy: tests/test_addressing_live.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sync.core.addressing import (
    MAX_ID_LENGTH,
    addressable,
    id_problem,
    never_written,
    request_refusal,
)
from sync.core.plan import Update
from sync.core.render import Route, generation_id, route_id
from sync.live.client import ErrorKind, LiteLLMClient, ProxyError
from sync.live.rollback import undo

from .test_rollback import fleet, update

POD = "http://127.0.0.1:9"
UNSAFE = [
    "x/../victim-route-1",  # the finding: PATCH /model/victim-route-1/update once collapsed
    "x/..",
    "..",
    ".",
    "a/b",
    "a\\b",
    "x%2F..%2Fvictim-route-1",  # decoded to a separator before routing
    "a%2e%2e",
    "victim?x=1",
    "victim#frag",
    "victim route",
    "tab\there",
    "line\nbreak",
    "nul\x00",
    "esc\x1b[31m",
    "caf\u00e9",  # non-ASCII: percent-encoded, then decoded by every hop
    "\u202eevil",
    "a;b",
    "a:b",
    "a@b",
    "a+b",
    "a&b=c",
    "",
    "a" * (MAX_ID_LENGTH + 1),
]
SAFE = [
    "victim-route-1",
    str(uuid.UUID(int=7)),
    "portal.current_1~x",
    "...",  # not a dot segment
    "a..b",
    "a" * MAX_ID_LENGTH,
]


@pytest.mark.parametrize("rid", UNSAFE)
def test_an_id_a_url_would_change_or_a_hop_decode_is_outside_the_class(rid: str) -> None:
    assert not addressable(rid) and id_problem(rid)
    reason = never_written(rid)
    assert "fleet-sync never writes to it" in reason
    assert reason.isprintable()  # shown escaped: a newline or an ESC is no line of theirs


@pytest.mark.parametrize("rid", SAFE)
def test_unreserved_characters_are_the_class(rid: str) -> None:
    assert addressable(rid) and never_written(rid) == ""


@given(st.text(alphabet="ABCxyz019-._~", min_size=1, max_size=40))
def test_an_id_in_the_class_is_one_segment_exactly_as_written_decoded_and_sent(rid: str) -> None:
    """What uvicorn hands Starlette (unquote of the raw path) and what httpx sends are the id,
    one segment: nothing to decode, nothing to collapse."""
    if not addressable(rid):  # "." and ".." only
        assert rid in (".", "..")
        return
    url = httpx.URL(f"{POD}/model/{rid}/update")
    assert url.path == f"/model/{rid}/update" and url.raw_path.decode() == url.path
    assert unquote(url.path).split("/") == ["", "model", rid, "update"]


@given(st.text(max_size=30), st.text(max_size=30), st.text(max_size=30), st.integers(1, 99))
def test_every_id_fleet_sync_derives_is_in_the_class(
    fleet: str, model: str, host: str, n: int
) -> None:
    rid = route_id(fleet, model, host)
    assert addressable(rid) and addressable(generation_id(rid, n))


def test_the_longest_names_fleet_yaml_takes_derive_an_id_in_the_class() -> None:
    """The schema bounds a fleet name to 63 characters, a model name to 128, a host name to 63
    (sync/fleet/fleet.schema.json); a generation is at most 6 digits (render._GENERATION)."""
    rid = route_id("f" * 63, "m/" * 64, "h" * 63)
    assert addressable(generation_id(rid, 999_999))


def test_a_body_may_select_only_the_id_its_path_addresses() -> None:
    ok = {"model_info": {"id": "r-1"}, "litellm_params": {}}
    assert request_refusal("PATCH", "/model/{}/update", ["r-1"], ok) == ""
    other = {"model_info": {"id": "victim-route-1"}}
    assert "selects route 'victim-route-1', not 'r-1'" in request_refusal(
        "PATCH", "/model/{}/update", ["r-1"], other
    )
    no_id = {"model_info": {"fleet_sync_fleet": "f1"}}  # LiteLLM would store a random id
    assert "not a string" in request_refusal("PATCH", "/model/{}/update", ["r-1"], no_id)
    assert "(it holds '/')" in request_refusal("POST", "/model/delete", [], {"id": "x/../v"})
    assert "malformed" in request_refusal("PATCH", "/model/{}/update", [], ok)


class Recorder:
    """A transport that answers every request 200 and records it."""

    def __init__(self) -> None:
        self.sent: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        return httpx.Response(200, json={"data": [], "total_count": 0, "total_pages": 1})


@pytest.fixture
def recorded() -> Iterator[tuple[LiteLLMClient, Recorder]]:
    recorder = Recorder()
    with LiteLLMClient([POD], "sk-x", transport=httpx.MockTransport(recorder)) as client:
        yield client, recorder


def route(rid: str, **info: Any) -> Route:
    params = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1:8000/v1"}
    return Route(rid, "m", params, {"id": rid, **info})


ENDPOINTS = {
    "update PATCH": lambda c, rid: c.update(route(rid)),
    "key removal PATCH": lambda c, rid: c.remove_keys(rid, ["rpm"]),
    "delete": lambda c, rid: c.delete(rid),
    "create": lambda c, rid: c.create(route(rid)),
    "read-back ?modelId=": lambda c, rid: c.find_stored(rid),
    "read-back of its group": lambda c, rid: c.find_route(rid, "m"),
}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("rid", UNSAFE)
def test_the_client_sends_nothing_that_carries_an_unsafe_id(
    recorded: tuple[LiteLLMClient, Recorder], endpoint: str, rid: str
) -> None:
    client, recorder = recorded
    with pytest.raises(ProxyError) as caught:
        ENDPOINTS[endpoint](client, rid)
    assert caught.value.kind is ErrorKind.CLIENT
    assert "nothing was sent" in str(caught.value) and str(caught.value).isprintable()
    assert recorder.sent == []


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_safe_id_is_sent_as_one_exact_segment_and_body_id(
    recorded: tuple[LiteLLMClient, Recorder], endpoint: str
) -> None:
    client, recorder = recorded
    ENDPOINTS[endpoint](client, "victim-route-1")
    (sent,) = recorder.sent
    assert sent.url.path in (
        "/model/victim-route-1/update",
        "/model/delete",
        "/model/new",
        "/v2/model/info",
    )
    if sent.url.path == "/v2/model/info":
        assert "victim-route-1" in sent.url.params.values() or sent.url.params["model"] == "m"


def test_an_update_whose_body_selects_another_route_is_refused(
    recorded: tuple[LiteLLMClient, Recorder],
) -> None:
    client, recorder = recorded
    steered = replace(route("r-1"), model_info={"id": "victim-route-1"})
    with pytest.raises(ProxyError, match="selects route 'victim-route-1', not 'r-1'"):
        client.update(steered)
    assert recorder.sent == []


def test_rollback_writes_nothing_back_to_an_unsafe_id(
    recorded: tuple[LiteLLMClient, Recorder],
) -> None:
    client, recorder = recorded
    change = update(fleet(), fleet(litellm_params={"rpm": 5}), rpm=3)
    steered = Update(
        route=replace(change.route, id="x/../victim-route-1"),
        before=replace(change.before, id="x/../victim-route-1"),
        diff=change.diff,
    )
    said = undo(steered, "every pod lists the previous values", client, stored=True)
    assert "writing the previous values back failed" in said and "nothing was sent" in said
    assert recorder.sent == []


def test_a_model_name_from_an_answer_is_one_query_value(
    recorded: tuple[LiteLLMClient, Recorder],
) -> None:
    client, recorder = recorded
    hostile = "m&modelId=victim-route-1#/../x?search=%2F+\n"
    client.group_rows(POD, hostile)
    (sent,) = recorder.sent
    assert sent.url.path == "/v2/model/info"
    assert dict(sent.url.params) == {
        "model": hostile,
        "search": hostile,
        "page": "1",
        "size": "200",
    }


def test_a_request_to_another_base_than_the_proxys_is_refused(
    recorded: tuple[LiteLLMClient, Recorder],
) -> None:
    client, recorder = recorded
    with pytest.raises(ProxyError, match="not one of the proxy's URLs"):
        client.entries("http://127.0.0.1:9/model/victim-route-1", {"page": 1})
    assert recorder.sent == []


def test_import_leaves_out_a_route_it_could_never_write_and_says_why() -> None:
    """`import` writes what plan adopts: a host for an unsafe id would be a route plan ignores
    and a create beside it at the same address (without the key LiteLLM never lists)."""
    from sync.edit.importer import import_fleet

    def portal(rid: str, address: str) -> Route:
        params = {"model": "hosted_vllm/org/m", "api_base": address}
        return Route(rid, "m", params, {"id": rid, "db_model": True})

    imported = import_fleet(
        [
            portal("portal-1", "http://10.0.0.1:8000/v1"),
            portal("x/../victim", "http://10.0.0.2:8000/v1"),
        ],
        "f1",
    )
    assert "10.0.0.1" in imported.text and "10.0.0.2" not in imported.text
    (left,) = imported.left_out
    assert left.startswith("m: id 'x/../victim' cannot be addressed exactly")
