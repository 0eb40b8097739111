"""A saved plan binds what it was made for (issue 23, Deliver 7), on plain data: the hash covers
the target, the endpoint read (a digest of its pod URLs in one spelling each) and the rails
(safety, after); a plan made from data alone keeps the hash of its changes; apply --plan's
check says what differs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from sync.core.plan import Binding, Plan
from sync.core.render import canonical_json
from sync.report.redaction import plan_json
from sync.run.console import Exit
from sync.run.saved import check_binding

STAGING = ("http://127.0.0.1:4000",)
PROD = ("http://127.0.0.1:4001",)


def plan(binding: Binding | None = None) -> Plan:
    return Plan("f", (), (), 0, 0, frozenset({"m"}), (), binding=binding)


def test_a_plan_without_binding_keeps_the_hash_of_its_changes() -> None:
    body = canonical_json({"fleet": "f", "changes": []})
    assert plan().hash == "sha256:" + hashlib.sha256(body.encode()).hexdigest()
    assert "binds" not in plan_json(plan())


@pytest.mark.parametrize(
    "other",
    [
        Binding.of("prod", STAGING, 30.0, ()),  # another target, one endpoint (a mix-up)
        Binding.of("staging", PROD, 30.0, ()),  # another endpoint
        Binding.of("staging", (*STAGING, *PROD), 30.0, ()),  # another pod added
        Binding.of("staging", STAGING, 50.0, ()),  # other safety
        Binding.of("staging", STAGING, 30.0, ("dev",)),  # another promotion order
        Binding.of(None, STAGING, 30.0, ()),  # no target
    ],
)
def test_identical_changes_made_for_another_target_or_rails_hash_apart(other: Binding) -> None:
    made = Binding.of("staging", STAGING, 30.0, ())
    assert plan(made).hash != plan(other).hash != plan().hash
    assert plan_json(plan(made))["binds"] != plan_json(plan(other))["binds"]
    assert made.differences(plan_json(plan(other))["binds"])


def test_the_endpoint_is_one_digest_for_the_spellings_of_its_pods_and_shows_no_url() -> None:
    one = Binding.of("s", ("http://127.0.0.1:4000/", "http://Proxy.example:80"), 30.0)
    same = Binding.of("s", ("http://proxy.example.", "http://[::ffff:127.0.0.1]:4000"), 30.0)
    assert one == same
    shown = json.dumps(plan_json(plan(one)))
    assert "127.0.0.1" not in shown and "proxy.example" not in shown
    assert plan_json(plan(one))["binds"] == {
        "target": "s", "endpoint": one.endpoint, "safety": {"max_prune_percent": 30.0},
        "after": [],
    }  # fmt: skip


def test_apply_plan_says_what_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = plan(Binding.of("prod", PROD, 30.0, ("staging",)))
    saved = plan_json(plan(Binding.of("staging", STAGING, 50.0, ())))["binds"]
    with pytest.raises(Exit) as refused:
        check_binding(tmp_path / "p.json", saved, live, "prod")
    assert refused.value.code == 3
    assert (
        f"error: {tmp_path / 'p.json'} is not a plan for target prod of this run: it was made for "
        "target staging, not target prod; it was made for another endpoint (other proxy URLs); "
        'it was made under safety {"max_prune_percent":50.0}, not {"max_prune_percent":30.0}; '
        'it was made under after [], not ["staging"]; run plan again'
    ) in capsys.readouterr().err
    check_binding(tmp_path / "p.json", plan_json(live)["binds"], live, "prod")  # the same: no exit
    with pytest.raises(Exit):
        check_binding(tmp_path / "p.json", None, live)  # an older plan names nothing
    check_binding(tmp_path / "p.json", saved, replace(live, binding=None))  # data alone: no check
