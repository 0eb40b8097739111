"""Redaction by provenance and the final scrub, on plain data (issue 8, item 5).

The live test (tests/test_no_secret_leaks.py) proves no secret leaves any command; these pin the
rules themselves, one by one."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import sys
from typing import Any

import pytest
import yaml

from sync.core.compare import ABSENT
from sync.core.plan import Plan, Withheld
from sync.core.planner import make_plan
from sync.core.render import render
from sync.fleet.model import fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.live.answers import parse_route
from sync.report.markdown import plan_markdown
from sync.report.redaction import (
    HIDDEN_CREDENTIAL,
    HIDDEN_DIFFERS,
    HIDDEN_SHAPE,
    HIDDEN_UNSET,
    MISSING,
    desired_value,
    field_values,
    hidden_reference,
    live_value,
    plan_json,
    shown_path,
)
from sync.report.text import plan_text
from sync.secrets.scrub import MASK, ScrubbedStream, Scrubber, session

MASTER = "sk-master-0123456789abcdef"
REF = "os.environ/UPSTREAM_ORG_SECRET"  # any name validate does not refuse
TOKEN = "sk-abcdef0123456789abcdef"
HEX = "312a4fe4d4b5c01d7d3037655277230c"
RANDOM = "9naHVck6pbd4ZRj2SxphvDTwrzqwo72n"
RUNPOD = "GHMCS1UYUVJCSQQADZ7LJEN485HA4VPO"  # a legacy RunPod key: 32 upper-case and digits
UUID = "6fda865a-30a5-1a8e-cda0-434c44919d49"  # a vLLM --api-key


@pytest.mark.parametrize(
    ("live", "desired", "path", "shown"),
    [
        # A reference is shown as written; the value the proxy resolved it to never is.
        (MASTER, REF, "litellm_params.organization", hidden_reference(REF)),
        (REF, REF, "litellm_params.organization", REF),
        ({"x": MASTER}, REF, "litellm_params.extra", hidden_reference(REF)),
        # A live string fleet.yaml does not set may be a resolved reference: hidden.
        ("anything", MISSING, "litellm_params.organization", HIDDEN_UNSET),
        (ABSENT, "acme", "litellm_params.organization", ABSENT),
        # Lists and mappings are walked, path by path.
        (
            {"tags": ["a", MASTER], "n": 3},
            {"tags": ["a"], "n": 2},
            "litellm_params.extra_body",
            {"tags": ["a", HIDDEN_UNSET], "n": 3},
        ),
        (
            {"H": [REF, MASTER]},
            {"H": [REF, REF]},
            "litellm_params.extra_headers",
            {"H": [REF, hidden_reference(REF)]},
        ),
        # A live litellm_params string that differs from the literal fleet.yaml now sets may be
        # what LiteLLM resolved from an earlier reference (a PR replacing
        # `organization: os.environ/NAME` by `12345` printed the proxy's value of NAME).
        ("acme", "acme-new", "litellm_params.organization", HIDDEN_DIFFERS),
        (MASTER, 12345, "litellm_params.organization", HIDDEN_DIFFERS),
        (MASTER, 30, "litellm_params.timeout", HIDDEN_DIFFERS),
        ("acme", "acme", "litellm_params.organization", "acme"),
        ("hand-set", "fleet-set", "model_info.description", "hand-set"),
        # model and api_base are shown in their field's shape only; an address loses its
        # user:pass@, query and fragment (a hand-edited ?api-key=... is a credential).
        ("hosted_vllm/org/m", "hosted_vllm/org/n", "litellm_params.model", "hosted_vllm/org/m"),
        (MASTER, "hosted_vllm/org/n", "litellm_params.model", HIDDEN_CREDENTIAL),
        (
            "http://h:1/v1?api-key=QS&password=Q2",
            MISSING,
            "litellm_params.api_base",
            "http://h:1/v1?***",
        ),
        ("postgresql://u:pw@db:5432/x", "http://h:1/v1", "litellm_params.api_base", HIDDEN_SHAPE),
        # Numbers and booleans are shown; addresses lose user:pass@.
        (600.0, MISSING, "litellm_params.timeout", 600.0),
        (True, MISSING, "model_info.supports_vision", True),
        ("http://u:pw@h:1/v1", "http://h:1/v1", "litellm_params.api_base", "http://***@h:1/v1"),
        ("http://u:pw@h:1/v1", MISSING, "litellm_params.api_base", "http://***@h:1/v1"),
        ("fleet-a", MISSING, "model_info.fleet_sync_fleet", "fleet-a"),
        # A live string that looks like a credential by its shape is never shown where it would
        # be: a model_info string edited by hand (or, should one get past validate, as set),
        # a token in an address's path or host, a tag, a key.
        (f"team {TOKEN}", "team a", "model_info.description", HIDDEN_CREDENTIAL),
        (HEX, HEX, "model_info.revision", HIDDEN_CREDENTIAL),
        (["ok", RANDOM], ["ok"], "model_info.tags", ["ok", HIDDEN_UNSET]),
        (f"http://10.0.0.1:8000/{TOKEN}/v1", MISSING, "litellm_params.api_base", HIDDEN_CREDENTIAL),
        (f"http://h:8000/{RUNPOD}/v1", MISSING, "litellm_params.api_base", HIDDEN_CREDENTIAL),
        # A hex id in an address is an identifier (a Cloudflare account in a host or a path).
        (f"http://{HEX}.h/v1", MISSING, "litellm_params.api_base", f"http://{HEX}.h/v1"),
        # A random-looking string under a key LiteLLM masks is a credential; a word is not.
        (UUID, "x", "model_info.vllm_serve_key", HIDDEN_CREDENTIAL),
        (RUNPOD, "x", "model_info.extra.runpod_key", HIDDEN_CREDENTIAL),
        ("<|im_end|>", "<|eot|>", "model_info.eos_token", "<|im_end|>"),
        (f"http://u:pw@h:1/{RANDOM}?k=1", MISSING, "litellm_params.api_base", HIDDEN_CREDENTIAL),
        (f"hosted_vllm/org/{TOKEN}", MISSING, "litellm_params.model", HIDDEN_CREDENTIAL),
        (TOKEN, MISSING, "model_info.fleet_sync_host", HIDDEN_CREDENTIAL),
        (
            {TOKEN: "x", "mode": "chat", RANDOM: 1},
            MISSING,
            "model_info",
            {
                f"{HIDDEN_CREDENTIAL} #1": HIDDEN_UNSET,
                "mode": HIDDEN_UNSET,
                f"{HIDDEN_CREDENTIAL} #3": 1,
            },
        ),
        # The route's name and id are shown: every change names them anyway (a uuid.hex id
        # is common), and the final scrub masks issuers' tokens in any text.
        (HEX, MISSING, "model_info.id", HEX),
    ],
)
def test_live_value_rules(live: Any, desired: Any, path: str, shown: Any) -> None:
    assert live_value(live, desired, path) == shown


FLEET = """\
version: 1
fleet: f1
owns: model_groups
defaults: {api_key: os.environ/UPSTREAM_KEY}
models:
  m:
    served_model: org/m
    litellm_params: {organization: os.environ/UPSTREAM_ORG_SECRET, rpm: 5, extra_body: {tags: [x]}}
    hosts: [{name: a, api_base: "http://10.0.0.1:8000/v1"}]
