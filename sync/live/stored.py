"""The rows of model groups LiteLLM stored but its router does not list (a write it could not
load), read with as few requests as LiteLLM allows.

Every GET /v2/model/info without `modelId` deep-copies the proxy's whole route list, so one
`?model=G&search=G` read per model group costs the proxy groups x routes. What `search=S` does
(model_info_v2 and _apply_search_filter_to_models, LiteLLM 1.98.1, 1.108.7, 1.110.2): it answers
the router's routes whose model_name (1.108+: or litellm_params.model; team rows: or public
name) contains S, case-insensitively, then the database rows whose model_name contains S
(`ILIKE`) that are not among those router routes — the stored-but-unlisted rows — fetching only
`page x size - router matches` of them. So one search for a text every group's name contains
finds the unlisted rows of all those groups; its pages start past the router's matches, which the
listing just read tells (a lower bound: the router may match more, never fewer, and a page that
starts on a row the listing does not hold is read again from the first page).

The groups are covered by as few such texts as their names allow: one when they share a
character, at most one per distinct character. A text holds only printable
ASCII other than `%`, `_`, `\\` and spaces (LIKE's wildcards and escape, search's strip, case
folding the same in Python and PostgreSQL); a group whose name has no such character is read on
its own with `?model=G&search=G`.

A row of another model group can hold an id the plan is about to create (a row stored under an
id read from a plan, that LiteLLM never loads): read_holders asks for each create's id once
(`?modelId=`), only when the plan has creates, so the plan sees the holder as it sees a listed
one — a conflict for a host's derived id, the next free generation for a replacement.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sync.live.answers import parse_route

if TYPE_CHECKING:
    from sync.core.plan import Plan
    from sync.core.render import Route
    from sync.fleet.model import Fleet
    from sync.live.client import LiteLLMClient

# The database rows one search read may return past the router's matches (LiteLLM fetches
# `page x size - router matches` rows for the page, unordered, and drops a row it cannot decrypt
# without a trace, so only what one page holds is believed: a later page would start past
# dropped rows and skip as many others). A window used at most by half is the end; otherwise the
# read is made again with a window four times larger, up to MAX_SEARCH_SIZE per answer (the
# 16 MiB cap), past which the groups are read one by one.
SEARCH_WINDOW = 100
MAX_SEARCH_SIZE = 1500
# Rounds of create ids read_holders asks about: a holder found moves a replacement to the next
# generation, whose id is asked about in the next round. Past them apply's own check refuses.
HOLDER_ROUNDS = 4
USABLE = frozenset(string.ascii_letters + string.digits + string.punctuation) - set("%_\\")


def read_unlisted(
    client: LiteLLMClient, groups: Iterable[str], listed: Sequence[Route], url: str | None = None
) -> list[Route]:
    """Every row of these model groups LiteLLM stored and the router of `url` does not list,
    `listed` being that router's listing."""
    base = url or client.write_url
    names = sorted(set(groups))
    texts, alone = cover(names)
    listed_ids = {r.id for r in listed}
    wanted = set(names)
    rows: dict[str, Route] = {}
    for text in texts:
        found = _search(client, base, text, listed)
        if found is None:  # too many rows for one answer: the groups it covers, one by one
            alone += [n for n in names if text in n and n not in alone]
            continue
        for route in found:
            if route.id not in listed_ids and route.model_name in wanted:
                rows.setdefault(route.id, route)
    for name in alone:
        for route in client.group_rows(base, name):
            if route.id not in listed_ids:
                rows.setdefault(route.id, route)
    return list(rows.values())


