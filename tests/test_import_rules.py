"""Which live values `fleet-sync import` writes, on plain data: by provenance, not key name.

A live string on a top-level litellm_params key may be a secret LiteLLM resolved from
os.environ/ (tests/test_import_live.py shows it on the real proxy), so only numbers, booleans,
references, the model, the address and allow-listed routing values of their narrow shape are
written. Everything else is left out of the file a top-level key at a time: plan adopts routes
in place and sets only what the file sets, so the route keeps it; the file names it in a
comment above its model, stderr names it too, and nothing quotes a value. Only what fleet.yaml
cannot express leaves a whole group out.
"""

from __future__ import annotations

from typing import Any

import pytest

from sync.core.render import Route, paths_record
from sync.edit.import_rules import (
    CREDENTIAL,
    MASKED,
    NESTED,
    NOT_FINITE,
    REFUSED,
    RESOLVED,
    SECRET_NAME,
    Leave,
    info_verdict,
    param_verdict,
)
from sync.edit.importer import SHARED_INFO, Imported, import_fleet, kept_warning
from sync.fleet.model import fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.secrets.credentials import looks_like_credential

MASTER = "sk-" + "0123456789abcdef" * 2
DB_URL = "postgresql://litellm:Pa55w0rd-xyz@127.0.0.1:5432/litellm"
BASE = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1:8000/v1"}


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("timeout", 600, None),
        ("rpm", 120, None),
        ("input_cost_per_token", 1e-06, None),
        ("merge_reasoning_content_in_choices", True, None),
        ("organization", "os.environ/OPENAI_ORG", None),  # a name, not a value
        ("api_version", "2024-02-15-preview", None),
        ("api_version", "v1", None),
        ("region_name", "us-east-1", None),
        ("aws_region_name", "us-gov-west-1", None),
        ("vertex_location", "europe-west4", None),
        ("timeout", "600", None),
        # A nested reference LiteLLM sends as its text: validate refuses it, so it stays.
        ("extra_headers", {"X-Org": "os.environ/ORG"}, REFUSED),
        ("extra_headers", {"X-Retries": 3}, None),
        ("tags", ["search", "eu-1"], None),
        ("tiered_pricing", [{"range": [0, 1000], "input_cost_per_token": 1e-06}], None),
        ("api_version", MASTER, RESOLVED),  # an allow-listed key, not its shape
        ("region_name", "hunter2", RESOLVED),
        ("timeout", "6OO", RESOLVED),
        ("organization", "org-abc", RESOLVED),  # any other string: may be resolved
        ("organization", DB_URL, RESOLVED),
        ("vertex_project", "my-project", RESOLVED),
        ("azure_ad_token", "tok-****cdef", MASKED),
        ("access_tier", "****", MASKED),  # LiteLLM's masker: "access" is one of its words
        ("extra_headers", {"X-Team": "search"}, NESTED),
        ("extra_headers", {"X-Auth": "plai*******lain"}, MASKED),
        ("extra_headers", {"nested": {"deeper": DB_URL}}, NESTED),
        ("extra_headers", ["fast"], NESTED),  # a list that is not tags
        ("tags", ["fast", MASTER], CREDENTIAL),  # the shape of a tag, and of a token
        ("custom", {"weight": float("inf")}, NOT_FINITE),
        ("custom", {"n": float("nan")}, NOT_FINITE),
        ("custom", {MASTER: 1}, CREDENTIAL),  # a key that is a token
    ],
)
def test_param_verdict(key: str, value: Any, why: str | None) -> None:
    assert param_verdict(key, value) == (None if why is None else Leave(why))


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("base_model", "gpt-4o", None),
        ("note", "os.environ/HOME", None),
        ("description", f"key {MASTER}", CREDENTIAL),
        ("hf_token", "abc123", SECRET_NAME),  # a key LiteLLM masks holding a string
        ("hf_token", 3, None),  # a number is no secret
        ("password", "abc123", CREDENTIAL),  # a key named for a secret holding a string
        # A RunPod key and a vLLM --api-key under *_key: credentials by key and shape.
        ("runpod_key", "GHMCS1UYUVJCSQQADZ7LJEN485HA4VPO", CREDENTIAL),
        ("vllm_serve_key", "6fda865a-30a5-1a8e-cda0-434c44919d49", CREDENTIAL),
        ("eos_token", "<|im_end|>", SECRET_NAME),  # no credential, but under a key LiteLLM masks
        ("access_groups", ["team-a"], SECRET_NAME),
        ("litellm_credential_name", "runpod-shared", None),  # LiteLLM does not mask it
        ("links", {"docs": "https://u:pw@h/x"}, CREDENTIAL),
        ("limits", {"max": None}, "validate refuses it as listed"),  # LiteLLM keeps no null
    ],
)
def test_info_verdict(key: str, value: Any, why: str | None) -> None:
    assert info_verdict(key, value) == (None if why is None else Leave(why))


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


