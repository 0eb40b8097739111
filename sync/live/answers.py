"""What an answer of LiteLLM's admin API must look like before fleet-sync believes it.

A proxy that answers garbage (a broken or hostile one, or something else on its port) must get
a clear error, never a traceback, a hang or a plan: JSON nested past any real answer, page
counts that are not whole numbers or would make fleet-sync read forever, entries that are not
deployments. Pure functions on parsed data (parsed by sync/untrusted/json_parser.py, the one bounded
parser); the client (sync/live/client.py) turns ValueError into a ProxyError.
"""

from __future__ import annotations

import json
from typing import Any

from sync.core.render import Route
from sync.secrets.display import printable

# 1,000 pages of 200 = 200,000 routes, far beyond any proxy; the bound keeps a lying total_pages
# from making fleet-sync read forever.
MAX_PAGES = 1000


def listing_page(data: Any, page: int, page_size: int) -> tuple[list[dict[str, Any]], int, int]:
    """(entries, total_count, total_pages) of one /v2/model/info page, every field type-checked
    and the counts bounded; ValueError saying what is wrong otherwise."""

    def bad(why: str) -> ValueError:
        return ValueError(f"GET /v2/model/info page {page}: {why}")

    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise bad("the answer has no data list")
    items: list[Any] = data["data"]
    count = data.get("total_count", len(items))
    pages = data.get("total_pages", 1)
    if pages is None:  # older answers: one page
        pages = 1
    limit = MAX_PAGES * page_size
    if not _is_int(count) or not 0 <= count <= limit:
        raise bad(f"total_count is {_shown(count)}, not a whole number from 0 to {limit}")
    if not _is_int(pages) or not 0 <= pages <= MAX_PAGES:
        raise bad(f"total_pages is {_shown(pages)}, not a whole number from 0 to {MAX_PAGES}")
    if pages > max(count, 1):
        raise bad(f"total_pages {pages} exceeds total_count {count} (a page holds a route)")
    for index, entry in enumerate(items):
        problem = entry_problem(entry)
        if problem:
            raise bad(f"entry {index} {problem}")
    return items, count, pages


def entry_problem(entry: Any) -> str:
    """Why a listed entry is not a deployment fleet-sync can read ("" when it is)."""
    if not isinstance(entry, dict):
        return f"is {_shown(entry)}, not an object"
    info = entry.get("model_info")
    if not isinstance(info, dict) or not isinstance(info.get("id"), str) or not info["id"]:
        return "has no model_info.id"
    if not isinstance(entry.get("model_name"), str):
        return f"({_shown(info['id'])}) has no model_name string"
    if not isinstance(entry.get("litellm_params", {}), dict):
        return f"({_shown(info['id'])}) has litellm_params that are not an object"
    return ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    return printable(json.dumps(value)[:40])


def parse_route(entry: Any) -> Route | None:
    """A live entry as a Route, or None for what is not a deployment (no id)."""
    if not isinstance(entry, dict):
        return None
    info = entry.get("model_info")
    params = entry.get("litellm_params")
    if not isinstance(info, dict) or not isinstance(info.get("id"), str):
        return None
    return Route(
        id=info["id"],
        model_name=str(entry.get("model_name", "")),
        litellm_params=params if isinstance(params, dict) else {},
        # LiteLLM lists ~170 null cost fields per route; nothing reads a null (normalise drops
        # them), and without them a 10,000-route listing takes 40 % of the memory.
        model_info={k: v for k, v in info.items() if v is not None},
    )
