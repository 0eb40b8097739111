"""Guards that refuse a destructive plan unless --force is given (exit 3)."""

from __future__ import annotations

from .plan import Delete, Plan

MIN_OWNED_FOR_PERCENT = 10


def refusals(plan: Plan, max_prune_percent: float) -> tuple[str, ...]:
    """Why this plan must not run without --force; empty when it is safe."""
    reasons: list[str] = []
    prunes = [c for c in plan.changes if isinstance(c, Delete) and c.prune]
    if prunes and plan.desired_count == 0:
        reasons.append(
            f"fleet.yaml renders no routes but the plan prunes all {len(prunes)} the fleet owns; "
            "if that is intended, --force required"
        )
    elif plan.owned_live >= MIN_OWNED_FOR_PERCENT and prunes:
        percent = 100.0 * len(prunes) / plan.owned_live
        if percent > max_prune_percent:
            reasons.append(
                f"the plan prunes {len(prunes)} of the {plan.owned_live} routes the fleet owns "
                f"({percent:.0f}% > safety.max_prune_percent {max_prune_percent:g}%); "
                "review it, then --force required"
            )
    after = dict(plan.live_groups)
    for change in plan.changes:
        delta = -1 if change.action == "delete" else (1 if change.action == "create" else 0)
        after[change.model_name] = after.get(change.model_name, 0) + delta
    for model in sorted(plan.declared_models):
        pruned = [c for c in prunes if c.model_name == model]
        if pruned and after.get(model, 0) <= 0:
            reasons.append(
                f"model {model} would be left with no routes while fleet.yaml still declares it "
                f"({len(pruned)} pruned); enable a host, or --force required"
            )
    return tuple(reasons)
