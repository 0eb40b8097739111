"""An in-place update LiteLLM stored but its router could not load, and writing it back.

LiteLLM stores what a PATCH sends, then reloads the route; when it cannot load it (a provider it
does not know, say) every running router keeps serving the route's previous values, and only
the database holds the new ones. Nothing lists that row (`?modelId=` reads the router first), so
later plans compare with the previous values and may say "No changes", while a pod that starts
afterwards loads the database row, fails, and serves no route for the host. After the confirm
deadline apply tells such an update by what every pod still lists: the previous value of every
path it changed. When each previous top-level value is one fleet-sync can write back as listed
(not a value LiteLLM hides, resolves or masks, not a key the update added), it PATCHes them
back, so the database again holds what the routers serve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sync.core.carry import carriable
from sync.core.changes import Update
from sync.core.compare import ABSENT, UNREADABLE
from sync.core.render import TAG_PATHS, Route
from sync.litellm.normalise import leaves, readable, same
from sync.litellm.owned import NEVER_LISTED
from sync.secrets.credentials import looks_like_credential

if TYPE_CHECKING:
    from sync.live.client import LiteLLMClient

WRITE_ATTEMPTS = 3
# Written back by meaning, as `import` writes them: a model name and an address.
BY_MEANING = frozenset({"model", "api_base"})


@dataclass(frozen=True)
class Restore:
    """What writes back the previous values of what the update changed: a route to PATCH with
    (its id, the previous model_name, and only the top-level keys the update changed)."""

    route: Route


def still_previous(change: Update, listings: Sequence[Mapping[str, Route]]) -> bool:
    """Whether every pod (one listing each, by id) lists the route with the previous value of
    every path the update changed that LiteLLM lists as written: its router never loaded it."""
    if not listings:
        return False
    for by_id in listings:
        live = by_id.get(change.id)
        if live is None or live.model_name != change.before.model_name:
            return False
        values = {
            p: v
            for section in ("litellm_params", "model_info")
            for p, v in leaves(section, getattr(live, section))
        }
        for field in change.diff:
            if field.checked != "read" or not field.parts or field.before == UNREADABLE:
                continue
            if not same(field.before, values.get(field.parts, ABSENT)):
                return False
    return True


def restore(change: Update) -> Restore | str:
    """The PATCH that writes back the previous value of every top-level key the update changed,
    or why it cannot be written."""
    before, after = change.before, change.route
    changed = {f.parts[:2] for f in change.diff if f.parts}
    changed |= {tuple(path.split(".", 1)) for path in change.removes}
    # The PATCH writes every key of the route, not only those the plan shows as changed: a value
    # compared through its digest (a reference LiteLLM lists resolved) was rewritten as well.
    changed |= {
        ("litellm_params", key)
        for key, value in after.litellm_params.items()
        if key not in NEVER_LISTED and before.litellm_params.get(key) != value
    }
    if before.model_info.get(TAG_PATHS) != after.model_info.get(TAG_PATHS):
        changed.add(("model_info", TAG_PATHS))
    params: dict[str, Any] = {}
    info: dict[str, Any] = {"id": change.id}  # without it, LiteLLM stores a random id
    for section, key in sorted(changed):
        values = before.litellm_params if section == "litellm_params" else before.model_info
        path = f"{section}.{key}"
        if key not in values or values[key] is None:
            if section == "litellm_params" and key in NEVER_LISTED:
                return f"LiteLLM never lists the previous {path}"
            return f"{path} was not set before, and a PATCH cannot remove a key"
        if section == "model_info":
            info[key] = values[key]
        elif _writable(key, values[key]):
            params[key] = values[key]
        else:
            return f"the previous {path} may be a value LiteLLM resolved or masked"
    return Restore(Route(change.id, before.model_name, params, info))


def _writable(key: str, value: Any) -> bool:
    """Whether a listed top-level litellm_params value is what is stored, safe to send back:
    never a secret LiteLLM resolved from a reference, nor a masked value."""
    if carriable(key, value):
        return True
    return (
        key in BY_MEANING
        and isinstance(value, str)
        and readable(("litellm_params", key), value)
        and not looks_like_credential(value)
    )


def undo(change: Update, why: str, client: LiteLLMClient, stored: bool) -> str:
    """Write back the previous values of an update the router did not load (`why`: how that is
    known), then read them back. `stored`: LiteLLM said it stored the update; else that is only
    inferred from the read-back (an error answer may also be one LiteLLM never received).
    Returns what happened, for a failed outcome."""
    from sync.live.client import ProxyError

    if stored:
        stored_text = f"LiteLLM stored the update but could not load it ({why})"
        holds = "the database holds values the router did not load"
    else:
        stored_text = (
            f"the update did not load ({why}): LiteLLM may have stored it without loading it "
            "(inferred from the read-back, not known)"
        )
        holds = "the database may hold values the router did not load"
    previous = restore(change)
    if isinstance(previous, str):
        return (
            f"{stored_text}; {holds}, so a pod that starts now may serve no route for this "
            f"host, and fleet-sync cannot write the previous "
            f"ones back ({previous}): fix fleet.yaml and apply again, or restore the route by hand"
        )
    route = previous.route
    try:
        _write_back(route, client)
        back = [
            {route.id: r} if (r := client.find_route(route.id, route.model_name, url)) else {}
            for url in client.urls
        ]
    except ProxyError as exc:
        return (
            f"{stored_text}; writing the previous values back failed ({exc}): {holds}; fix "
            "fleet.yaml and apply again, or restore the route by hand"
        )
    read = "every pod lists them" if still_previous(change, back) else "not listed as written"
    return (
        f"{stored_text}; the previous values were written back so the route survives a restart "
        f"(read back: {read})"
    )


def _write_back(route: Route, client: LiteLLMClient) -> None:
    """PATCH the previous values; sent again after an ambiguous answer (PATCH is idempotent)."""
    from sync.live.client import ErrorKind, ProxyError

    for attempt in range(WRITE_ATTEMPTS):
        try:
            client.update(route)
            return
        except ProxyError as exc:
            if exc.kind is not ErrorKind.MAYBE_COMMITTED or attempt == WRITE_ATTEMPTS - 1:
                raise
