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
- a live string (or a key) that looks like a credential by its shape (sync/secrets/credentials.py: a
  token, a long random string, a hex run, a secret header...) is never shown, wherever it is: a
  hand edit can put one in model_info or in an address's path, where fleet.yaml could not (validate
  refuses it); model_name and id excepted, which every change names anyway (the final scrub masks
  issuers' tokens in them); a desired value of that shape, should one ever get past validate,
  is hidden the same way;
- every address loses its user:password@ part, lists are walked like mappings.

The plan core compares raw values; this module is applied where plans are rendered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sync.core.compare import ABSENT, shown
from sync.core.plan import Change, Delete, Plan
from sync.secrets.credentials import (
    is_reference,
    looks_like_credential,
    mask_credentials,
    strip_userinfo,
    written_out,
)

# Paths LiteLLM never resolves references on: shown as they are (the route's name and id, which
# every change names anyway).
OWN_PATHS = frozenset({"model_name", "model_info.id"})
OWN_PREFIX = "model_info.fleet_sync_"
# Paths fleet-sync fills from its own validated fields, but where LiteLLM would resolve a
# reference a hand edit put there: shown only in the shape the field has.
SHAPED_PATHS = frozenset({"litellm_params.model", "litellm_params.api_base"})
_MODEL_SHAPE = re.compile(r"[a-z0-9][a-z0-9_-]*/[A-Za-z0-9._:/@+-]{1,200}")
_ADDRESS_SHAPE = re.compile(r"https?://[A-Za-z0-9.\[\]:-]+(/[A-Za-z0-9._~%/+-]*)?")


class Hidden(str):
    """A placeholder shown instead of a live value (a plain string in JSON)."""

    __slots__ = ()


class _Missing:
    """fleet.yaml sets nothing at this path."""


MISSING = _Missing()


def hidden_reference(reference: str) -> Hidden:
    return Hidden(f"(hidden: a live value where fleet.yaml gives {reference})")


HIDDEN_UNSET = Hidden("(hidden: a live string fleet.yaml does not set)")
HIDDEN_DIFFERS = Hidden("(hidden: a live string that differs from fleet.yaml)")
HIDDEN_SHAPE = Hidden("(hidden: a live value that does not have this field's shape)")
HIDDEN_CREDENTIAL = Hidden("(hidden: looks like a credential)")


def _credential(value: Any) -> bool:
    return isinstance(value, str) and not is_reference(value) and looks_like_credential(value)


def shaped(path: str, live: str) -> str:
    """A live model or api_base as it may be shown: in its field's shape, or hidden."""
    if path == "litellm_params.api_base":
        address = strip_userinfo(live)
        cut = re.split(r"[?#]", address, maxsplit=1)
        bare = cut[0].replace("***@", "")
        if not _ADDRESS_SHAPE.fullmatch(bare):
            return HIDDEN_SHAPE
        if looks_like_credential(bare):
            return HIDDEN_CREDENTIAL  # the shape of an address, with a token in its path or host
        return cut[0] + ("?***" if len(cut) > 1 else "")
    if looks_like_credential(live):
        return HIDDEN_CREDENTIAL
    return live if _MODEL_SHAPE.fullmatch(live) else HIDDEN_SHAPE


def without_userinfo(value: Any) -> Any:
    """A value with user:password@ masked in every string, at any depth."""
    if isinstance(value, str):
        return value if isinstance(value, Hidden) else strip_userinfo(value)
    if isinstance(value, Mapping):
        return {k: without_userinfo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_userinfo(v) for v in value]
    return value


def desired_value(value: Any) -> Any:
    """A desired value as it may be shown: as fleet.yaml writes it, with user:password@ masked
    and any string or key of a credential's shape, or value its key's name calls one, hidden
    (validate refuses them; should one get through, it is still not shown)."""
    if isinstance(value, Hidden):
        return value
    if _credential(value):
        return HIDDEN_CREDENTIAL
    if isinstance(value, Mapping):
        return {
            _key(k, i): HIDDEN_CREDENTIAL if _named(k, v) else desired_value(v)
            for i, (k, v) in enumerate(value.items())
        }
    if isinstance(value, list | tuple):
        return [desired_value(v) for v in value]
    return without_userinfo(value)


def _named(key: Any, value: Any) -> bool:
    return isinstance(key, str) and not isinstance(value, Hidden) and written_out(key, value)


def shown_path(path: str) -> str:
    """A field's path as it may be shown: a key of a credential's shape (a hand edit recorded in
    fleet_sync_paths, a key being dropped) masked."""
    return mask_credentials(path)


def _key(key: Any, index: int) -> Any:
    """A mapping key as it may be shown; hidden ones numbered, so two never collide."""
    return f"{HIDDEN_CREDENTIAL} #{index + 1}" if _credential(key) else key


def live_value(live: Any, desired: Any, path: str) -> Any:
    """What may be shown of a live value, given the desired value at the same path
    (MISSING when fleet.yaml sets nothing there)."""
    if live == ABSENT or path in OWN_PATHS:
        return without_userinfo(live)
    if path.startswith(OWN_PREFIX):
        return HIDDEN_CREDENTIAL if _credential(live) else without_userinfo(live)
    if path in SHAPED_PATHS and isinstance(live, str):
        return shaped(path, live)
    if is_reference(desired):
        return live if live == desired else hidden_reference(desired)
    if isinstance(live, Mapping):
        return {
            _key(k, i): live_value(v, _child(desired, k), f"{path}.{k}" if path else str(k))
            for i, (k, v) in enumerate(live.items())
        }
    if isinstance(live, list | tuple):
        return [live_value(v, _item(desired, i), f"{path}[{i}]") for i, v in enumerate(live)]
    if isinstance(live, str) and not is_reference(live):
        if not isinstance(desired, str | int | float | bool):
            return HIDDEN_UNSET
        if live != desired and path.startswith("litellm_params."):
            return HIDDEN_DIFFERS
        # Shown otherwise (a model_info string, as fleet.yaml sets it or edited by hand), unless
        # its shape or its key's name says it is a credential (X-RunPod-Key: <random>)
        named = written_out(_last_key(path), live)
        return HIDDEN_CREDENTIAL if named or looks_like_credential(live) else strip_userinfo(live)
    return live


def _last_key(path: str) -> str:
    """The key a value stands under: model_info.extra.runpod_key -> runpod_key (a list's
    items stand under the list's key: headers[1] -> headers)."""
    return re.sub(r"(\[\d+\])+$", "", path).rpartition(".")[2]


def _child(desired: Any, key: Any) -> Any:
    return desired.get(key, MISSING) if isinstance(desired, Mapping) else MISSING


def _item(desired: Any, index: int) -> Any:
    if isinstance(desired, list | tuple) and index < len(desired):
        return desired[index]
    return MISSING


def field_values(path: str, before: Any, after: Any) -> tuple[Any, Any]:
    """(before, after) of one field change as it may be shown: before is live, after desired."""
    desired = MISSING if after == ABSENT else after
    return live_value(before, desired, path), desired_value(after)


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


def _redacted(body: dict[str, Any], desired: Any) -> dict[str, Any]:
    """One change of Plan.unredacted_json() with its live values hidden by provenance."""
    out = dict(body)
    if out.get("before") is not None:
        out["before"] = live_value(out["before"], desired, "")
    if out.get("after") is not None:
        out["after"] = desired_value(out["after"])
    diff = []
    for entry in out.get("diff", []):
        before, after = field_values(entry["path"], entry["before"], entry["after"])
        diff.append({**entry, "path": shown_path(entry["path"]), "before": before, "after": after})
    out["diff"] = diff
    return out


def plan_json(plan: Plan) -> dict[str, Any]:
    """The plan's JSON as every output shows it (stdout, --out, the PR comment, the job's
    artifact): Plan.unredacted_json() with its live values hidden by provenance."""
    body = plan.unredacted_json()
    entries = zip(plan.changes, body["changes"], strict=True)
    body["changes"] = [_redacted(entry, desired_view(c, plan)) for c, entry in entries]
    # A change health: require holds back shows its live values too (an update's before).
    held = zip(plan.withheld, body["withheld"], strict=True)
    body["withheld"] = [_redacted(e, desired_view(w.change, plan)) for w, e in held]
    return body