def everything(imported: Imported) -> str:
    """The file and every line the command prints from it."""
    lines = [*imported.left_out, *(kept_warning(m, k) for m, k in imported.kept.items())]
    return "\n".join([imported.text, *lines])


def validates(imported: Imported) -> dict[str, Any]:
    """The file through validate; its data as validate reads it."""
    doc = parse_yaml(imported.text, "fleet.yaml")
    fleet_from_doc(doc, "fleet.yaml")
    data: dict[str, Any] = doc.data
    return data


def test_what_cannot_be_written_stays_on_the_routes_and_is_named_not_quoted() -> None:
    second = "http://10.0.0.2:8000/v1"
    imported = import_fleet(
        [
            route("1", "m", {"organization": DB_URL, "access_tier": "****", "rpm": 5}),
            route("2", "m", {"api_base": second, "organization": DB_URL, "rpm": 5}),
            route("3", "m", {"api_base": "http://10.0.0.3:8000/v1", "rpm": 5}, hf_token="abc123"),
        ],
        "f",
    )
    model = validates(imported)["models"]["m"]
    assert model["litellm_params"] == {"rpm": 5}  # the rest is left on the routes
    assert [h.get("model_info") for h in model["hosts"]] == [None, None, None]
    said = everything(imported)
    assert DB_URL not in said and "Pa55w0rd" not in said and "abc123" not in said
    assert "****" not in said
    (warning,) = [kept_warning(m, k) for m, k in imported.kept.items()]
    assert warning == (
        "model m: litellm_params.access_tier (host 10.0.0.1-8000: masked by LiteLLM); "
        "litellm_params.organization (hosts 10.0.0.1-8000, 10.0.0.2-8000: a string LiteLLM may "
        "have resolved from an os.environ/ secret); model_info.hf_token (host 10.0.0.3-8000: "
        "a string under a key LiteLLM masks, which import cannot tell from a secret) stay on the "
        "live routes as they are, not in fleet.yaml (import "
        "cannot write them safely); to manage one, add it to fleet.yaml, a secret as "
        "os.environ/NAME"
    )
    comment = imported.text.partition("\nmodels:\n")[2].partition("\n  m:\n")[0]
    assert comment.splitlines() == [
        "  # Kept on the live routes as they are, not managed by this file (import cannot write "
        "them safely;",
        "  # plan leaves alone what the file does not set):",
        "  #   litellm_params.access_tier (host 10.0.0.1-8000): masked by LiteLLM",
        "  #   litellm_params.organization (hosts 10.0.0.1-8000, 10.0.0.2-8000): a string LiteLLM "
        "may have",
        "  #       resolved from an os.environ/ secret",
        "  #   model_info.hf_token (host 10.0.0.3-8000): a string under a key LiteLLM masks, which "
        "import",
        "  #       cannot tell from a secret",
        "  # To manage one, add it here, a secret as os.environ/NAME (set in the proxy).",
    ]


