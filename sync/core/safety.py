"""Guards that refuse a destructive or surprising plan unless --force is given (exit 3)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sync.core import references
from sync.core.plan import Conflict, Create, Delete, Plan, Update
from sync.fleet.model import normalise_address
from sync.litellm.redirects import REDIRECTS
from sync.secrets.display import printable

MIN_OWNED_FOR_PERCENT = 10


def refusals(plan: Plan, max_prune_percent: float) -> tuple[str, ...]:
    """Why this plan must not run without --force; empty when it is safe."""
    reasons: list[str] = []
    prunes = [c for c in plan.changes if isinstance(c, Delete) and c.prune]
    pruned = subject(c.id for c in prunes)
    if prunes and plan.desired_count == 0:
        reasons.append(
            f"fleet.yaml renders no routes but the plan prunes all {len(prunes)} the fleet owns "
            f"({pruned}); if that is intended, --force required"
        )
    elif plan.owned_live >= MIN_OWNED_FOR_PERCENT and prunes:
        percent = 100.0 * len(prunes) / plan.owned_live
        # A limit that is no number from 0 to 100 (NaN above all: `x > NaN` is always false)
        # never switches the rail off: validate refuses it, and here it allows no prune.
        if not 0 <= max_prune_percent <= 100:
            reasons.append(
                f"the plan prunes {len(prunes)} of the {plan.owned_live} routes the fleet owns "
                f"({pruned}) and safety.max_prune_percent is {max_prune_percent!r}, not a number "
                "from 0 to 100; review it, then --force required"
            )
        elif percent > max_prune_percent:
            reasons.append(
                f"the plan prunes {len(prunes)} of the {plan.owned_live} routes the fleet owns "
                f"({percent:.0f}% > safety.max_prune_percent {max_prune_percent:g}%; {pruned}); "
                "review it, then --force required"
            )
    reasons += _groups_left_empty(plan, prunes)
    reasons += unseen_keys(plan) + foreign_duplicates(plan) + foreign_prunes(plan)
    reasons += drains_without_pause(plan)
    reasons += references.refusals(plan)
    reasons += [_conflict_refusal(c) for c in plan.conflicts]
    return tuple(reasons)


def _pauses(change: Update) -> bool:
    """The update takes a serving route out of service."""
    return change.route.paused and not change.before.paused


def subject(ids: Iterable[str]) -> str:
    """What a refusal that counts is about, in its text: a digest of the ids it counts. The
    reviewed force accepts a refusal by its text (sync/core/verdict.py refusal_key), so the
    same count of other routes is another refusal, never one a review already accepted."""
    listed = sorted(set(ids))
    digest = hashlib.sha256("\n".join(listed).encode()).hexdigest()[:12]
    return f"ids {digest}"


def _conflict_refusal(conflict: Conflict) -> str:
    where = f"{conflict.desired.model_name} host {conflict.desired.host}"
    if conflict.held == "host":
        return (
            f"{where} is served by route {printable(conflict.held_by.id)}, which this fleet does "
            f"not own ({conflict.reason}); a second route beside it would lack what LiteLLM "
            "hides on it (api_key) and take half its requests: do what the reason says, or "
            "--force to apply the rest (the host keeps that route only)"
        )
    return (
        f"{where}: id {conflict.id} is held by a route this fleet does not own "
        f"({conflict.reason}); it is left alone and the host gets no route; remove or rename "
        "that route (or this host), or --force required to apply the rest"
    )


def _groups_left_empty(plan: Plan, prunes: list[Delete]) -> list[str]:
    """A declared model the plan leaves with no route that serves. Only what the router lists
    and has not paused serves: a stored row it does not list, or a paused route (LiteLLM
    answers 403 "Model is blocked" when every route of a model is paused), counts for nothing;
    an update of an unlisted row (the repair) or a resume counts like a create, a pause like a
    prune. Apply deletes a group's routes only once its creates and updates are listed."""
    after = references.served_after(plan)
    lost: dict[str, list[str]] = {}
    gone: dict[str, list[str]] = {}  # the ids of what each model loses

    def lose(model: str, how: str, route_id: str) -> None:
        lost.setdefault(model, []).append(how)
        gone.setdefault(model, []).append(route_id)

    paused_creates = {c.id for c in plan.changes if isinstance(c, Create) and c.route.paused}
    for change in plan.changes:
        if isinstance(change, Delete):
            if change.listed and not change.route.paused and change.replaced_by in paused_creates:
                lose(change.model_name, "replaced by a paused route", change.id)  # serves no more
        elif isinstance(change, Update) and change.listed and _pauses(change):
            lose(change.model_name, "paused", change.id)
    for delete in prunes:
        if delete.listed and not delete.route.paused:
            lose(delete.model_name, "pruned", delete.id)
    out = []
    for model in sorted(plan.declared_models):
        if model in lost and after.get(model, 0) <= 0:
            kinds = [
                (lost[model].count(w), w)
                for w in ("pruned", "paused", "replaced by a paused route")
            ]
            counts = ", ".join(f"{n} {w}" for n, w in kinds if n)
            paused = "; a paused route serves nothing" if set(lost[model]) - {"pruned"} else ""
            out.append(
                f"model {model} would be left with no routes while fleet.yaml still declares it "
                f"({counts}: {subject(gone.get(model, ()))}){paused}; enable a host, or --force "
                "required"
            )
    return out


