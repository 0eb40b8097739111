"""Rows LiteLLM stored but does not list, read for many model groups at once (issue 18): the
texts that cover the groups' names (plain data), and, on a real LiteLLM, the search that reads
them finding exactly what one `?model=G&search=G` read per group finds — past the router's
matches the listing shows, and from the first page when the router matches fewer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sync.live import stored
from sync.live.client import LiteLLMClient
from sync.live.stored import USABLE, cover, read_unlisted

from .support.proxyharness import Proxy
from .test_value_limits_live import sql


def test_names_sharing_a_character_are_one_search_of_their_longest_common_text() -> None:
    assert cover(["llama-70b", "qwen-72b", "mistral-7b"]) == (["-7"], [])
    assert cover(["prod-llama", "prod-qwen", "prod-mistral"]) == (["prod-"], [])
    assert cover(["model-0001", "model-0002", "model-0010"]) == (["model-00"], [])


def test_names_with_nothing_in_common_take_one_search_per_character_they_share_least() -> None:
    texts, alone = cover(["abc", "xyz", "abd"])
    assert sorted(texts) == ["ab", "xyz"] and alone == []


def test_a_search_never_holds_a_like_wildcard_its_escape_or_a_space() -> None:
    texts, alone = cover(["a_b", "a%b", "c\\d", "e f", "_", "%%", "über", " "])
    assert not any(set(t) & set("%_\\ ") for t in texts)
    assert sorted(alone) == [" ", "%%", "_"]  # read on their own, one ?model=G&search=G each


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=30, unique=True))
def test_every_name_is_searched(names: list[str]) -> None:
    texts, alone = cover(names)
    for name in names:
        assert name in alone or any(t in name for t in texts)
        assert (name in alone) == (not USABLE.intersection(name))
    assert all(t and USABLE.issuperset(t) for t in texts)


def route(proxy: Proxy, model_name: str, route_id: str, provider: str) -> None:
    """A route as a portal writes it; a provider LiteLLM does not know is stored, not listed."""
    body = {
        "model_name": model_name,
        "litellm_params": {"model": f"{provider}/m", "api_base": "http://127.0.0.1:9/v1"},
        "model_info": {"id": route_id},
    }
    with proxy.http() as http:
        answer = http.post("/model/new", json=body)
    assert answer.status_code in (200, 500), answer.text  # 500: "saved to the database, but"


@pytest.fixture
def groups(proxy: Proxy, fleet_name: str) -> Iterator[tuple[list[str], set[str]]]:
    """Two model groups with 5 listed routes and 3 rows stored but not listed, and a third
    group with only a listed route: (the group names, the ids of the unlisted rows)."""
    names = [f"{fleet_name}-a", f"{fleet_name}-b", f"{fleet_name}-c"]
    made = []
    for index in range(5):
        made.append((names[index % 2], f"{fleet_name}-listed-{index}", "openai"))
    made.append((names[2], f"{fleet_name}-listed-c", "openai"))
    for index in range(3):
        made.append((names[index % 2], f"{fleet_name}-unlisted-{index}", "hosted_vlm"))
    for name, rid, provider in made:
        route(proxy, name, rid, provider)
    yield names, {f"{fleet_name}-unlisted-{i}" for i in range(3)}
    with proxy.http() as http:
        for _, rid, _ in made:
            http.post("/model/delete", json={"id": rid})


@pytest.mark.litellm_matrix  # what search matches differs by release
@pytest.mark.parametrize(("window", "reads"), [(2, 2), (100, 1)])
def test_one_search_finds_what_a_read_per_group_finds(
    proxy: Proxy,
    groups: tuple[list[str], set[str]],
    window: int,
    reads: int,
    fleet_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A window of 2 rows past the 6 listed matches: the 3 stored rows fill more than half of
    it, so the search is made again with a larger window (one page, never the next page); a
    window of 100: one request for all."""
    names, unlisted = groups
    monkeypatch.setattr(stored, "SEARCH_WINDOW", window)
    with LiteLLMClient([proxy.url], proxy.api_key) as client:
        listed = client.list_routes()
        per_group = {r.id for n in names for r in client.group_rows(proxy.url, n)}
        asked: list[Mapping[str, str | int]] = []
        read = client.entries

        def entries(base: str, params: Mapping[str, str | int]) -> list[Any]:
            asked.append(params)
            return read(base, params)

        monkeypatch.setattr(client, "entries", entries)
        found = read_unlisted(client, names, listed)
    assert {r.id for r in found} == per_group - {r.id for r in listed} == unlisted
    assert all(r.model_name in names for r in found)
    assert len(asked) == reads
    assert {p["search"] for p in asked} == {f"{fleet_name}-"}  # the longest text they share


def test_a_row_litellm_cannot_read_does_not_end_the_search_early(
    proxy: Proxy,
    groups: tuple[list[str], set[str]],
    fleet_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another's row whose litellm_params is no mapping, its name holding the searched text,
    stored before the fleet's unlisted rows: LiteLLM fetches it for the page and drops it, so
    the page comes back short although stored rows of the fleet follow (attack R2-2: the search
    ended there). A short page is the end only when its rows used less than half of what
    LiteLLM fetched for it; else it is read again, one larger page."""
    names, unlisted = groups
    monkeypatch.setattr(stored, "SEARCH_WINDOW", 2)  # 2 rows fetched: the broken one, then ours
    broken = f"{fleet_name}-broken"
    table = '"LiteLLM_ProxyModelTable"'
    with sql(proxy) as run:
        run(
            f"insert into {table} (model_id, model_name, litellm_params, model_info, "
            f"created_by, updated_by) values ('{broken}', '{names[0]}-x', "
            "'\"not-a-mapping\"', '{}', 'test', 'test')"
        )
        # An update writes a row anew, after the broken one: PostgreSQL then reads it later.
        run(f"update {table} set updated_by = updated_by where model_id like '%-unlisted-%' "
            f"and model_name like '{fleet_name}-%'")  # fmt: skip
        try:
            with LiteLLMClient([proxy.url], proxy.api_key) as client:
                found = read_unlisted(client, names, client.list_routes())
        finally:
            run(f"delete from {table} where model_id = '{broken}'")
    assert {r.id for r in found} == unlisted


@pytest.mark.litellm_matrix
def test_a_router_matching_fewer_than_its_listing_showed_is_searched_from_the_start(
    proxy: Proxy, groups: tuple[list[str], set[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing read says more routes match than the router then does (a reload dropped
    some in between): the search must not skip the stored rows."""
    names, unlisted = groups
    monkeypatch.setattr(stored, "SEARCH_WINDOW", 2)
    with LiteLLMClient([proxy.url], proxy.api_key) as client:
        listed = client.list_routes()
        mine = [r for r in listed if r.model_name in names]
        ghosts = [replace(mine[0], id=f"{mine[0].id}-ghost-{i}") for i in range(6)]
        found = read_unlisted(client, names, [*listed, *ghosts])
    assert {r.id for r in found} == unlisted