def test_every_host_keeping_a_value_says_so_once() -> None:
    imported = import_fleet(
        [
            route("1", "m", {"organization": "org-a"}),
            route("2", "m", {"api_base": "http://10.0.0.2:8000/v1", "organization": "org-b"}),
        ],
        "f",
    )
    assert "litellm_params.organization (every host: a string" in kept_warning(
        "m", imported.kept["m"]
    )
    assert "org-a" not in everything(imported) and "org-b" not in everything(imported)


def test_the_file_says_api_key_stays_and_plan_adopts_in_place() -> None:
    imported = import_fleet([route("1", "m", {})], "f")
    header = " ".join(
        line.removeprefix("# ") for line in imported.text.splitlines() if line.startswith("# ")
    )
    assert "`fleet-sync plan` adopts each route in place: it adds fleet-sync's tags by PATCH, " in (
        header
    )
    assert "keeping the route's id, api_key and everything fleet.yaml does not set." in header
    assert "api_key stays on each route as it is (LiteLLM never lists it); to manage it, " in header
    assert "add api_key: os.environ/NAME" in header
    assert imported.kept == {}  # nothing else to say


def test_priced_routes_write_their_prices_in_litellm_params_as_numbers() -> None:
    """LiteLLM lists the litellm_params prices again in model_info (pricing_overrides names
    them): validate refuses prices there, so import writes them once, where fleet.yaml takes
    them, as floats PyYAML reads as numbers (1e-06 written plain would be a string to it)."""
    prices = {"input_cost_per_token": 1e-06, "output_cost_per_token": 2.5e-07}
    info = {**prices, "pricing_overrides": list(prices), "key": "hosted_vllm/org/m"}
    imported = import_fleet([route("1", "m", prices, **info)], "f")
    assert "input_cost_per_token: 1.0e-06\n" in imported.text
    model = validates(imported)["models"]["m"]
    assert model["litellm_params"] == prices and "model_info" not in model
    assert imported.kept == {}


def test_a_price_set_in_model_info_only_stays_there() -> None:
    imported = import_fleet([route("1", "m", {}, input_cost_per_token=3e-06)], "f")
    assert "model_info" not in validates(imported)["models"]["m"]
    assert "model_info.input_cost_per_token (every host: pricing in model_info, which " in (
        kept_warning("m", imported.kept["m"])
    )


def test_an_address_with_userinfo_leaves_its_group_out() -> None:
    """fleet.yaml refuses user:password@, and adopting the route with the address written
    without it would drop the credential: the group is for a person to write."""
    imported = import_fleet(
        [route("1", "m", {"api_base": "https://user:Pa55w0rd-xyz@10.0.0.1:8443/v1"})], "f"
    )
    assert imported.routes == 0
    (said,) = imported.left_out
    assert said.startswith("model group m left out whole: 1: api_base carries user:password@")
    assert "Pa55w0rd" not in everything(imported) and "user:Pa" not in everything(imported)


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"model": MASTER}, "model has no provider prefix"),
        ({"model": f"hosted_vllm/{MASTER}"}, "a served model looks like a credential"),
        ({"api_base": MASTER}, "api_base is not an address"),
        ({"api_base": f"https://h/{MASTER}/v1"}, "api_base looks like a credential"),
        ({"model": "hosted_vllm/org/m\ud83d"}, "a served model holds a lone surrogate"),
        ({"api_base": "http://10.0.0.1/\udcff"}, "U+DCFF"),
    ],
)
def test_a_group_fleet_yaml_cannot_hold_is_left_out_without_quoting_it(
    params: dict[str, Any], reason: str
) -> None:
    imported = import_fleet([route("1", "m", params)], "f")
    assert imported.routes == 0
    (said,) = imported.left_out
    assert said.startswith("model group m left out whole: ") and reason in said
    assert MASTER not in everything(imported)


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        (
            {"base_url": "http://203.0.113.9:9000/v1"},
            "litellm_params.base_url sends its requests to another address than api_base, which "
            "fleet.yaml cannot express: move it into api_base by hand, then import",
        ),
        (
            {"litellm_credential_name": "shared"},
            "litellm_params.litellm_credential_name fills its keys from a LiteLLM credential",
        ),
        (
            {"custom_llm_provider": "sagemaker"},
            "litellm_params.custom_llm_provider overrides the provider of its model",
        ),
    ],
)
def test_a_route_whose_requests_go_elsewhere_leaves_its_group_out(
    params: dict[str, Any], reason: str
) -> None:
    """A key that sends a route's requests elsewhere than api_base (sync/litellm/redirects.py):
    fleet.yaml cannot say it, and adopting the route would remove it. One such host leaves the group
    out."""
    imported = import_fleet(
        [
            route("1", "m", {}),
            route("2", "m", {"api_base": "http://10.0.0.2:8000/v1", **params}),
            route("3", "n", {"model": "hosted_vllm/org/n"}),
        ],
        "f",
    )
    (said,) = imported.left_out
    assert said.startswith("model group m left out whole: 2: ") and reason in said, said
    assert list(validates(imported)["models"]) == ["n"]