def unseen_keys(plan: Plan) -> list[str]:
    """A replacement of a route fleet-sync did not create (it kept LiteLLM's id when the fleet
    adopted it) would lose whatever it holds that LiteLLM never lists: nothing read from the
    proxy can carry it to the new route. (A route fleet-sync created holds such a key only if a
    person set it by hand: the plan names it, and the rails let it pass.)"""
    removing = {c.id: c.removes for c in plan.changes if isinstance(c, Delete) and c.removes}
    out = []
    for create in plan.changes:
        if not isinstance(create, Create) or not create.replaces:
            continue
        if not create.foreign or not create.may_drop:
            continue  # fleet-sync created the old route: the plan names what it may drop
        keys = removing.get(create.replaces, ())
        removes = ", ".join(keys) or "what fleet.yaml removed"
        redirects = [k for k in keys if k.removeprefix("litellm_params.") in REDIRECTS]
        # fleet.yaml cannot keep a key that sends requests elsewhere (validate refuses it).
        keep = (
            f"{', '.join(redirects)} sends the route's requests elsewhere than its api_base and "
            "must go; "
            if redirects
            else f"keep {removes} in fleet.yaml, or "
        )
        out.append(
            f"{create.model_name} host {create.host}: replacing route {create.replaces} to "
            f"remove {removes} may lose what LiteLLM never lists ({', '.join(create.may_drop)}): "
            "fleet-sync did not create that route, so it may hold them unseen, and the new "
            f"route cannot carry them; {keep}on LiteLLM >= 1.109 apply removes a litellm_params "
            "key in place; or set api_key (and any other such key the host needs) in "
            "fleet.yaml, then --force required"
        )
    return out


def foreign_duplicates(plan: Plan) -> list[str]:
    """The delete of a route fleet-sync did not create while its host keeps serving through
    another route: it may hold the only api_key that works (LiteLLM retries a 401 on the host's
    other route, so both seem to serve), and which one holds it no read of the proxy can tell,
    so the choice is left to a person."""
    serving = {r.id: r for r in plan.serving}
    out = []
    for delete in plan.changes:
        if not isinstance(delete, Delete) or not delete.may_drop or not delete.replaced_by:
            continue
        kept = delete.replaced_by
        host = serving[kept].host if kept in serving else delete.host
        out.append(
            f"{delete.model_name} host {host}: route {delete.id} would be deleted as a duplicate "
            f"while route {kept} serves the host; fleet-sync did not create {delete.id}, so it "
            f"may hold what LiteLLM never lists ({', '.join(delete.may_drop)}): perhaps the only "
            "api_key that works, which no read of the proxy can tell and nothing can take over; "
            f"delete the wrong one of {delete.id} and {kept} by hand (the plan then keeps the "
            "other), or --force required"
        )
    return out


def foreign_prunes(plan: Plan) -> list[str]:
    """The prune of a serving route fleet-sync adopted (tagged, not created by it), its host not
    drained, while the plan creates a route at its address or in its model group: the same
    upstream, or its successor, most likely needs what the old route holds unseen (its
    api_key), and nothing read from the proxy can carry it to the new route. A model renamed,
    or a host renamed and moved in one edit, looks exactly like that (outside attack c, F2:
    the portal's key went with the old route, every request to the new one failed 401, and
    apply ran without a refusal). An untagged route at an address fleet.yaml no longer lists
    is the orphan a moved host leaves, pruned as ever."""
    creates = [c for c in plan.changes if isinstance(c, Create)]
    out = []
    for delete in plan.changes:
        if not isinstance(delete, Delete) or not delete.prune or not delete.may_drop:
            continue
        if not delete.listed or delete.drained:
            continue  # it serves nobody, or fleet.yaml drains its host on purpose
        if delete.route.fleet is None:
            continue  # untagged at an address fleet.yaml no longer lists: the orphan to prune
        address = _address(delete.route.litellm_params.get("api_base"))
        for create in creates:
            if (
                create.model_name != delete.model_name
                and _address(create.route.litellm_params.get("api_base")) != address
            ):
                continue
            sets = create.route.litellm_params
            if any(key.removeprefix("litellm_params.") in sets for key in delete.may_drop):
                continue  # fleet.yaml gives the new route its key: the person chose it
            where = "in its model" if create.model_name == delete.model_name else "at its address"
            out.append(
                f"{delete.model_name} host {delete.host}: route {delete.id} would be pruned "
                f"while the plan creates {create.model_name} host {create.host} {where}; "
                f"fleet-sync did not create {delete.id}, so it may hold what LiteLLM never lists "
                f"({', '.join(delete.may_drop)}), which the new route cannot carry: set api_key "
                "(and any other such key the host needs) in fleet.yaml, or --force required"
            )
            break
    return out


def _address(api_base: object) -> str | None:
    """One spelling of an address (case of the host, default port, trailing slash)."""
    if not isinstance(api_base, str):
        return None
    try:
        return normalise_address(api_base)
    except (KeyError, ValueError):
        return api_base


def drains_without_pause(plan: Plan) -> list[str]:
    """Where LiteLLM cannot pause a route, draining a host deletes its route: a route fleet-sync
    did not create takes what LiteLLM never lists (the portal's api_key) with it for good, and
    `enabled: true` later would create a route without it."""
    out = []
    for delete in plan.changes:
        if not isinstance(delete, Delete) or not delete.drained or not delete.may_drop:
            continue
        out.append(
            f"{delete.model_name} host {delete.host}: draining it deletes route {delete.id}, "
            f"because LiteLLM {plan.litellm_version or '(version unknown)'} cannot pause a "
            f"route; fleet-sync did not create it, so {', '.join(delete.may_drop)} (never "
            "listed by LiteLLM) would go with it for good; set them in fleet.yaml for this "
            "host, or upgrade LiteLLM to >= 1.98.1 (a drain then pauses the route), or --force "
            "required"
        )
    return out
