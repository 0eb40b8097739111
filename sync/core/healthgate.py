"""Plan + probe results → the plan apply may run: with health: require, a change that would point
a route at an address that does not serve its model is withheld, and so are the prunes and pauses
of its model group (the old route must stay in its place, serving). Pure: probe results
come in as values."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sync.core.health import HostHealth
from sync.core.plan import Change, Delete, Plan, Update, Withheld

# An update re-points its route only when one of these changes; an rpm or timeout change on a
# host that is down keeps the route where it is, so it is never withheld. A resume puts the
# route back in service: like a create, it waits for proof the host serves.
POINTING = ("litellm_params.api_base", "litellm_params.model")


def gate(plan: Plan, health: Iterable[HostHealth], require: bool) -> Plan:
    """The plan with its probe results attached; under require, unproven changes withheld."""
    probed = tuple(sorted(health, key=lambda h: (h.model_name, h.host, h.route_id)))
    by_host = {(h.model_name, h.host): h for h in probed}
    if not require:
        return replace(plan, health=probed)
    withheld: list[Withheld] = []
    for change in plan.changes:
        # Probe results are per host (model, name): a route adopted in place keeps LiteLLM's
        # id, and a replacement (<id>-g2) serves the same host.
        reason = _unproven(change, by_host.get((change.model_name, change.host or "")))
        if reason:
            withheld.append(Withheld(change, reason))
    held_groups = {w.change.model_name: w for w in withheld}
    for change in plan.changes:
        first = held_groups.get(change.model_name)
        # A pause takes its route out of service as a prune does: it waits with it.
        pause = isinstance(change, Update) and change.pause is True
        if (isinstance(change, Delete) or pause) and first is not None:
            withheld.append(
                Withheld(
                    change,
                    f"not {'paused' if pause else 'pruned'}: the {first.change.action} of "
                    f"{change.model_name} host {first.change.host} was withheld, so this route "
                    f"stays in {'service' if pause else 'its place'}",
                )
            )
    held = {id(w.change) for w in withheld}
    return replace(
        plan,
        changes=tuple(c for c in plan.changes if id(c) not in held),
        withheld=tuple(sorted(withheld, key=lambda w: plan.changes.index(w.change))),
        health=probed,
    )


def _unproven(change: Change, health: HostHealth | None) -> str:
    """Why this change must wait for its host (empty when it may run)."""
    if isinstance(change, Delete) or change.route.paused:
        return ""  # a paused route serves nothing: it needs no proof, nor can give one
    # An update that neither re-points its route nor resumes it keeps it where it is.
    pointing = any(d.path in POINTING for d in change.diff)
    if isinstance(change, Update) and change.pause is not False and not pointing:
        return ""
    if health is None:
        return f"host {change.host} was not probed; health: require needs proof it serves"
    if health.serves:
        return ""
    return f"{health.api_base} {health.summary()}"
