"""Which live values `fleet-sync import` writes, on plain data: by provenance, not key name.

A live string on a top-level litellm_params key may be a secret LiteLLM resolved from
os.environ/ (tests/test_import_live.py shows it on the real proxy), so only numbers, booleans,
references, the model, the address and allow-listed routing values of their narrow shape are
written; other strings become placeholders, and a string below the top level (where no
placeholder would be resolved) leaves its group out. Nothing that looks like a credential is
written or quoted in a message.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sync.credentials import looks_like_credential
from sync.import_rules import Refused, param_verdict
from sync.importer import import_fleet, placeholder_warning
from sync.render import Route

MASTER = "sk-" + "0123456789abcdef" * 2
DB_URL = "postgresql://litellm:Pa55w0rd-xyz@127.0.0.1:5432/litellm"
BASE = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1:8000/v1"}


@pytest.mark.parametrize(
    ("key", "value", "verdict"),
    [
        ("timeout", 600, "keep"),
        ("rpm", 120, "keep"),
        ("merge_reasoning_content_in_choices", True, "keep"),
        ("organization", "os.environ/OPENAI_ORG", "keep"),  # a name, not a value
        ("api_version", "2024-02-15-preview", "keep"),
        ("api_version", "v1", "keep"),
        ("region_name", "us-east-1", "keep"),
        ("aws_region_name", "us-gov-west-1", "keep"),
        ("vertex_location", "europe-west4", "keep"),
        ("timeout", "600", "keep"),
        ("api_version", MASTER, "placeholder"),  # an allow-listed key, not its shape
        ("region_name", "hunter2", "placeholder"),
        ("timeout", "6OO", "placeholder"),
        ("organization", "org-abc", "placeholder"),  # any other string: may be resolved
        ("organization", DB_URL, "placeholder"),
        ("vertex_project", "my-project", "placeholder"),
        ("azure_ad_token", "tok-****cdef", "placeholder"),
        ("extra_headers", {"X-Org": "os.environ/ORG"}, "keep"),
        ("extra_headers", {"X-Retries": 3}, "keep"),
        ("tags", ["search", "eu-1"], "keep"),
    ],
)
def test_param_verdict(key: str, value: Any, verdict: str) -> None:
    assert param_verdict(key, value) == verdict


@pytest.mark.parametrize(
    "value",
    [
        {"X-Team": "search"},
        {"nested": {"deeper": DB_URL}},
        ["fast"],  # a list that is not tags
    ],
)
def test_a_string_below_the_top_level_refuses_the_group(value: Any) -> None:
    verdict = param_verdict("extra_headers", value)
    assert isinstance(verdict, Refused)
    assert "litellm_params.extra_headers" in verdict.reason
    assert "write this group by hand" in verdict.reason
    assert DB_URL not in verdict.reason and "search" not in verdict.reason


def test_tags_that_look_like_a_credential_refuse_the_group() -> None:
    assert isinstance(param_verdict("tags", ["fast", MASTER]), Refused)


@pytest.mark.parametrize(
    ("text", "credential"),
    [
        (MASTER, True),
        (DB_URL, True),
        ("Bearer abcdefgh1234", True),
        ("Authorization: Basic dXNlcjpwYXNz", True),
        ("https://h/v1?api_key=abc", True),
        ("ghp_" + "a" * 36, True),
        ("AKIA" + "A" * 16, True),
        ("eyJhbGciOiJIUzI1.eyJzdWIiOiIx.sig", True),
        ("-----BEGIN RSA PRIVATE KEY-----", True),
        ("Qwen/Qwen3-8B", False),
        ("hosted_vllm/meta-llama/Llama-3.1-70B-Instruct", False),
        ("claude-3-5-sonnet-20241022", False),
        ("task-abcdefghijklmnopqrstu", False),
        ("http://10.0.0.1:8000/v1", False),
        ("os.environ/SECRET", False),
    ],
)
def test_looks_like_credential(text: str, credential: bool) -> None:
    assert looks_like_credential(text) is credential


def route(rid: str, model: str, params: dict[str, Any], **info: Any) -> Route:
    return Route(rid, model, {**BASE, **params}, {"id": rid, **info})


def everything(imported: Any) -> str:
    """The file and every line the command prints from it."""
    lines = [*imported.left_out, *imported.notes]
    lines += [placeholder_warning(p) for p in imported.placeholders]
    return "\n".join([imported.text, *lines])


def test_one_placeholder_per_model_when_every_host_has_the_same_value() -> None:
    imported = import_fleet(
        [
            route("1", "m", {"organization": DB_URL}),
            route("2", "m", {"api_base": "http://10.0.0.2:8000/v1", "organization": DB_URL}),
            route("3", "n", {"organization": "org-a"}),
            route("4", "n", {"api_base": "http://10.0.0.2:8000/v1", "organization": "org-b"}),
            route("5", "n", {"api_base": "http://10.0.0.3:8000/v1"}),
        ],
        "f",
    )
    doc = yaml.safe_load(imported.text)["models"]
    m_org = "os.environ/FLEET_SYNC_IMPORT_M_ORGANIZATION"
    assert doc["m"]["litellm_params"] == {"organization": m_org}  # lifted: one name
    n_hosts = {h["name"]: h.get("litellm_params") for h in doc["n"]["hosts"]}
    assert n_hosts == {  # different values: one name per host; none where there is none
        "10.0.0.1-8000": {
            "organization": "os.environ/FLEET_SYNC_IMPORT_N_10_0_0_1_8000_ORGANIZATION"
        },
        "10.0.0.2-8000": {
            "organization": "os.environ/FLEET_SYNC_IMPORT_N_10_0_0_2_8000_ORGANIZATION"
        },
        "10.0.0.3-8000": None,
    }
    assert (imported.placeholders[0].name, imported.placeholders[0].hosts) == (
        "FLEET_SYNC_IMPORT_M_ORGANIZATION",
        ("10.0.0.1-8000", "10.0.0.2-8000"),
    )
    said = everything(imported)
    assert DB_URL not in said and "Pa55w0rd" not in said and "org-a" not in said
    assert "#   FLEET_SYNC_IMPORT_M_ORGANIZATION\n" in imported.text
    warning = placeholder_warning(imported.placeholders[0])
    assert warning.startswith("set FLEET_SYNC_IMPORT_M_ORGANIZATION in the proxy's environment")
    assert "litellm_params.organization of model m (hosts 10.0.0.1-8000, 10.0.0.2-8000)" in warning


def test_masked_values_get_a_name_per_host_even_when_the_masks_agree() -> None:
    masked = {"azure_ad_token": "tok-****cdef"}  # two secrets may mask alike
    imported = import_fleet(
        [
            route("1", "m", masked),
            route("2", "m", {**masked, "api_base": "http://10.0.0.2:8000/v1"}),
        ],
        "f",
    )
    assert [p.name for p in imported.placeholders] == [
        "FLEET_SYNC_IMPORT_M_10_0_0_1_8000_AZURE_AD_TOKEN",
        "FLEET_SYNC_IMPORT_M_10_0_0_2_8000_AZURE_AD_TOKEN",
    ]
    assert all(p.hidden for p in imported.placeholders)
    assert "masks when it lists routes" in placeholder_warning(imported.placeholders[0])


def test_placeholder_names_that_read_alike_stay_distinct() -> None:
    imported = import_fleet(
        [route("1", "a-b", {"organization": "x1"}), route("2", "a.b", {"organization": "x2"})],
        "f",
    )
    names = [p.name for p in imported.placeholders]
    assert names[0] == "FLEET_SYNC_IMPORT_A_B_ORGANIZATION"
    assert names[1].startswith("FLEET_SYNC_IMPORT_A_B_ORGANIZATION_") and len(set(names)) == 2


def test_an_address_loses_its_userinfo_with_a_note() -> None:
    imported = import_fleet(
        [route("1", "m", {"api_base": "https://user:Pa55w0rd-xyz@10.0.0.1:8443/v1"})], "f"
    )
    (host,) = yaml.safe_load(imported.text)["models"]["m"]["hosts"]
    assert host == {"name": "10.0.0.1-8443", "api_base": "https://10.0.0.1:8443/v1"}
    (note,) = imported.notes
    assert note.startswith("model m host 10.0.0.1-8443: api_base carried user:password@")
    assert "Pa55w0rd" not in everything(imported) and "user:" not in imported.text


@pytest.mark.parametrize(
    ("params", "info", "reason"),
    [
        ({"model": MASTER}, {}, "model has no provider prefix"),
        ({"model": f"hosted_vllm/{MASTER}"}, {}, "a served model looks like a credential"),
        ({"api_base": MASTER}, {}, "api_base is not an address"),
        ({"api_base": f"https://h/{MASTER}/v1"}, {}, "hosts[0].api_base looks like a credential"),
        ({}, {"description": f"key {MASTER}"}, "model_info.description looks like a credential"),
        ({}, {"hf_token": "abc123"}, "model_info.hf_token holds a credential"),
        ({"extra_headers": {"X-Org": DB_URL}}, {}, "litellm_params.extra_headers.X-Org holds a"),
    ],
)
def test_a_group_with_a_credential_is_left_out_without_quoting_it(
    params: dict[str, Any], info: dict[str, Any], reason: str
) -> None:
    imported = import_fleet([route("1", "m", params, **info)], "f")
    assert imported.routes == 0
    (said,) = imported.left_out
    assert said.startswith("model group m left out whole: ") and reason in said
    assert MASTER not in everything(imported) and "abc123" not in everything(imported)
    assert "Pa55w0rd" not in everything(imported)


def test_model_info_is_written_as_stored() -> None:
    """LiteLLM resolves no reference in model_info: its strings are what was written."""
    imported = import_fleet([route("1", "m", {}, base_model="gpt-4o", team="search")], "f")
    assert yaml.safe_load(imported.text)["models"]["m"]["model_info"] == {
        "base_model": "gpt-4o",
        "team": "search",
    }


def test_fleet_syncs_own_tags_are_not_copied() -> None:
    """A route this fleet tagged (source tag included) imports as fleet.yaml may say it."""
    tags = {
        "fleet_sync_fleet": "f",
        "fleet_sync_host": "a",
        "fleet_sync_digest": "0123456789abcdef",
        "fleet_sync_source": "owner/repo",
    }
    imported = import_fleet([route("1", "m", {}, **tags)], "f")
    (host,) = yaml.safe_load(imported.text)["models"]["m"]["hosts"]
    assert host == {"name": "a", "api_base": BASE["api_base"]}  # its tagged name kept
    assert "fleet_sync_" not in imported.text.partition("\nversion:")[2]
