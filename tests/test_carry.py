"""What a replacement says it drops (sync/core/carry.py), on plain data: never a field of LiteLLM's
model information, which LiteLLM lists on every route of a model from its cost map or from any
route of the model (tests/test_import_model_info_live.py shows it on the real proxy), so the
replacement lists it too; always a key added by hand."""

from __future__ import annotations

from sync.core.carry import leftovers
from sync.core.render import Route

BASE = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1:8000/v1"}


def test_a_replacement_drops_hand_added_keys_not_litellms_model_information() -> None:
    shared = {"max_input_tokens": 2048, "max_tokens": 4096, "supports_vision": True}
    live = Route("old", "m", {**BASE, "rpm": 5}, {"id": "old", "team": "a", **shared})
    desired = Route("new", "m", dict(BASE), {"id": "new"})
    left = leftovers(live, desired)
    assert left.drops == ("model_info.team",)
    assert left.carries == {"rpm": 5}
