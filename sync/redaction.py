"""Which values a plan may show: redaction by provenance, not by key name.

LiteLLM resolves an ``os.environ/NAME`` reference on any key of litellm_params (a master key on
``timeout``, a database URL with its password on ``organization``) and lists the resolved value.
Whether a live value is a secret therefore depends on where it came from, not on what its key is
called:

- a desired value is shown as fleet.yaml writes it (a reference stays ``os.environ/NAME``);
- a live value at a path whose desired value is a reference is never shown;
- a live string at a path fleet.yaml does not set (a key being removed, a hand edit, a route
  being pruned) is not shown either: it may be a reference LiteLLM resolved, written by an
  earlier fleet.yaml or by hand, and nothing on the read side can tell;
- a live string in litellm_params that differs from what fleet.yaml sets is not shown either:
  LiteLLM resolves references there, so an earlier fleet.yaml (or a hand edit) that put
  ``os.environ/LITELLM_MASTER_KEY`` on ``organization`` would otherwise print the key in the pull
  request that replaces it with a literal — and the plan job holds no key to scrub it by;
- model and api_base, which fleet-sync sets from its own validated fields, are shown when they
  have the shape of a model and an address (an address without its user:password@, query and
  fragment); model_name, id and the fleet_sync_* tags (never resolved) are shown; numbers,
  booleans and references are shown;
- every address loses its user:password@ part, lists are walked like mappings.

The plan core compares raw values; this module is applied where plans are rendered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .compare import ABSENT, shown
from .credentials import is_reference, looks_like_credential, strip_userinfo
from .plan import Change, Delete, Plan

# Paths LiteLLM never resolves references on: shown as they are.
OWN_PATHS = frozenset({"model_name", "model_info.id"})
OWN_PREFIX = "model_info.fleet_sync_"
# Paths fleet-sync fills from its own validated fields, but where LiteLLM would resolve a
# reference a hand edit put there: shown only in the shape the field has.
SHAPED_PATHS = frozenset({"litellm_params.model", "litellm_params.api_base"})
_MODEL_SHAPE = re.compile(r"[a-z0-9_]+/[A-Za-z0-9._:/@+-]{1,200}")
_ADDRESS_SHAPE = re.compile(r"https?://[A-Za-z0-9.\[\]:-]+(/[A-Za-z0-9._~%/+-]*)?")


class Hidden(str):
    """A placeholder shown instead of a live value (a plain string in JSON)."""

    __slots__ = ()


class _Missing:
    """fleet.yaml sets nothing at this path."""


MISSING = _Missing()


def hidden_reference(reference: str) -> Hidden:
    return Hidden(f"(hidden: the proxy's value of {reference})")


HIDDEN_UNSET = Hidden("(hidden: a live string fleet.yaml does not set)")
HIDDEN_DIFFERS = Hidden("(hidden: a live string that differs from fleet.yaml)")
HIDDEN_SHAPE = Hidden("(hidden: a live value that does not have this field's shape)")


def shaped(path: str, live: str) -> str:
    """A live model or api_base as it may be shown: in its field's shape, or hidden."""
    if path == "litellm_params.api_base":
        address = strip_userinfo(live)
        cut = re.split(r"[?#]", address, maxsplit=1)
        shown_address = cut[0] + ("?***" if len(cut) > 1 else "")
        return (
            shown_address
            if _ADDRESS_SHAPE.fullmatch(cut[0].replace("***@", ""))
            else (HIDDEN_SHAPE)
        )
    if _MODEL_SHAPE.fullmatch(live) and not looks_like_credential(live):
        return live
    return HIDDEN_SHAPE


def without_userinfo(value: Any) -> Any:
    """A value with user:password@ masked in every string, at any depth."""
    if isinstance(value, str):
        return value if isinstance(value, Hidden) else strip_userinfo(value)
    if isinstance(value, Mapping):
        return {k: without_userinfo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_userinfo(v) for v in value]
    return value


def live_value(live: Any, desired: Any, path: str) -> Any:
    """What may be shown of a live value, given the desired value at the same path
    (MISSING when fleet.yaml sets nothing there)."""
    if live == ABSENT or path in OWN_PATHS or path.startswith(OWN_PREFIX):
        return without_userinfo(live)
    if path in SHAPED_PATHS and isinstance(live, str):
        return shaped(path, live)
    if is_reference(desired):
        return live if live == desired else hidden_reference(desired)
    if isinstance(live, Mapping):
        return {
            k: live_value(v, _child(desired, k), f"{path}.{k}" if path else str(k))
            for k, v in live.items()
        }
    if isinstance(live, list | tuple):
        return [live_value(v, _item(desired, i), f"{path}[{i}]") for i, v in enumerate(live)]
    if isinstance(live, str) and not is_reference(live):
        if not isinstance(desired, str | int | float | bool):
            return HIDDEN_UNSET
        if live != desired and (path.startswith("litellm_params.") or looks_like_credential(live)):
            return HIDDEN_DIFFERS
        return strip_userinfo(live)
    return live


def _child(desired: Any, key: Any) -> Any:
    return desired.get(key, MISSING) if isinstance(desired, Mapping) else MISSING


def _item(desired: Any, index: int) -> Any:
    if isinstance(desired, list | tuple) and index < len(desired):
        return desired[index]
    return MISSING


def field_values(path: str, before: Any, after: Any) -> tuple[Any, Any]:
    """(before, after) of one field change as it may be shown: before is live, after desired."""
    desired = MISSING if after == ABSENT else after
    return live_value(before, desired, path), without_userinfo(after)


def desired_view(change: Change, plan: Plan) -> Any:
    """The desired route a change's live values are judged against: its own, or for a route
    deleted while its host keeps one (a replacement, a duplicate, an older generation) the
    host's route (it carries the parameters fleet.yaml sets); MISSING for a prune, where
    fleet.yaml wants nothing."""
    if not isinstance(change, Delete):
        return shown(change.route)
    staying = [c.route for c in plan.changes if not isinstance(c, Delete)] + list(plan.serving)
    for route in staying:
        if route.id == change.replaced_by:
            return shown(route)
    return MISSING


def change_json(change: Change, body: dict[str, Any], desired: Any) -> dict[str, Any]:
    """One change of Plan.to_json() with its live values hidden by provenance."""
    out = dict(body)
    if out.get("before") is not None:
        out["before"] = live_value(out["before"], desired, "")
    if out.get("after") is not None:
        out["after"] = without_userinfo(out["after"])
    diff = []
    for entry in out.get("diff", []):
        before, after = field_values(entry["path"], entry["before"], entry["after"])
        diff.append({**entry, "before": before, "after": after})
    out["diff"] = diff
    return out


def plan_json(plan: Plan) -> dict[str, Any]:
    """Plan.to_json() as every output shows it (stdout, --out, the PR comment)."""
    body = plan.to_json()
    entries = zip(plan.changes, body["changes"], strict=True)
    body["changes"] = [change_json(c, entry, desired_view(c, plan)) for c, entry in entries]
    return body
