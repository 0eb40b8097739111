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
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sync.live.answers import parse_route
from sync.live.errors import ErrorKind, ProxyError

if TYPE_CHECKING:
    from sync.core.render import Route
    from sync.live.client import LiteLLMClient

# Each page of a search costs LiteLLM the same full copy; the first may repeat up to this many
# listed routes.
SEARCH_PAGE_SIZE = 100
MAX_SEARCH_PAGES = 1000  # 100,000 rows; past that the answer is not believed
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
        for route in _search(client, base, text, listed):
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


def _search(client: LiteLLMClient, base: str, text: str, listed: Sequence[Route]) -> list[Route]:
    """The routes and rows `?search=text` answers, from the page holding the last router match
    the listing shows (the matches before it are skipped)."""
    folded = text.lower()
    matches = sum(1 for r in listed if folded in r.model_name.lower())
    # The page holding the last match the listing shows (it starts on a listed route), of a
    # size that leaves room after it: one request when no row is unlisted.
    size = next((n for n in range(SEARCH_PAGE_SIZE, 1, -1) if matches % n), SEARCH_PAGE_SIZE)
    first = (matches - 1) // size + 1 if matches else 1
    listed_ids = {r.id for r in listed}
    while True:
        routes: list[Route] = []
        for page in range(first, first + MAX_SEARCH_PAGES):
            params: dict[str, str | int] = {"search": text, "page": page, "size": size}
            entries = client.entries(base, params)
            head = parse_route(entries[0]) if entries else None
            if page == first > 1 and (head is None or head.id not in listed_ids):
                break  # the router matches fewer than its listing showed: skip nothing
            routes += [r for r in map(parse_route, entries) if r is not None]
            if len(entries) < size:
                return routes
        else:
            raise ProxyError(
                ErrorKind.BAD_RESPONSE,
                f"a search of the stored routes did not end after {MAX_SEARCH_PAGES} pages",
            )
        first, size = 1, SEARCH_PAGE_SIZE
