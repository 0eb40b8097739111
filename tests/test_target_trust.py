"""Targets follow trust (attack F1, F2, F3), on plain data: in a pull request's run each target
is read at the proxy_url and with the key references fleet.yaml at the trusted ref gives it
(TrustedRef.pin); the probe's key trust for a target is the trusted ref's projection of that
same target (key_trust); and LiteLLM's abbreviations of a key this run sent are scrubbed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml

from sync.core.keytrust import FLEET_ITSELF, FLEET_ITSELF_REF, TrustedRef
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.run.endpoint import ProxyOptions, TargetUnresolved, pinned
from sync.secrets.scrub import Scrubber

BASE = "fleet.yaml at the pull request's base (0123456789ab)"
TARGETS: dict[str, Any] = {
    "staging": {
        "proxy_url": "os.environ/STAGING_URL",
        "api_key": "os.environ/STAGING_KEY",
        "read_api_key": "os.environ/STAGING_READ",
    },
    "prod": {"proxy_url": ["http://10.0.0.1:4000"], "api_key": "os.environ/PROD_KEY"},
}


def fleet_of(
    declared: dict[str, Any], hosts: list[dict[str, Any]] | None = None, **model: Any
) -> Fleet:
    data = {
        "version": 1,
        "fleet": "f1",
        "defaults": {"api_key": "os.environ/UP_KEY"},
        "targets": declared,
        "models": {
            "m": {
                "served_model": "org/m",
                **model,
                "hosts": hosts or [{"name": "a", "api_base": "http://10.1.0.1:8000/v1"}],
            }
        },
    }
    return fleet_from_doc(parse_yaml(yaml.safe_dump(data), "fleet.yaml"), "fleet.yaml")


def target(fleet: Fleet, name: str) -> Any:
    return next(t for t in fleet.targets if t.name == name)


def test_outside_a_pull_request_every_target_is_read_as_written() -> None:
    head = fleet_of({**TARGETS, "staging": {"proxy_url": "http://127.0.0.1:1"}})
    pin = FLEET_ITSELF_REF.pin(target(head, "staging"))
    assert pin.target == target(head, "staging") and not pin.note and not pin.refusal
    assert FLEET_ITSELF_REF.key_trust("staging") is FLEET_ITSELF


def test_a_pull_request_never_chooses_a_targets_address_or_key_variable() -> None:
    ref = TrustedRef(fleet_of(TARGETS), BASE)
    same = fleet_of(TARGETS)
    assert ref.pin(target(same, "prod")).target == target(same, "prod")
    assert ref.pin(target(same, "prod")).note == ""
    moved = fleet_of({
        **TARGETS,
        "staging": {
            "proxy_url": "http://127.0.0.1:18810/",
            "api_key": "os.environ/STAGING_KEY",
            "read_api_key": "os.environ/PROD_KEY",
        },
        "prod": {**TARGETS["prod"], "after": ["staging"]},
    })  # fmt: skip
    pin = ref.pin(target(moved, "staging"))
    assert pin.target == replace(
        target(moved, "staging"),
        proxy_url="os.environ/STAGING_URL",
        read_api_key="os.environ/STAGING_READ",
    )
    assert pin.note == (
        "target staging: proxy_url, read_api_key changed in this pull request; read with those "
        f"of {BASE}; the new ones are used once merged"
    )
    prod = ref.pin(target(moved, "prod"))  # what is planned (after, models) stays the PR's
    assert prod.target is not None and prod.target.after == ("staging",) and not prod.note


def test_a_target_the_trusted_ref_does_not_give_is_not_read() -> None:
    new = fleet_of(
        {**TARGETS, "eu": {"proxy_url": "http://127.0.0.1:1", "api_key": "os.environ/K"}}
    )
    pin = TrustedRef(fleet_of(TARGETS), BASE).pin(target(new, "eu"))
    assert pin.target is None and pin.refusal == (
        f"target eu: not read: {BASE} does not declare it, and a pull request does not choose "
        "a proxy or a key; it is read once the pull request is merged"
    )
    without = fleet_from_doc(
        parse_yaml(yaml.safe_dump({"version": 1, "fleet": "f1", "models": {"m": {
            "served_model": "org/m", "hosts": []}}}), "fleet.yaml"), "fleet.yaml",
    )  # fmt: skip
    assert TrustedRef(without, BASE).pin(target(new, "staging")).target is None
    broken = TrustedRef(problem=f"{BASE} is invalid").pin(target(new, "staging"))
    assert broken.target is None and broken.refusal == (
        f"target staging: not read: {BASE} is invalid; it is read once the pull request is merged"
    )


def test_key_trust_is_the_trusted_refs_projection_of_the_same_target() -> None:
    up = "os.environ/UP_KEY"
    h2 = "http://10.1.0.2:8000/v1"
    base = fleet_of(
        {**TARGETS},
        [
            {"name": "a", "api_base": "http://10.1.0.1:8000/v1"},
            {"name": "h2", "api_base": h2, "targets": ["staging"]},
        ],
        targets={"staging": {}, "prod": {"api_key": "os.environ/PROD_UP"}},
    )
    ref = TrustedRef(base, BASE)
    staging, prod = ref.key_trust("staging"), ref.key_trust("prod")
    # (a) reviewed for staging only: not trusted with prod's key
    assert staging.refusal("m", "h2", h2, up) == ""
    assert "(not reviewed)" in prod.refusal("m", "h2", h2, up)
    # (b) a reviewed overlay key is trusted on its target, and only there
    assert prod.refusal("m", "a", "http://10.1.0.1:8000/v1", "os.environ/PROD_UP") == ""
    assert prod.refusal("m", "a", "http://10.1.0.1:8000/v1", up) != ""
    assert staging.refusal("m", "a", "http://10.1.0.1:8000/v1", "os.environ/PROD_UP") != ""
    # a target the ref does not declare: nothing; the whole fleet: every projection together
    assert ref.key_trust("eu").problem == (
        f"{BASE} does not declare target eu: no address is trusted with a key"
    )
    whole = ref.key_trust()
    assert whole.refusal("m", "a", "http://10.1.0.1:8000/v1", "os.environ/PROD_UP") == ""
    assert whole.refusal("m", "h2", h2, up) == ""


def test_litellms_abbreviation_of_a_key_sent_is_scrubbed() -> None:
    token = "ghp_FAKEtokenForAttackTest1234567890abcd"
    scrub = Scrubber([token, "sk-short"])
    said = (
        "Authentication Error, Invalid proxy server token passed. Received=ghp_****abcd, "
        "expected to start with 'sk-'. key_name sk-...abcd; other ****wxyz"
    )
    assert scrub(said) == (
        "Authentication Error, Invalid proxy server token passed. Received=***, "
        "expected to start with 'sk-'. key_name ***; other ****wxyz"
    )


def test_a_proxy_and_key_given_on_the_command_line_are_used_as_given() -> None:
    # They come from the workflow, not from any fleet.yaml: no ref is asked about them.
    new = fleet_of(
        {**TARGETS, "eu": {"proxy_url": "http://127.0.0.1:1", "api_key": "os.environ/K"}}
    )
    unread = TrustedRef(problem=f"{BASE} is invalid")
    given = ProxyOptions(("http://127.0.0.1:2",), "sk-given-0123456789")
    endpoint = pinned(target(new, "eu"), unread, {}, False, given)
    assert endpoint.urls == ("http://127.0.0.1:2",) and endpoint.key == "sk-given-0123456789"
    with pytest.raises(TargetUnresolved, match=r"^target eu: not read: "):
        pinned(target(new, "eu"), unread, {"K": "sk-env-0123456789"}, False)
    with pytest.raises(TargetUnresolved, match=r"^target eu: not read: "):  # a key alone: no
        pinned(target(new, "eu"), unread, {}, False, ProxyOptions((), "sk-given-0123456789"))
