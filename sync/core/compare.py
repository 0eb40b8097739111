"""Desired and live compared in one space: the paths fleet.yaml sets, plus the paths fleet-sync
wrote earlier (so a removal is seen). Each path is either read back and compared after LiteLLM's
coercion, or, where LiteLLM masks or resolves the value, compared through the digest fleet-sync
recorded when it wrote it (TAG_PATHS). A live value at such a path is never put in a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from sync.core.kept import KeptBy
from sync.core.render import PAUSED, READ, TAG_PATHS, TAGS, Route, value_digest
from sync.litellm.normalise import SECTIONS, Path, leaves, readable, same
from sync.litellm.owned import NEVER_LISTED
from sync.litellm.redirects import provider_of, redirecting
from sync.secrets.credentials import is_reference

ABSENT = "(absent)"
# Shown instead of a value LiteLLM masks or resolves on read (the live value is never shown).
UNREADABLE = "(not shown: LiteLLM masks or resolves it)"
# The live side of a record of paths (TAG_PATHS) that does not read: the update writes it again.
MALFORMED_RECORD = "(malformed: rewritten)"
Checked = Literal["read", "digest"]
OWN_ADDRESS: tuple[Path, ...] = (("litellm_params", "model"), ("litellm_params", "api_base"))
# The pause state, compared on every route (LiteLLM lists it on every database route).
PAUSE_PATH: Path = ("model_info", PAUSED)


@dataclass(frozen=True)
class FieldChange:
    path: str  # e.g. "litellm_params.api_base"
    before: Any  # ABSENT when the key is missing on the live route; UNREADABLE when hidden
    after: Any  # ABSENT when fleet.yaml no longer sets it
    checked: Checked = "read"  # "digest": LiteLLM hides the live value; the record decided
    parts: Path = ()  # the path as keys (a key may hold a dot); () for model_name

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "before": self.before,
            "after": self.after,
            "checked": self.checked,
        }


def _change(path: Path, before: Any, after: Any, checked: Checked = "read") -> FieldChange:
    return FieldChange(".".join(path), before, after, checked, path)


def _leaves(route: Route, tops: Set[Path] | None = None) -> dict[Path, Any]:
    """The route's leaves (under these top-level keys only, when given), fleet-sync's record of
    paths left out (the digest covers it). A null is no value: LiteLLM lists ~200 null cost-map
    fields, and fleet.yaml may not set null."""
    out: dict[Path, Any] = {}
    for section in SECTIONS:
        values = route.litellm_params if section == "litellm_params" else route.model_info
        if tops is not None:  # the few keys asked for, not the ~200 LiteLLM lists (leaves sorts)
            values = {t[1]: values[t[1]] for t in tops if t[0] == section and t[1] in values}
        out.update(
            (p, v)
            for p, v in leaves(section, values)
            if v is not None and p[:2] not in (("model_info", TAG_PATHS), PAUSE_PATH)
        )
    return out


# A desired route's comparison inputs, and each live route's comparisons (by desired route).
_WANTED: KeptBy[Route, _Wanted] = KeptBy()
_QUICK: KeptBy[Route, tuple[_Quick | None]] = KeptBy()
_DIFFS: KeptBy[Route, dict[int, tuple[Route, tuple[FieldChange, ...]]]] = KeptBy()


def diff(live: Route, desired: Route) -> tuple[FieldChange, ...]:
    """The field changes that bring `live` to `desired`, by path. Kept while `live` lives: one
    run plans the same routes more than once (the live read plans to find the ids it would
    create, pods' agreement plans each pod's listing), and a route is a value nothing changes."""
    kept = _DIFFS.get(live)
    if kept is not None and (found := kept.get(id(desired))) and found[0] is desired:
        return found[1]
    quick = _quick(desired)
    if quick is not None and _unchanged(live, desired, quick):
        changes: tuple[FieldChange, ...] = ()
    else:
        changes = tuple(sorted(_changes(live, desired), key=lambda c: c.path))
    if kept is None:
        kept = _DIFFS.put(live, {})
    kept[id(desired)] = (desired, changes)  # `desired` held: its id names no other route
    return changes


@dataclass(frozen=True)
class _Wanted:
    """What a comparison needs of a desired route alone, worked out once per route."""

    want: dict[Path, Any]  # its leaves
    ours: dict[Path, Any]  # the readable ones (compared as read back)
    provider: str | None
    tops: frozenset[Path]  # the top-level keys compared, before the live route's redirects


# A top-level key compared whose desired value is one leaf: (path, the leaf or MISSING for a
# tag of fleet-sync's this route does not carry, READ when it reads back (else None), the digest
# the record must hold of an unreadable one, whether that is an os.environ/ reference (LiteLLM
# drops one it cannot resolve)). Plain tuples: one per key of every desired route.
_Top = tuple[Path, Any, str | None, str | None, bool]
MISSING = object()
_TAG_TOPS: tuple[Path, ...] = tuple(("model_info", t) for t in sorted(TAGS) if t != TAG_PATHS)


def _wanted(desired: Route) -> _Wanted:
    kept = _WANTED.get(desired)
    if kept is not None:
        return kept
    want = _leaves(desired)
    # fleet-sync's own tags are always compared: a tag the route carries and this run does not
    # write (another source's, taken over by a run without one) must go too.
    tops = frozenset({p[:2] for p in want} | {("model_info", tag) for tag in TAGS})
    ours = {p: v for p, v in want.items() if readable(p, v)}
    provider = provider_of(desired.litellm_params.get("model"))
    return _WANTED.put(desired, _Wanted(want, ours, provider, tops))


@dataclass(frozen=True)
class _Quick:
    """A desired route whose every value is a leaf, as _unchanged reads it."""

    keys: frozenset[Path]  # its leaves' paths (the `want` of _changes)
    provider: str | None
    tops: tuple[_Top, ...]  # each top-level key compared: its leaves, and fleet-sync's tags


def _quick(desired: Route) -> _Quick | None:
    """_Quick of the route, or None when a value is a mapping (its leaves are compared one by
    one: _changes). The leaves _leaves gives, without its walk: the top-level values but nulls,
    the record of paths and the pause state."""
    kept = _QUICK.get(desired)
    if kept is not None:
        return kept[0]
    out: list[_Top] = []
    for section in SECTIONS:
        values = desired.litellm_params if section == "litellm_params" else desired.model_info
        for key, value in values.items():
            if value is None or (section == "model_info" and key in (TAG_PATHS, PAUSED)):
                continue
            if _mapping(value) and value:
                return _QUICK.put(desired, (None,))[0]
            path = (section, key)
            if readable(path, value):
                out.append((path, value, READ, None, False))
            else:
                out.append((path, value, None, _digest(value), is_reference(value)))
    keys = frozenset(top[0] for top in out)
    out += [(t, MISSING, None, None, False) for t in _TAG_TOPS if t not in keys]
    provider = provider_of(desired.litellm_params.get("model"))
    return _QUICK.put(desired, (_Quick(keys, provider, tuple(out)),))[0]


_LEAF_TYPES = frozenset({str, int, float, bool, type(None), list, tuple})


def _mapping(value: Any) -> bool:
    """isinstance(value, Mapping), JSON's leaf types answered without the ABC's check."""
    kind = type(value)
    return kind is dict or (kind not in _LEAF_TYPES and isinstance(value, Mapping))


def _digest(value: Any) -> str:
    """value_digest, kept for text (the same api_key reference on every host)."""
    return _text_digest(value) if type(value) is str else value_digest(value)


@lru_cache(maxsize=1024)
def _text_digest(value: str) -> str:
    return value_digest(value)


def _unchanged(live: Route, desired: Route, quick: _Quick) -> bool:
    """True only where _changes finds nothing, by its rules on top-level values (no walk of
    leaves, no projection, no sort): a route as fleet-sync wrote it, its record of paths naming
    only what fleet.yaml sets, nothing redirecting it, and at each compared key the desired
    leaf read back (LiteLLM's coercion allowed), or, where LiteLLM masks or resolves it, the
    recorded digest of it (and the value still listed, unless a top-level reference). Anything
    else, a mapping on either side above all, is left to _changes."""
    if live.model_name != desired.model_name or live.paused != desired.paused:
        return False
    record = live.written
    if record is None or not record.keys() <= quick.keys:
        return False
    if redirecting(live.litellm_params, quick.provider):
        return False
    params, info = live.litellm_params, live.model_info
    for path, desired_value, read, digest, reference in quick.tops:
        value = (params if path[0] == "litellm_params" else info).get(path[1])
        if _mapping(value):
            return False
        if desired_value is MISSING:
            if value is not None:  # a tag this route should not carry: removed
                return False
        elif read:
            if value is None or not same(desired_value, value):
                return False
        elif value is None and path in record and not reference:
            return False  # listed by LiteLLM (masked) when present: taken away by hand
        elif record.get(path) != digest:
            return False
    return True


def _changes(live: Route, desired: Route) -> Iterator[FieldChange]:
    wanted = _wanted(desired)
    want = wanted.want
    # So are the keys that send the route's requests elsewhere than its api_base
    # (sync/litellm/redirects.py), whoever set them: fleet.yaml cannot, so a live one is always
    # drift, to remove.
    redirects = redirecting(live.litellm_params, wanted.provider)
    tops = wanted.tops | {("litellm_params", key) for key in redirects}
    record = live.written
    # What the record tells of what was written: a malformed one still tells its readable
    # entries (a key fleet.yaml dropped is then removed); the record itself is rewritten below.
    known = record if record is not None else live.salvaged
    # The live leaves read below: under the keys compared and those fleet-sync recorded writing
    # (LiteLLM lists ~20 keys of its own a route, walked for nothing otherwise).
    every = _leaves(live, tops | {p[:2] for p in known})
    # Live leaves under the top-level keys fleet.yaml sets; LiteLLM's own keys elsewhere are
    # not fleet-sync's to compare.
    have = {p: v for p, v in every.items() if p[:2] in tops}
    hidden = {p for p, marker in known.items() if marker != READ}
    # Written earlier under a top-level key fleet.yaml no longer sets, in the record's order (a
    # set's would vary between runs, and with it the order of two paths shown alike: "a.b").
    dropped = known.keys() - want.keys() - have.keys()  # usually none: no loop then
    extras = [p for p in known if p in dropped] if dropped else []
    written = {p: every[p] for p in extras if p in every and p not in hidden}
    ours, theirs = _projected(wanted.ours, want, have, written)
    # Equal projections (nearly every route of a plan) never reach DeepDiff.
    found = {} if ours == theirs else field_detail(theirs, ours)
    if live.model_name != desired.model_name:
        yield FieldChange("model_name", live.model_name, desired.model_name)
    for path, value in want.items():
        if path in ours:
            if path not in found:
                continue
            if path not in theirs:
                yield _change(path, ABSENT, value)
            else:
                # Written as a reference before: the live value is LiteLLM's resolution of it.
                yield _change(path, UNREADABLE if path in hidden else theirs[path], value)
        elif _listed_away(path, value, every, record):
            # LiteLLM lists a masked or nested value (masked), so a missing one was taken away
            # by hand: an auth header must not vanish unseen.
            yield _change(path, ABSENT, value)
        elif record is None or record.get(path) != value_digest(value):
            # LiteLLM never lists api_key & co.: a route may hold one fleet-sync never wrote (a
            # portal's, set by hand), which this write replaces: never "(absent)".
            hidden_key = len(path) == 2 and path[0] == "litellm_params" and path[1] in NEVER_LISTED
            unknown = record is None or path in record or path in every or hidden_key
            yield _change(path, UNREADABLE if unknown else ABSENT, value, "digest")
    for path, value in theirs.items() if found else ():
        if path in found and path not in want:
            yield _gone(path, value, path in hidden)
    for path in extras:
        if path in hidden:  # api_key is never listed: the record says it was written
            yield _change(path, UNREADABLE, ABSENT, "digest")
    if live.paused != desired.paused:  # a pause (a drained host) or a resume
        yield _change(PAUSE_PATH, live.paused, desired.paused)
    if live.record_malformed:  # written whole again by the update: the next plan reads it
        at = ("model_info", TAG_PATHS)
        yield _change(at, MALFORMED_RECORD, desired.model_info.get(TAG_PATHS, ABSENT))


def _projected(
    ours: dict[Path, Any], want: dict[Path, Any], have: dict[Path, Any], written: dict[Path, Any]
) -> tuple[dict[Path, Any], dict[Path, Any]]:
    """The two trees whose difference is read back: fleet.yaml's readable leaves, and the live
    leaves fleet-sync compares (under the keys it sets, plus `written`: readable leaves it wrote
    earlier under a key fleet.yaml no longer sets). A live value that LiteLLM's coercion makes
    the desired one (600.0 for 600) is projected as the desired value: only real differences
    remain, and equal routes give equal trees. `ours`: want's readable leaves."""
    theirs: dict[Path, Any] = {}
    for path, value in have.items():
        if path in ours:
            theirs[path] = ours[path] if same(ours[path], value) else value
        elif path not in want:
            theirs[path] = value
    theirs.update(written)
    return ours, theirs


def field_detail(before: dict[Path, Any], after: dict[Path, Any]) -> dict[Path, set[str]]:
    """DeepDiff's report between two projected trees, by leaf: the kinds of difference found
    at or inside it ("values_changed", "iterable_item_added", "dictionary_item_added" for a
    leaf only `after` has, "dictionary_item_removed" for one only `before` has, ...)."""
    from deepdiff import DeepDiff  # only a plan with a changed route pays for the import

    report = DeepDiff(
        before,
        after,
        view="tree",
        # Every leaf by itself: without this, DeepDiff reports two routes sharing few paths
        # as one changed value at the root.
        threshold_to_diff_deeper=0,
        # A key starting "__" (inside a list's mapping) is data here, not a private variable.
        ignore_private_variables=False,
    )
    found: dict[Path, set[str]] = {}
    for kind, levels in report.items():
        for level in levels:
            leaf = level.path(output_format="list")[0]
            found.setdefault(leaf, set()).add(kind)
    return found


def _listed_away(
    path: Path, value: Any, every: dict[Path, Any], record: dict[Path, str] | None
) -> bool:
    """A path fleet-sync wrote that LiteLLM would list (masked) but does not. A top-level
    reference is the exception: LiteLLM drops one it cannot resolve in its environment (and
    never lists api_key), so its absence proves nothing."""
    written = record is not None and path in record
    top_reference = len(path) == 2 and is_reference(value)
    return written and path not in every and not top_reference


def _gone(path: Path, value: Any, written_hidden: bool) -> FieldChange:
    """A live leaf fleet.yaml does not set, its value shown only when it is readable."""
    if written_hidden or not readable(path, value):
        return _change(path, UNREADABLE, ABSENT, "digest")
    return _change(path, value, ABSENT)


def pause_of(changes: Iterable[FieldChange]) -> bool | None:
    """True: these changes pause the route; False: they resume it; None: neither."""
    for change in changes:
        if change.parts == PAUSE_PATH:
            return change.after is True
    return None


def removed_keys(changes: Iterable[FieldChange], desired: Route) -> tuple[str, ...]:
    """The top-level keys among these changes that fleet.yaml no longer sets at all. PATCH
    merges top-level keys and no LiteLLM release from 1.98 to 1.110 removes every kind in place
    (model_info keys on none, litellm_params keys from 1.109 only), so removing one replaces
    the route."""
    gone = {c.parts[:2] for c in changes if c.after == ABSENT}
    if not gone:  # the common case, without walking the desired route again
        return ()
    tops = {p[:2] for p in _leaves(desired)}
    return tuple(sorted(".".join(p) for p in gone - tops))


def shown(route: Route) -> dict[str, Any]:
    """A desired route as plans show it: what is written, without the record of paths."""
    return {
        "model_name": route.model_name,
        "litellm_params": dict(route.litellm_params),
        "model_info": {k: v for k, v in route.model_info.items() if k != TAG_PATHS},
    }


def update_before(live: Route, desired: Route, changes: Iterable[FieldChange]) -> dict[str, Any]:
    """The live side of an update as plans show it: the desired route with each changed path
    at its live side (already UNREADABLE where LiteLLM masks or resolves it)."""
    out = shown(desired)
    for change in changes:
        if change.parts:
            _put(out, change.parts, change.before)
    out["model_name"] = live.model_name
    return out


def prune_before(live: Route, replacement: Route | None = None) -> dict[str, Any]:
    """A route to prune as plans show it: the paths fleet-sync recorded writing (readable ones
    with their live value). For a route it did not write: the paths of the route replacing it,
    or else only its model and address (LiteLLM's own keys cannot be told from the rest)."""
    values = _leaves(live)
    record = live.written
    keep: dict[Path, Any] = {("model_info", "id"): live.id}
    keep.update((p, v) for p, v in values.items() if p[0] == "model_info" and p[1] in TAGS)
    if record is None and replacement is not None:
        record = {
            p: READ if readable(p, v) else "hidden"
            for p, v in _leaves(replacement).items()
            if p[0] == "litellm_params" or (p[1] != "id" and p[1] not in TAGS)
        }
    elif record is None:
        keep.update((p, values[p]) for p in OWN_ADDRESS if isinstance(values.get(p), str))
    for path, marker in (record or {}).items():
        if marker != READ:
            keep[path] = UNREADABLE
        elif path in values:
            keep[path] = values[path] if readable(path, values[path]) else UNREADABLE
    out: dict[str, Any] = {"model_name": live.model_name, "litellm_params": {}, "model_info": {}}
    for path, value in sorted(keep.items()):
        _put(out, path, value)
    return out


def _put(tree: dict[str, Any], path: Path, value: Any) -> None:
    """Set (or, for ABSENT, remove) the value at a path, making mappings on the way."""
    node = tree
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            if value == ABSENT:
                return
            child = {}
        node[key] = child = dict(child)
        node = child
    if value == ABSENT:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
