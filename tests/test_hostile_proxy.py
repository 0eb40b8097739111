"""Garbage from the proxy (issue 8, item 6): every kind is a clear error, exit 1, no traceback,
no hang, and nothing written or pruned.

tests/support/faultproxy.py stands between fleet-sync and the real LiteLLM and answers the route
listing with garbage built from the real answer; fleet.yaml asks for a prune, so a tool that
believed the garbage (or half of it) would delete a route that exists."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sync.core.render import route_id

from .conftest import SESSION
from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import Proxy, fleet_sync, write_fleet

OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"
JSON = [("Content-Type", "application/json")]
MiB = 2**20
# A gzip header, then a deflate block of the reserved type 11: "invalid block type".
BROKEN_GZIP = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xff" * 16


@dataclass(frozen=True)
class Setup:
    proxy: Proxy
    fleet: Path  # keeps host a, drops host b: apply would prune b
    model: str
    page: dict[str, Any]  # the real first page of /v2/model/info


@pytest.fixture(scope="module")
def setup(proxy: Proxy, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    name = f"hostile-{SESSION}"
    model = f"{name}-m"
    fleet = tmp_path_factory.mktemp("hostile") / "fleet.yaml"
    write_fleet(fleet, name, {model: {"hosts": {"a": OLD, "b": NEW}}})
    run = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
    assert run.code == 0, run.out + run.err
    write_fleet(fleet, name, {model: {"hosts": {"a": OLD}}})
    with proxy.http() as http:
        page = http.get("/v2/model/info", params={"page": 1, "size": 200}).json()
    yield Setup(proxy, fleet, model, page)


def with_(page: dict[str, Any], **fields: Any) -> bytes:
    return json.dumps({**page, **fields}).encode()


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def deep_entry(page: dict[str, Any]) -> bytes:
    entry = json.loads(json.dumps(page["data"][0]))
    entry["litellm_params"]["extra_body"] = nested(100)  # parses; past MAX_JSON_DEPTH
    return with_(page, data=[entry, *page["data"][1:]])


def surrogate_entry(page: dict[str, Any]) -> dict[str, Any]:
    """Another fleet's route whose name and id hold lone surrogates (only listed, never ours)."""
    entry = json.loads(json.dumps(page["data"][0]))
    entry["model_name"] = "x\ud800y"
    entry["model_info"] = {"id": "id-\udcff", "db_model": True}
    return dict(entry)


# name -> (the fault on GET /v2/model/info built from the real page, what the error says)
GARBAGE: dict[str, tuple[Callable[[dict[str, Any]], Fault], str]] = {
    "total-pages-string": (
        lambda p: Fault.answer(200, with_(p, total_pages="2"), JSON),
        'total_pages is "2", not a whole number',
    ),
    "total-pages-float": (
        lambda p: Fault.answer(200, with_(p, total_pages=1.5), JSON),
        "total_pages is 1.5, not a whole number",
    ),
    "total-pages-huge": (
        lambda p: Fault.answer(200, with_(p, total_pages=10**12), JSON),
        "total_pages is 1000000000000, not a whole number from 0 to 1000",
    ),
    "total-pages-beyond-count": (
        lambda p: Fault.answer(200, with_(p, total_pages=900), JSON),
        "total_pages 900 exceeds total_count",
    ),
    "total-count-string": (
        lambda p: Fault.answer(200, with_(p, total_count=str(p["total_count"])), JSON),
        "total_count is",
    ),
    "total-count-negative": (
        lambda p: Fault.answer(200, with_(p, total_count=-1), JSON),
        "total_count is -1, not a whole number",
    ),
    "total-count-boolean": (
        lambda p: Fault.answer(200, with_(p, total_count=True), JSON),
        "total_count is true, not a whole number",
    ),
    "data-not-a-list": (
        lambda p: Fault.answer(200, with_(p, data={"a": 1}), JSON),
        "the answer has no data list",
    ),
    "entry-not-an-object": (
        lambda p: Fault.answer(200, with_(p, data=["route", *p["data"][1:]]), JSON),
        'entry 0 is "route", not an object',
    ),
    "entry-without-id": (
        lambda p: Fault.answer(
            200, with_(p, data=[{**p["data"][0], "model_info": {}}, *p["data"][1:]]), JSON
        ),
        "entry 0 has no model_info.id",
    ),
    "nested-past-the-limit": (
        lambda p: Fault.answer(200, deep_entry(p), JSON),
        "nested deeper than 64 levels",
    ),
    "nested-past-python-recursion": (
        lambda p: Fault.answer(200, b"[" * 200_000 + b"]" * 200_000, JSON),
        "nested deeper than 64 levels",
    ),
    "not-json": (lambda p: Fault.invalid_json(), "the answer is not JSON"),
    # json.loads takes "\ud800"; the string it makes cannot be written anywhere (UTF-8).
    "lone-surrogate-in-a-name": (
        lambda p: Fault.answer(200, with_(p, data=[*p["data"], surrogate_entry(p)]), JSON),
        "lone surrogate escape",
    ),
    # json.loads decodes bytes with surrogatepass: the UTF-8 bytes of one are no escape.
    "lone-surrogate-encoded-in-utf8": (
        lambda p: Fault.answer(
            200,
            with_(p, data=[*p["data"], {**p["data"][0], "model_name": "x-SURROGATE"}]).replace(
                b"SURROGATE", b"\xed\xa0\x80"
            ),
            JSON,
        ),
        "lone surrogate",
    ),
    "lone-surrogate-in-a-key": (
        lambda p: Fault.answer(200, with_(p, data=[*p["data"], {"\udcff": 1}]), JSON),
        "lone surrogate escape",
    ),
    "broken-gzip": (
        lambda p: Fault.answer(
            200, BROKEN_GZIP + json.dumps(p).encode(), [*JSON, ("Content-Encoding", "gzip")]
        ),
        "the answer cannot be decoded",
    ),
    "gzip-bomb": (
        lambda p: Fault.answer(
            200, gzip.compress(b" " * (17 * MiB) + b"{}"), [*JSON, ("Content-Encoding", "gzip")]
        ),
        "the answer is larger than 16 MiB",
    ),
    "body-too-large": (
        lambda p: Fault.answer(200, b" " * (17 * MiB) + json.dumps(p).encode(), JSON),
        "the answer is larger than 16 MiB",
    ),
    # One byte every 50 ms: each read is quick, the whole answer would take minutes.
    "drips-past-the-deadline": (lambda p: Fault.drip(0.05), "no complete answer within 1s"),
}