"""


def resolved_plan() -> Plan:
    """Live: our route as LiteLLM lists it after resolving the reference (written when
    fleet.yaml named another variable), a hand edit adding a secret to a list fleet.yaml sets,
    plus a hand-made untagged route with credentials in its address and a plaintext header."""
    fleet = fleet_from_doc(parse_yaml(FLEET, "fleet.yaml"), "fleet.yaml")
    (desired,) = render(fleet)
    (written,) = render(
        fleet_from_doc(parse_yaml(FLEET.replace(REF, "os.environ/OLD"), "f.yaml"), "f.yaml")
    )
    ours = written.deployment()
    ours["litellm_params"].pop("api_key")
    ours["litellm_params"]["organization"] = MASTER
    ours["litellm_params"]["extra_body"] = {"tags": ["x", "hand-added-secret"]}
    hand = {
        "model_name": "m",
        "litellm_params": {
            "model": "hosted_vllm/org/m",
            "api_base": "http://admin:hunter2-pw@10.0.0.9:8000/v1",
            "organization": MASTER,
            "extra_headers": [{"Authorization": "Bearer sk-in-a-list-123"}],
        },
        "model_info": {"id": "hand-1"},
    }
    live = [r for r in (parse_route(e) for e in (ours, hand)) if r]
    return make_plan(fleet, [desired], live)


SECRETS = (MASTER, "hunter2-pw", "hand-added-secret", "sk-in-a-list-123")


def test_no_output_format_shows_a_live_secret() -> None:
    plan = resolved_plan()
    assert [c.action for c in plan.changes] == ["update", "delete"]
    outputs = {
        "text": plan_text(plan),
        "markdown": plan_markdown(plan),
        "json": json.dumps(plan_json(plan)),
    }
    for name, text in outputs.items():
        for secret in SECRETS:
            assert secret not in text, (name, secret)
    assert "http://***@10.0.0.9:8000/v1" in outputs["text"]
    assert f'(hidden: a live value where fleet.yaml gives {REF}) -> "{REF}"' in outputs["text"]
    body = plan_json(plan)
    update, delete = body["changes"]
    assert update["after"]["litellm_params"]["organization"] == REF
    assert update["before"]["litellm_params"]["organization"] == hidden_reference(REF)
    assert update["before"]["litellm_params"]["extra_body"] == {"tags": ["x", HIDDEN_UNSET]}
    assert delete["before"]["litellm_params"]["api_base"] == "http://***@10.0.0.9:8000/v1"
    assert delete["before"]["model_name"] == "m"
    assert body["hash"] == plan.hash  # the hash is the plan's, not the redacted view's


def test_redaction_changes_only_what_it_must() -> None:
    """Without secrets, the JSON plan is Plan.unredacted_json() unchanged."""
    fleet = fleet_from_doc(parse_yaml(FLEET, "fleet.yaml"), "fleet.yaml")
    desired = render(fleet)
    plan = make_plan(fleet, desired, [])
    assert plan_json(plan) == plan.unredacted_json()


# -- the final scrub ---------------------------------------------------------------------------


def test_scrub_masks_secrets_their_json_form_and_userinfo() -> None:
    quoted = 'pa"ss\\word-1'  # JSON output escapes it: pa\"ss\\\\word-1
    scrub = Scrubber([MASTER, quoted, None, ""])
    as_json = json.dumps({"v": quoted})
    assert quoted not in as_json
    text = f"key {MASTER} json {as_json} at https://u:p@h/x"
    assert scrub(text) == f'key {MASK} json {{"v": "{MASK}"}} at https://{MASK}@h/x'
    assert scrub.value({"a": [MASTER, 1], MASTER: None}) == {"a": [MASK, 1], MASK: None}


def test_scrub_ignores_values_too_short_to_be_secrets() -> None:
    scrub = Scrubber(["8000", "true", " " * 10])
    assert scrub("http://h:8000/v1 true") == "http://h:8000/v1 true"


def test_scrub_reads_the_references_of_a_fleet_file() -> None:
    scrub = Scrubber()
    environ = {"UPSTREAM_KEY": "upstream-secret-1", "UPSTREAM_ORG_SECRET": MASTER, "X": "unused"}
    scrub.remember_references(yaml.safe_dump(yaml.safe_load(FLEET)), environ)
    assert scrub(f"upstream-secret-1 {MASTER} unused") == f"{MASK} {MASK} unused"


def test_scrubbed_stream_finds_a_secret_split_over_writes() -> None:
    inner = io.StringIO()
    stream = ScrubbedStream(inner, Scrubber([MASTER]))
    stream.write("first " + MASTER[:5])
    stream.write(MASTER[5:] + " rest\nlast " + MASTER)
    assert inner.getvalue() == f"first {MASK} rest\n"
    stream.finish()  # the session's end (flush() keeps a partial line back off a terminal)
    assert inner.getvalue() == f"first {MASK} rest\nlast {MASK}"
    with pytest.raises(TypeError):
        stream.write(b"bytes")  # type: ignore[arg-type]


def test_session_scrubs_stdout_and_stderr_then_restores_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = sys.stdout, sys.stderr
    with session({"GITHUB_TOKEN": "ghs_token_0123456789"}) as scrub:
        scrub.remember("another-secret-99")
        print("token ghs_token_0123456789")
        print("other another-secret-99", file=sys.stderr)
    assert (sys.stdout, sys.stderr) == before
    captured = capsys.readouterr()
    assert captured.out == f"token {MASK}\n"
    assert captured.err == f"other {MASK}\n"


def test_a_duplicate_is_judged_against_the_route_its_host_keeps() -> None:
    """An untagged route deleted as a duplicate of a host's own route shows what that route
    sets literally (review sees the parameters are the same) and hides what it takes from a
    reference."""
    fleet = fleet_from_doc(parse_yaml(FLEET, "fleet.yaml"), "fleet.yaml")
    (desired,) = render(fleet)
    own = desired.deployment()
    del own["litellm_params"]["api_key"]  # LiteLLM never lists it
    own["litellm_params"]["organization"] = MASTER  # the reference, resolved
    untagged = {
        "model_name": "m",
        "litellm_params": {
            "model": "hosted_vllm/org/m",
            "api_base": "http://10.0.0.1:8000/v1",
            "organization": MASTER,
            "rpm": 5,
            "region": "eu-hand-set",
        },
        "model_info": {"id": "portal-1"},
    }
    route, kept = parse_route(untagged), parse_route(own)
    assert route is not None and kept is not None
    plan = make_plan(fleet, [desired], [kept, route])
    (delete,) = plan_json(plan)["changes"]  # the host's own route is unchanged
    assert delete["replaced_by"] == desired.id
    assert delete["reason"].startswith("duplicate of host a; this route was not created")
    # Shown on the copy's paths only: LiteLLM's own keys cannot be told from region (set by
    # hand), and a route fleet-sync did not write has no record of what was written.
    assert delete["before"]["litellm_params"] == {
        "api_base": "http://10.0.0.1:8000/v1",
        "api_key": hidden_reference("os.environ/UPSTREAM_KEY"),
        "model": "hosted_vllm/org/m",
        "organization": hidden_reference(REF),
        "rpm": 5,
    }


# -- credentials by shape, live and desired -----------------------------------------------------

SHAPED_FLEET = """\
version: 1
fleet: f1
owns: model_groups
models:
  m:
    served_model: org/m
    model_info: {description: team a, mode: chat}
    hosts: [{name: a, api_base: "http://10.0.0.1:8000/v1"}]
