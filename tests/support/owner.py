"""The ownership rule apply_plan takes, for tests that apply a plan made from data."""

from __future__ import annotations

from sync.core.ownership import Owner
from sync.fleet.model import Defaults, Fleet


def owner_of(fleet_name: str, source: str | None = None) -> Owner:
    """The rule of a fleet named `fleet_name` (no models needed: apply asks it only about a
    stored row holding a create's id)."""
    defaults = Defaults("hosted_vllm", None, {}, {})
    return Owner(Fleet(fleet_name, "tagged", defaults, 30.0, (), source=source))
