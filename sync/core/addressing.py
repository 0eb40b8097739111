"""Which route ids fleet-sync can address exactly in LiteLLM's admin API; a route under any other
id is never written to.

An id is written into a URL (`PATCH /model/{id}/update`, the update and the key removal of
LiteLLM >= 1.109, rollback's write-back) and into the body positions that select the row
written (`{"id": ...}` of /model/delete, `model_info.id`). LiteLLM's FastAPI app matches the
path only after uvicorn percent-decoded it (`unquote(raw_path)`, uvicorn 0.54 under LiteLLM
1.98.1, 1.108.7 and 1.110.2), and Starlette's `{model_id}` takes one segment, `[^/]+`. So no
spelling reaches an id holding `/` (sent raw, `x/../victim` is another path, whose dot segments
the HTTP client collapses: `/model/victim/update`; sent as `%2F`, it is decoded back into a
separator before routing), and an id some spelling reaches only through decoding (`%`, `?`,
`#`, spaces, controls, non-ASCII) is as exact as every hop on the way (a reverse proxy in front
of LiteLLM may decode or normalise it again). A segment `.` or `..` is removed by the client or
any hop on the way.

The safe class is therefore what needs no encoding and no hop may change: RFC 3986's
unreserved characters (letters, digits, `-`, `.`, `_`, `~`), not `.` or `..`, of a bounded
length. Every id fleet-sync derives is in it (render.route_id: UNSAFE_NAME_CHARACTERS and a
hash suffix); LiteLLM's own ids (uuid4) are in it. A live route under any other id was written
by hand or by someone choosing the id: fleet-sync never owns, adopts, updates, prunes or
conflicts onto it (the plan lists it as ignored, with the reason), and the client
(sync/live/client.py) refuses to send such an id at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sync.core.ownership import Claim
from sync.core.render import Route
from sync.secrets.display import text

# A route id LiteLLM stores is text; fleet-sync's own are far shorter (names + 11 characters).
MAX_ID_LENGTH = 512
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]+")
_SHOWN = 80  # characters of an id shown in a reason


def id_problem(rid: object) -> str:
    """Why `rid` cannot be addressed exactly as one path segment of LiteLLM's admin URL, or ""
    when it can (and is then written as it is, with no encoding)."""
    if not isinstance(rid, str) or not rid:
        return "it is empty"
    if len(rid) > MAX_ID_LENGTH:
        return f"it is longer than {MAX_ID_LENGTH} characters"
    if rid in (".", ".."):
        return "a URL path takes it as a dot segment"
    if _UNRESERVED.fullmatch(rid) is None:
        bad = sorted({c for c in rid if _UNRESERVED.fullmatch(c) is None})
        return "it holds " + ", ".join(_char(c) for c in bad[:5]) + (" ..." if bad[5:] else "")
    return ""


def addressable(rid: str) -> bool:
    return not id_problem(rid)


def shown(rid: str) -> str:
    """An id as reasons show it: quoted, non-printable characters escaped, bounded."""
    cut = rid[:_SHOWN] + ("..." if len(rid) > _SHOWN else "")
    return f"'{text(cut)}'"


def never_written(rid: str) -> str:
    """The reason a plan lists a live route under such an id as ignored ("" for a safe id)."""
    problem = id_problem(rid)
    if not problem:
        return ""
    return (
        f"id {shown(rid)} cannot be addressed exactly in LiteLLM's admin URL ({problem}); "
        "fleet-sync never writes to it: re-create it by hand under an id of letters, digits "
        "and -._~"
    )


def unaddressable(route: Route) -> Claim | None:
    """The claim phase's first question: a live route under an id fleet-sync cannot address
    exactly is never the fleet's, whatever its tags, model group or `owns:` say (None: ask
    ownership.claim)."""
    reason = never_written(route.id)
    return Claim(False, reason) if reason else None


def _char(c: str) -> str:
    if c == " ":
        return "a space"
    if c.isprintable():
        return f"'{c}'"
    return text(c)  # \n, \u0000 ...


def id_refusal(rid: object, where: str) -> str:
    """Why a request (`where`: what it is) may not carry `rid`, or "" when it may."""
    problem = id_problem(rid) if isinstance(rid, str) else "it is not a string"
    if not problem:
        return ""
    return (
        f"refusing {where}: route id {shown(str(rid))} cannot be addressed exactly in "
        f"LiteLLM's admin URL ({problem}); nothing was sent"
    )


def request_refusal(method: str, path: str, ids: Sequence[str], body: object) -> str:
    """Why an admin request may not be sent, or "": `path` a literal with one `{}` per id in
    `ids`, each id addressable; a JSON body's selecting ids (`selecting`) addressable, and the
    path's id when it has one."""
    if not path.startswith("/") or path.count("{}") != len(ids):
        return f"refusing {method} {path}: malformed admin path"
    where = f"{method} {path.replace('{}', '<id>')}"
    for rid in (*ids, *selecting(body, bool(ids))):
        refusal = id_refusal(rid, where)
        if refusal:
            return refusal
        if ids and rid != ids[0]:
            return (
                f"refusing {where}: its body selects route {shown(str(rid))}, not "
                f"{shown(ids[0])}; nothing was sent"
            )
    return ""


def selecting(body: object, addressed: bool) -> list[object]:
    """The values of a JSON body that select the row LiteLLM writes: `id` (/model/delete) and
    `model_info.id` (/model/new, PATCH). A PATCH (`addressed`: its path holds the id) with a
    model_info but no id in it makes LiteLLM store a random id: that selects None (refused)."""
    if not isinstance(body, dict):
        return []
    out = [body["id"]] if "id" in body else []
    info = body.get("model_info")
    if isinstance(info, dict) and "id" in info:
        out.append(info["id"])
    elif addressed and info is not None:
        out.append(None)
    return out