@pytest.mark.parametrize("kind", list(GARBAGE), ids=list(GARBAGE))
def test_garbage_listing_is_a_clear_error_and_prunes_nothing(setup: Setup, kind: str) -> None:
    make, message = GARBAGE[kind]
    env = setup.proxy.env()
    with FaultProxy(setup.proxy.url) as fp:
        fp.add_rule("GET", "/v2/model/info", make(setup.page), times=None)
        env.update(LITELLM_PROXY_URL=fp.url, LITELLM_PROXY_URLS=fp.url)
        run = fleet_sync(["apply", "-f", str(setup.fleet), "--timeout", "1"], env)
        assert fp.forwarded_writes() == []
    assert run.code == 1, run.out + run.err  # fleet_sync() asserts there is no traceback
    assert message in run.err, run.err
    assert run.err.startswith("error: ") and run.err.count("\n") == 1, run.err
    ids = [route_id(f"hostile-{SESSION}", setup.model, h) for h in ("a", "b")]
    assert setup.proxy.ids(setup.model) == sorted(ids)  # b is still there


def test_the_real_listing_passes_the_same_checks(setup: Setup) -> None:
    """The checks have teeth only if the real answer passes them: through the same proxy with no
    fault, apply prunes b."""
    env = setup.proxy.env()
    with FaultProxy(setup.proxy.url) as fp:
        env.update(LITELLM_PROXY_URL=fp.url, LITELLM_PROXY_URLS=fp.url)
        run = fleet_sync(["plan", "-f", str(setup.fleet), "--format", "json"], env)
    assert run.code == 0, run.err
    changes = json.loads(run.out)["changes"]
    assert [(c["action"], c["host"]) for c in changes] == [("delete", "b")]


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_a_lone_surrogate_is_one_line_in_every_plan_format(setup: Setup, fmt: str) -> None:
    env = setup.proxy.env()
    answer = with_(setup.page, data=[*setup.page["data"], surrogate_entry(setup.page)])
    with FaultProxy(setup.proxy.url) as fp:
        fp.add_rule("GET", "/v2/model/info", Fault.answer(200, answer, JSON), times=None)
        env.update(LITELLM_PROXY_URL=fp.url, LITELLM_PROXY_URLS=fp.url)
        run = fleet_sync(["plan", "-f", str(setup.fleet), "--format", fmt], env)
    assert run.code == 1 and run.out == "", run.out + run.err
    assert "lone surrogate escape" in run.err and run.err.count("\n") == 1, run.err