def cover(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(texts that together occur in every name that has a usable character, the names that
    have none). Greedy: the character most names share, grown to the longest text all of those
    names share (fewer router routes match a longer text)."""
    left = [n for n in names if USABLE.intersection(n)]
    alone = [n for n in names if not USABLE.intersection(n)]
    texts: list[str] = []
    while left:
        counts: dict[str, int] = {}
        for name in left:
            for char in USABLE.intersection(name):
                counts[char] = counts.get(char, 0) + 1
        char = min(counts, key=lambda c: (-counts[c], c))
        covered = [n for n in left if char in n]
        text = _longest_common(covered) or char
        texts.append(text)
        left = [n for n in left if text not in n]
    return texts, alone


def _longest_common(names: Sequence[str]) -> str:
    """The longest usable text every name contains ("" when none): the length by bisection
    (a common text of length n has common texts of every shorter length)."""
    shortest = min(names, key=len)

    def common(length: int) -> str:
        for start in range(len(shortest) - length + 1):
            text = shortest[start : start + length]
            if USABLE.issuperset(text) and all(text in n for n in names):
                return text
        return ""

    low, high, best = 1, len(shortest), ""
    while low <= high:
        middle = (low + high) // 2
        if found := common(middle):
            best, low = found, middle + 1
        else:
            high = middle - 1
    return best


def _search(
    client: LiteLLMClient, base: str, text: str, listed: Sequence[Route]
) -> list[Route] | None:
    """The routes and rows `?search=text` answers, in one page that starts at or before the
    first database row (after the router matches the listing shows) and leaves a window of
    rows after them; None when the rows do not fit one answer."""
    folded = text.lower()
    listed_ids = {r.id for r in listed}
    matches = sum(1 for r in listed if folded in r.model_name.lower())
    window = SEARCH_WINDOW
    while True:
        page, size = page_for(matches, window)
        if size > MAX_SEARCH_SIZE:
            return None
        entries = client.entries(base, {"search": text, "page": page, "size": size})
        routes = [r for r in map(parse_route, entries) if r is not None]
        if page > 1 and (not routes or routes[0].id not in listed_ids):
            matches = 0  # the router matches fewer than its listing showed: skip nothing
            continue
        # Of this page, the router's matches come first; what follows is the database's.
        router = sum(1 for e in routes if e.id in listed_ids)
        fetched = size - router  # the rows LiteLLM fetched from the database for this page
        stored = len(entries) - router
        if len(entries) < size and 2 * stored < fetched:
            return routes
        window = 4 * max(window, stored)


def page_for(matches: int, window: int) -> tuple[int, int]:
    """(page, size) of a page that holds the last of `matches` router routes (a later page
    starts on one: the check that the router still matches as many) and ends at least `window`
    rows after it: its database rows all in one page."""
    if not matches:
        return 1, 2 * window
    for size in range(2 * window, 4 * window):
        if 1 <= matches % size <= size - window:
            return matches // size + 1, size
    return 1, matches + window


def read_holders(
    client: LiteLLMClient,
    fleet: Fleet,
    listed: Sequence[Route],
    unlisted: Sequence[Route],
    take_over: bool,
    litellm_version: str | None,
    first: Plan | None = None,
) -> tuple[list[Route], Plan | None]:
    """The stored rows the router does not list that hold an id the plan (made from what was
    read) would create: one `?modelId=` read per create id, none when it creates nothing. And
    the plan of the last round when it found no holder: the plan of `listed` and
    `[*unlisted, *found]` (without notes), which the live read keeps so the command does not
    make it again; None when the rounds ran out. `first`, when given, is the plan of
    `listed` and `unlisted` already made (the first round's)."""
    from sync.core.planner import make_plan
    from sync.core.render import render

    desired = render(fleet)
    asked = {r.id for r in (*listed, *unlisted)}
    found: list[Route] = []
    for _ in range(HOLDER_ROUNDS):
        rows = [*unlisted, *found]
        if first is not None and not found:
            plan = first
        else:
            plan = make_plan(fleet, desired, listed, rows, take_over, litellm_version)
        ids = [c.id for c in plan.of("create") if c.id not in asked]
        asked.update(ids)
        held = [row for row in map(client.find_stored, ids) if row is not None]
        if not held:
            return found, plan
        found += held
    return found, None
