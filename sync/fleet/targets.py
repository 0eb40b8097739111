"""What one target of a fleet sees: the models and hosts that go to it, its overlays merged.

The projected Fleet has the same name, source, owns, safety and health as the whole one, so a
host renders the same route id and tags on every target (a host is one identity everywhere);
only its values differ, by the overlays. Precedence, key by key within litellm_params and
model_info, and for api_key: defaults < defaults' overlay < model < model's overlay < host <
host's overlay. A model that had hosts and none goes to the target is not on it (nor claimed
there by owns: model_groups); a model declared without hosts stays where it goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from sync.fleet.model import Defaults, Fleet, Host, Model
from sync.fleet.placement import Overlay, Placement, Target
from sync.fleet.promotion import promotion_order

__all__ = [
    "Overlay",
    "Placement",
    "Target",
    "for_target",
    "goes_to",
    "promotion_order",
    "what_target_means",
]

ONE_MODEL_README = 'docs/reference/commands.md "--target selects a proxy, not a model"'

Level = TypeVar("Level", Defaults, Model, Host)


def for_target(fleet: Fleet, name: str) -> Fleet:
    """The Fleet target `name` sees, without targets of its own; ValueError for a name the fleet
    does not declare."""
    if name not in {t.name for t in fleet.targets}:
        declared = ", ".join(t.name for t in fleet.targets) or "none"
        raise ValueError(f"unknown target {name!r} (declared: {declared})")
    models = []
    for model in fleet.models:
        if not goes_to(model.targets, name):
            continue
        hosts = tuple(_overlaid(h, name) for h in model.hosts if goes_to(h.targets, name))
        if model.hosts and not hosts:
            continue
        models.append(replace(_overlaid(model, name), hosts=hosts))
    return replace(
        fleet, defaults=_overlaid(fleet.defaults, name), models=tuple(models), targets=()
    )


def what_target_means(fleet: Fleet, names: Sequence[str]) -> str:
    """What --target selects, said when it got a name that is no target; when the name is one
    of the fleet's models, that no run is limited to one model, and what to do instead."""
    meaning = "--target selects a proxy of targets:, not a model"
    model = next((n for n in names if n in fleet.model_names), None)
    if model is None:
        return meaning
    return (
        f"{meaning}, and {model!r} is a model of {fleet.file}. No run is limited to one model: "
        "apply makes each proxy equal to all of fleet.yaml; to change one model, change only "
        f"it in fleet.yaml and the plan shows only its changes ({ONE_MODEL_README})"
    )


def goes_to(placement: Placement | None, name: str) -> bool:
    """Whether a level with this targets: goes to target `name` (None: wherever its enclosing
    level goes)."""
    return placement is None or name in placement


def _overlaid(level: Level, name: str) -> Level:
    """The level as target `name` sees it: its overlay's keys over its own, no targets left."""
    overlay = (level.targets or {}).get(name)
    if overlay is None:
        return replace(level, targets=None)
    return replace(
        level,
        api_key=overlay.api_key or level.api_key,
        litellm_params={**level.litellm_params, **overlay.litellm_params},
        model_info={**level.model_info, **overlay.model_info},
        targets=None,
    )