def test_a_custom_llm_provider_equal_to_the_models_prefix_is_implied() -> None:
    """LiteLLM's UI writes custom_llm_provider beside the prefix: that sends nothing elsewhere,
    so the group is imported, without the key (the prefix says it)."""
    imported = import_fleet([route("1", "m", {"custom_llm_provider": "hosted_vllm"})], "f")
    assert imported.left_out == () and imported.routes == 1
    assert "custom_llm_provider" not in imported.text
    validates(imported)


@pytest.mark.parametrize("provider", ["text-completion-openai", "nano-gpt", "scx-ai"])
def test_a_provider_whose_name_holds_a_hyphen_is_imported(provider: str) -> None:
    """LiteLLM's names hold '-' (1.98.1-1.110.2); a new user's portal route was left out as
    having "no provider prefix"."""
    imported = import_fleet([route("1", "m", {"model": f"{provider}/Qwen/Qwen2.5-7B"})], "f")
    assert imported.left_out == () and imported.routes == 1
    assert validates(imported)["models"]["m"]["provider"] == provider


def test_a_credential_in_a_value_leaves_only_that_key_out() -> None:
    imported = import_fleet(
        [
            route(
                "1",
                "m",
                {"extra_headers": {"X-Org": DB_URL}, "rpm": 1},
                description=f"key {MASTER}",
                team="search",
            )
        ],
        "f",
    )
    model = validates(imported)["models"]["m"]
    assert model["litellm_params"] == {"rpm": 1} and model["model_info"] == {"team": "search"}
    assert [k.path for k in imported.kept["m"]] == [
        "litellm_params.extra_headers",
        "model_info.description",
    ]
    assert MASTER not in everything(imported) and "Pa55w0rd" not in everything(imported)


def test_a_key_that_could_break_the_comment_is_not_shown() -> None:
    """A key is quoted in a comment of the file: one with a newline would end the comment and
    write YAML of its own."""
    imported = import_fleet([route("1", "m", {"x\nfleet: evil": "v", "rpm": 1})], "f")
    data = validates(imported)
    assert data["fleet"] == "f" and data["models"]["m"]["litellm_params"] == {"rpm": 1}
    assert "evil" not in everything(imported)
    assert "litellm_params.(a key not shown: unusual characters)" in kept_warning(
        "m", imported.kept["m"]
    )