"""


def shaped_plan() -> Plan:
    """Hand edits on the proxy that fleet.yaml could never hold (validate refuses them): our
    route's model_info string and api_base path now carry tokens, and an untagged route of the
    model (pruned) has a token in its address and its model_info."""
    fleet = fleet_from_doc(parse_yaml(SHAPED_FLEET, "fleet.yaml"), "fleet.yaml")
    (desired,) = render(fleet)
    ours = desired.deployment()
    ours["litellm_params"]["api_base"] = f"http://10.0.0.1:8000/{TOKEN}/v1"
    ours["model_info"]["description"] = f"team {RANDOM}"
    hand = {
        "model_name": "m",
        "litellm_params": {
            "model": "hosted_vllm/org/m",
            "api_base": f"http://10.0.0.9/{RUNPOD}/v1",
        },
        "model_info": {"id": "hand-2", "note": f"owner {TOKEN}"},
    }
    live = [r for r in (parse_route(e) for e in (ours, hand)) if r]
    return make_plan(fleet, [desired], live)


def test_no_output_format_shows_a_live_value_of_a_credentials_shape() -> None:
    plan = shaped_plan()
    assert [c.action for c in plan.changes] == ["update", "delete"]
    outputs = {
        "text": plan_text(plan),
        "markdown": plan_markdown(plan),
        "json": json.dumps(plan_json(plan)),
    }
    for name, text in outputs.items():
        for secret in (TOKEN, RUNPOD, RANDOM):
            assert secret not in text, (name, secret)
    assert f"litellm_params.api_base: {HIDDEN_CREDENTIAL} -> " in outputs["text"]
    assert f'model_info.description: {HIDDEN_CREDENTIAL} -> "team a"' in outputs["text"]
    assert f"api_base: {HIDDEN_CREDENTIAL}" in outputs["markdown"]  # the prune's address
    update, delete = plan_json(plan)["changes"]
    assert update["before"]["model_info"]["description"] == HIDDEN_CREDENTIAL
    assert delete["before"]["litellm_params"]["api_base"] == HIDDEN_CREDENTIAL


def test_a_pruned_address_keeps_its_shape_rules() -> None:
    """The address of a prune is shown like any live api_base: no user:password@, no query."""
    fleet = fleet_from_doc(parse_yaml(SHAPED_FLEET, "fleet.yaml"), "fleet.yaml")
    hand = {
        "model_name": "m",
        "litellm_params": {
            "model": "hosted_vllm/org/m",
            "api_base": "http://ops:hunter2-pw@10.0.0.9:8000/v1?api-key=query-secret-9",
        },
        "model_info": {"id": "hand-3"},
    }
    route = parse_route(hand)
    assert route is not None
    text = plan_text(make_plan(fleet, render(fleet), [route]))
    assert 'api_base: "http://***@10.0.0.9:8000/v1?***"' in text
    assert "hunter2-pw" not in text and "query-secret-9" not in text


def test_a_withheld_change_hides_its_live_values_too() -> None:
    """health: require holds back an update; the JSON plan still lists its live values."""
    plan = shaped_plan()
    update = plan.changes[0]
    held = dataclasses.replace(plan, changes=plan.changes[1:], withheld=(Withheld(update, "down"),))
    body = plan_json(held)
    (withheld,) = body["withheld"]
    assert withheld["withheld"] == "down"
    assert withheld["before"]["litellm_params"]["api_base"] == HIDDEN_CREDENTIAL
    assert TOKEN not in json.dumps(body) and RANDOM not in json.dumps(body)


def test_a_desired_value_of_a_credentials_shape_is_hidden_too() -> None:
    """validate refuses them; should one get through, no output shows it."""
    assert desired_value({"a": [TOKEN, "ok", REF, 3], TOKEN: "x"}) == {
        "a": [HIDDEN_CREDENTIAL, "ok", REF, 3],
        f"{HIDDEN_CREDENTIAL} #2": "x",
    }
    # By its key's name too: a random-looking value under a key LiteLLM masks, any plain one
    # under a key named for a secret; a word under the first is shown.
    named = {"X-RunPod-Key": UUID, "password": "hunter2", "eos_token": "<|im_end|>"}
    assert desired_value(named) == {
        "X-RunPod-Key": HIDDEN_CREDENTIAL,
        "password": HIDDEN_CREDENTIAL,
        "eos_token": "<|im_end|>",
    }
    assert field_values("model_info.x", ABSENT, f"http://u:p@h/{RANDOM}") == (
        ABSENT,
        HIDDEN_CREDENTIAL,
    )
    assert shown_path(f"model_info.{TOKEN}.x") == "model_info.***.x"


def test_scrub_masks_issuers_tokens_and_keeps_hashes_ids_and_blobs() -> None:
    github = "gh" + "p_" + "A1b2C3d4E5f6G7h8J9k0" * 2
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmbGVldCJ9.c2lnbmF0dXJl"
    plan_hash = "sha256:" + "0123456789abcdef" * 4
    scrub = Scrubber()
    text = f"name {github} token {jwt} hash {plan_hash} at https://h/v1?token=abc123"
    assert scrub(text) == f"name {MASK} token {MASK} hash {plan_hash} at https://h/v1?token={MASK}"
    body = {"content": base64.b64encode(bytes(range(256)) * 40).decode(), "sha": "ab" * 20}
    assert scrub.value(body) == body
    assert scrub.value({"body": f"x {github}"}) == {"body": f"x {MASK}"}