def test_model_info_is_written_as_stored() -> None:
    """LiteLLM resolves no reference in model_info: its strings are what was written."""
    imported = import_fleet([route("1", "m", {}, base_model="gpt-4o", team="search")], "f")
    assert validates(imported)["models"]["m"]["model_info"] == {
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
    (host,) = validates(imported)["models"]["m"]["hosts"]
    assert host == {"name": "a", "api_base": BASE["api_base"]}  # its tagged name kept
    assert "fleet_sync_" not in imported.text.partition("\nversion:")[2]


def test_a_route_of_this_fleet_whose_written_value_cannot_come_back_is_left_out() -> None:
    """fleet-sync recorded writing these paths; a file without them would make plan remove
    them (api_key, which LiteLLM never lists, among them)."""
    written = {**BASE, "api_key": "os.environ/UPSTREAM", "organization": "os.environ/ORG"}
    record = paths_record(written, {})
    tags = {"fleet_sync_fleet": "f", "fleet_sync_host": "a", "fleet_sync_paths": record}
    listed = {"organization": "resolved-org"}  # what LiteLLM lists: no api_key, resolved
    imported = import_fleet([route("1", "m", listed, **tags)], "f")
    assert imported.routes == 0
    (said,) = imported.left_out
    assert "fleet-sync wrote litellm_params.api_key on these routes and import cannot write it" in (
        said
    )
    assert "resolved-org" not in everything(imported)
    record = paths_record({**BASE, "rpm": 5}, {})
    tags["fleet_sync_paths"] = record
    imported = import_fleet([route("1", "m", {"rpm": 5}, **tags)], "f")
    assert validates(imported)["models"]["m"]["litellm_params"] == {"rpm": 5}


def test_a_model_name_fleet_yaml_cannot_hold_leaves_its_group_out() -> None:
    imported = import_fleet([route("1", "bad name\n", {}), route("2", "ok", {})], "f")
    assert imported.models == 1
    assert imported.left_out == (
        "model group 'bad name\\n' left out whole: its name is not one fleet.yaml takes "
        "(letters, digits and ._:/@+-)",
    )


RUNPOD = "GHMCS1UYUVJCSQQADZ7LJEN485HA4VPO"
UUID = "6fda865a-30a5-1a8e-cda0-434c44919d49"


def test_model_info_keys_and_model_information_stay_on_the_route() -> None:
    """A RunPod key and a vLLM --api-key under *_key names are credentials (never written); the
    model information LiteLLM lists on this route may be another route's (LiteLLM shares it
    among every route of the model, tests/test_import_model_info_live.py): never written either,
    named as kept for a model the cost map does not know, left silently for one it knows."""
    listed = {"max_input_tokens": 2048, "supports_vision": True, "mode": "chat"}
    imported = import_fleet(
        [
            route("1", "m", {}, runpod_key=RUNPOD, vllm_serve_key=UUID, team="search", **listed),
            route("2", "known", {"model": "openai/gpt-4o"}, key="gpt-4o", team="x", **listed),
        ],
        "f",
    )
    models = validates(imported)["models"]
    assert models["m"]["model_info"] == {"team": "search"}
    assert models["known"]["model_info"] == {"team": "x"}
    said = everything(imported)
    assert RUNPOD not in said and UUID not in said and "2048" not in imported.text
    kept = {k.path: k.why for k in imported.kept["m"]}
    assert kept == {
        "model_info.runpod_key": CREDENTIAL,
        "model_info.vllm_serve_key": CREDENTIAL,
        "model_info.max_input_tokens": SHARED_INFO,
        "model_info.mode": SHARED_INFO,
        "model_info.supports_vision": SHARED_INFO,
    }
    assert "known" not in imported.kept  # LiteLLM's cost map values: nothing to say


def test_a_paused_route_is_imported_as_a_drained_host_so_the_plan_keeps_it_paused() -> None:
    """LiteLLM lists a paused route with model_info.blocked: import writes `enabled: false`
    (its pause is state fleet.yaml holds), never `blocked` itself, and the plan changes
    nothing about the pause."""
    base = {"model": "hosted_vllm/org/m"}
    routes = [
        route("1", "m", {**base, "api_base": "http://10.0.0.1:8000/v1"}, blocked=True),
        route("2", "m", {**base, "api_base": "http://10.0.0.2:8000/v1"}, blocked=False),
    ]
    hosts = validates(import_fleet(routes, "f"))["models"]["m"]["hosts"]
    assert [h.get("enabled", True) for h in hosts] == [False, True]
    assert "blocked" not in import_fleet(routes, "f").text
