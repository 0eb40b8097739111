"""What counts as a credential (sync/secrets/credentials.py), as tables: values that must pass (real
model ids, addresses, ids, dates, references, config values, fleet-sync's own digests, and every
name and value of LiteLLM's model cost map) and values that must be refused, each with what the
refusal says; what a value under a key means given the key's name; and the measured rates of
what passes unseen, format by format. validate, redaction and import all ask this definition.

Tokens of issuers that scan commits for their own (GitHub, GitLab, Slack, Hugging Face, AWS,
Google, RunPod, Groq, Replicate, Perplexity, Fireworks, NVIDIA) are put together at run time, so
no file of this repository holds one verbatim.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from sync.core.render import route_id, value_digest
from sync.secrets.credentials import (
    NAMED_RANDOM,
    NAMED_SECRET,
    credential_kind,
    looks_like_credential,
    mask_credentials,
    mask_tokens,
    may_quote,
    named_credential,
)
from sync.secrets.random_runs import random_looking

MASK = "***"
R32 = "9naHVck6pbd4ZRj2SxphvDTwrzqwo72n"  # random base62
TAIL = "A1b2C3d4E5f6G7h8J9k0" * 2
RUNPOD = "GHMCS1UYUVJCSQQADZ7LJEN485HA4VPO"  # a legacy RunPod key: 32 upper-case and digits
UUID = "6fda865a-30a5-1a8e-cda0-434c44919d49"  # a vLLM --api-key
COST_MAP = Path(__file__).parent / "cases" / "credentials" / "cost_map_values.txt"

MUST_PASS = [
    # model ids, as served and as LiteLLM's model
    "nvidia/Llama-3_1-Nemotron-Ultra-253B-v1",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "Qwen/Qwen3.8-27B",
    "hosted_vllm/Qwen/Qwen2.5-VL-72B-Instruct-AWQ",
    "deepinfra/Qwen/Qwen3-Coder-480B-A35B-Instruct-Turbo",
    "Qwen3-235B-A22B-Instruct-2507-FP8",
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1_5",
    "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
    "unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit",
    "WhisperLargeV3TurboTranscription2024Model",
    "sentence-transformers/all-MiniLM-L6-v2",
    "bedrock/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-"
    "sonnet-20241022-v2:0",
    "claude-3-5-sonnet-20241022",
    # addresses and hosts
    "https://abc123-8000.proxy.runpod.net/v1",
    "abc123-8000.proxy.runpod.net",
    "http://103.196.86.105:17140/v1",
    "http://10.0.0.1:8000/v1/openai/deployments/MyModel7B/chat/completions",
    "https://us-central1-aiplatform.googleapis.com/v1/projects/MyProject123/locations/"
    "us-central1/publishers/google/models",
    "https://management.azure.com/subscriptions/c873328e-b572-4770-8dff-aaeb6f1f0e79/providers/"
    "Microsoft.CognitiveServices/locations/eastus2/models?api-version=2024-10-01",
    "https://api.runpod.ai/v2/vllm-abc123def456/openai/v1",
    # ids, dates, references, fleet-sync's own digests and ids
    "123e4567-e89b-12d3-a456-426614174000",
    "2024-08-06",
    "2024-08-06T12:34:56Z",
    "os.environ/IMPORT_PORTAL_QWEN_ORGANIZATION",
    "0123456789abcdef",
    value_digest({"a": 1}) + ' ["litellm_params","extra_headers","X-Api-Key"]',
    route_id("gpu-fleet", "qwen3.8-27b", "runpod-a"),
    "task-abcdefghijklmnopqrstu",
    # words that start like a credential, or hold a prefix inside a name
    "eu-sk-central-region-1",
    "Basic models for testing",
    "Token limits apply per minute",
    "sk-short",
    # real model ids, as Hugging Face and the providers name them
    "TheBloke/Mixtral-8x7B-Instruct-v0.1-GPTQ",
    "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
    "ISTA-DASLab/Meta-Llama-3.1-70B-Instruct-AQLM-PV-2Bit-1x16",
    "neuralmagic/Meta-Llama-3.1-405B-Instruct-FP8-dynamic",
    "RedHatAI/Llama-3.3-70B-Instruct-quantized.w8a8",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
    "nvidia/Llama-3.1-Nemotron-Nano-VL-8B-V1",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
    "WhiteRabbitNeo/WhiteRabbitNeo-2.5-Qwen-2.5-Coder-7B",
    "mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit-DWQ",
    "OpenGVLab/InternVL3_5-241B-A28B",
    "tiiuae/Falcon-H1-34B-Instruct-GPTQ-Int8",
    "ft:gpt-4o-mini-2024-07-18:acme-corp:support-bot:9ZxQw3Lp",
    "accounts/fireworks/models/llama-v3p1-70b-instruct",
    "arn:aws:sagemaker:us-east-1:123456789012:endpoint/vllm-qwen3-8b-2025-01-01-12-00-00",
    "projects/1234567890/locations/us-central1/endpoints/9876543210987654321",
    # real addresses: hex and one-case ids in a host, hex ids in a path are identifiers
    "https://gateway.ai.cloudflare.com/v1/0123456789abcdef0123456789abcdef/my-gateway/openai",
    "https://e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6.r2.cloudflarestorage.com",
    "http://312a4fe4d4b5c01d7d3037655277230c.gateway.example.com:8000/v1",
    "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws/v1",
    "https://p6fk3c2x0v8s9abc.us-east-1.aws.endpoints.huggingface.cloud/v1",
    "https://api.runpod.ai/v2/vllm-k8a9bx1z2y3w4v/openai/v1",
    "https://acme--vllm-qwen3-serve-dev.modal.run/v1",
    "https://model-4q9j7x2w.api.baseten.co/environments/production/sync/v1",
    "https://vllm-server-7k3ab2xq4a-uc.a.run.app/v1",
    "http://k8s-llm-vllming-3a5e1c2b9f-1234567890abcdef.elb.us-west-2.amazonaws.com/v1",
    "https://8fb1c26e-0e3a-4f0c-9c25-2a7b7b4d1e55.cloudspaces.litng.ai/v1",
    "https://dlc-DEVTEST-Z2xK9qLm3Np7Rt5Vw.example.net/v1",
    "https://ml-prod.internal:8443/v1/models/Qwen3-235B-A22B-Instruct-2507-FP8",
    "http://[2001:db8::1]:8000/v1",
    # config values: LiteLLM's credential store names one (litellm_credential_name), special
    # tokens, Oracle Cloud ids, host names that start like a key
    "runpod-shared",
    "<|im_end|>",
    "<|endoftext|>",
    "bos_token: <s>",
    "token: none",
    "ocid1.tenancy.oc1..aaaaaaaaba3pv6wkcr4jqae5f15p2b2m2yt2j6rx32uzr4h25vqstifsfdsq",
    "rk-3588-npu-node-01",
    "sk-production-fleet",
    "pk-embeddings-large-v2",
    "sk-DeepSeek-team",
    "Bearer of bad news today",
    "Token Ring network adapter",
    "Password reset flow demo model",
]

MUST_REFUSE = [
    # issuers' prefixes
    ("sk-abcdef0123456789abcdef", "a token with the prefix sk-"),
    ("http://10.0.0.1:8000/sk-abcdef0123456789abcdef/v1", "a token with the prefix sk-"),
    ("served for team sk-proj-0123456789abcdefABCDEF", "a token with the prefix sk-"),
    ("pk_live_0123456789abcdefghij", "a token with the prefix pk_"),
    ("gh" + "p_" + TAIL[:36], "a token with the prefix ghp_"),
    ("gh" + "s_" + TAIL[:36], "a token with the prefix ghs_"),
    ("github" + "_pat_" + TAIL[:30], "a token with the prefix github_pat_"),
    ("gl" + "pat-" + TAIL[:20], "a token with the prefix glpat-"),
    ("xo" + "xb-" + TAIL[:20], "a token with the prefix xoxb-"),
    ("xo" + "xp-" + TAIL[:10], "a token with the prefix xoxp-"),  # the shortest shape: 15
    ("h" + "f_" + TAIL[:34], "a token with the prefix hf_"),
    ("AK" + "IA" + "0123456789ABCDEF", "a token with the prefix AKIA"),
    ("?key=" + "AI" + "za" + TAIL[:35], "a token with the prefix AIza"),
    ("ya" + "29." + TAIL[:24], "a token with the prefix ya29."),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmbGVldCJ9.c2lnbmF0dXJl", "a JSON Web Token"),
    ("-----BEGIN " + "PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", "a private key"),
    # addresses, headers, queries
    ("https://svc:s3cr3t@10.0.0.5/v1", "user:password@ in an address"),
    ("Authorization: Bearer abc", "a secret header"),
    ("Bearer abcdefgh1234", "a secret header"),
    ("https://docs.example.com/qwen?token=qs-abc123", "a secret in a query (token=)"),
    ("https://h/v1?x=1&api_key=abc", "a secret in a query (api_key=)"),
    # long random runs: base62, base64 (with / + =), base64url, inside paths and hosts
    (R32, "a long random string"),
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "a long random string"),
    ("tyCwiGTwFCwo+jKdkgMl8J0O/Mgln8OwJ5cW2BW4=", "a long random string"),
    ("iBhzBLG9X0n_I62Hh1e3fugi1SaVrBbj4ewF25EZ", "a long random string"),
    (f"https://gateway.example.com/v1/projects/p/endpoints/{R32}/openai", "a long random string"),
    (f"https://{R32}.example.com/v1", "a long random string"),
    (f"a-very-long-descriptive-prefix-with-many-words-{R32}", "a long random string"),
    # hex runs: 32 (md5, a UUID without dashes), 40 (sha1), 64 (sha256)
    ("312a4fe4d4b5c01d7d3037655277230c", "a long run of hex digits"),
    ("d6afd612b434fa770efabdb95dd729d775b4e7eb", "a long run of hex digits"),
    ("sha256:" + hashlib.sha256(b"x").hexdigest(), "a long run of hex digits"),
    ("http://10.0.0.1:8000/v1?trace=312a4fe4d4b5c01d7d3037655277230c", "a long run of hex"),
    # one case only: a RunPod key, lower-case and base32 keys, in a path too
    (RUNPOD, "a long random string"),
    ("kyhndpg2z75rxusy3bryhtp74g120ow96dmg03fh", "a long random string"),
    ("QDU2YXNYRNYXCM4XVLOGEUWEXP5VBBZL", "a long random string"),
    (f"https://api.runpod.ai/v2/{RUNPOD}/openai/v1", "a long random string"),
    # issuers of LLM keys
    ("rp" + "a_" + RUNPOD + "ABCDEFGH" + "aB3dE6", "a token with the prefix rpa_"),
    ("gs" + "k_" + TAIL[:40] + "0123456789AB", "a token with the prefix gsk_"),
    ("r" + "8_" + TAIL[:37], "a token with the prefix r8_"),
    ("pp" + "lx-" + TAIL[:40] + "01234567", "a token with the prefix pplx-"),
    ("f" + "w_" + TAIL[:24], "a token with the prefix fw_"),
    ("nva" + "pi-" + TAIL + TAIL[:24], "a token with the prefix nvapi-"),
    ("sk-" + "Xq3_9vLm2Kd8fJh1Wn0-Pz", "a token with the prefix sk-"),  # LiteLLM's key shape
    # authorization schemes and header lines
    ("ApiKey 76IxVEMN1tkmWUaB6Brz", "a secret header"),
    ("use Bearer j2gcu37sdYWyFEoSBR9v for it", "a secret header"),
    ("x-auth: RaghaMIIeNx8hnQNpJDz", "a secret header"),
    (f"X-RunPod-Key: {RUNPOD}", "a secret header"),
    # a JWT without its signature, a PGP key, query secrets by the name's last word
    ("eyJhbGciOiJub25lIn0.eyJzdWIiOiJmbGVldCJ9", "a JSON Web Token"),
    ("-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\nlQdGBF\n-----END PGP", "a private key"),
    ("https://api.example.com/v1?key=puiODxeQLv", "a secret in a query (key=)"),
    ("https://fn.azurewebsites.net/api/chat?code=Zk93", "a secret in a query (code=)"),
    ("host=db user=app password=S3cretPw", "a secret in a query (password=)"),  # a DSN
    ("https://h/v1?x=1&auth=uXg7O4ilWj", "a secret in a query (auth=)"),
]


@pytest.mark.parametrize("text", MUST_PASS)
def test_must_pass(text: str) -> None:
    assert credential_kind(text) is None
    assert not looks_like_credential(text)
    assert mask_credentials(text) == text


@pytest.mark.parametrize(("text", "kind"), MUST_REFUSE, ids=[k for _, k in MUST_REFUSE])
def test_must_refuse(text: str, kind: str) -> None:
    said = credential_kind(text)
    assert said is not None and said.startswith(kind), said
    assert looks_like_credential(text)


@pytest.mark.parametrize(("text", "kind"), MUST_REFUSE, ids=[k for _, k in MUST_REFUSE])
def test_the_kind_never_quotes_more_than_a_prefix(text: str, kind: str) -> None:
    said = credential_kind(text) or ""
    parts = (TAIL[:12], R32[:12], RUNPOD[:12], "s3cr3t", "abc123", "CJ9", "76IxVEMN", "Zk93")
    assert all(part not in said for part in parts)
    assert not may_quote(text)  # no message quotes it


# -- by the key's name -------------------------------------------------------------------------

NAMED = [
    # Named for a secret: any plain value is one (a reference is a name, not a value).
    ("api_key", "x", NAMED_SECRET),
    ("Authorization", "Basic models for testing", NAMED_SECRET),
    ("client_secret", ["a", {"b": "c"}], NAMED_SECRET),
    ("X-Auth-Token", "short", NAMED_SECRET),
    ("private_key", "k", NAMED_SECRET),
    ("password", "os.environ/DB_PASSWORD", None),
    # Outside attack c (F5): names it did not know.
    ("pass_phrase", "correct horse", NAMED_SECRET),
    ("passPhrase", "correct horse", NAMED_SECRET),
    ("passcode", "123456", NAMED_SECRET),
    ("pass", "hunter2", NAMED_SECRET),
    ("pw", "hunter2", NAMED_SECRET),
    ("pin", "1234", NAMED_SECRET),
    ("otp_seed", "JBSWY3DPEHPK3PXP", NAMED_SECRET),
    ("dsn", "host=db user=app", NAMED_SECRET),
    ("pass_through", "yes", None),
    ("bypass", "cache", None),
    # A key LiteLLM masks: a random-looking value is one, an ordinary word is not.
    ("X-RunPod-Key", RUNPOD, NAMED_RANDOM),
    ("X-Access-Key", "kyhndpg2z75rxusy3bryhtp74g120ow96dmg03fh", NAMED_RANDOM),
    ("vllm_serve_key", UUID, NAMED_RANDOM),
    ("runpod_key", RUNPOD, NAMED_RANDOM),
    ("oci_key", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", NAMED_RANDOM),
    ("hfToken", "Ze2j3zyFgzxtiO4y", NAMED_RANDOM),
    ("x-auth", "q3gQdooEKGQKcFpg938E4b6e", NAMED_RANDOM),
    ("master_key", "sk-1234", NAMED_RANDOM),  # LiteLLM's own example key
    ("auth", {"scheme": "x", "value": UUID}, NAMED_RANDOM),
    ("eos_token", "<|im_end|>", None),
    ("pad_token", "<|endoftext|>", None),
    ("auth_type", "bearer", None),
    ("access_groups", ["beta-testers", "team-a"], None),
    ("token_count_tokenizer", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", None),
    ("anthropic_keycloak_token_url", "https://sso.example.com/realms/x/token", None),
    ("oci_tenancy", "ocid1.tenancy.oc1..aaaaaaaaba3pv6wkcr4jqae5f15p2b2m2yt2j6rx32uzr4h25vq", None),
    ("hf_token", "abc123", None),  # short: a placeholder, not a key
    # LiteLLM's own name of a credential in its store (it does not mask it either).
    ("litellm_credential_name", "runpod-shared", None),
    # Not a credential's name at all.
    ("max_tokens", "4096", None),
    ("input_cost_per_token", "0.000001", None),
    ("revision", UUID, None),
]


@pytest.mark.parametrize(("key", "value", "why"), NAMED, ids=[f"{k}-{w}" for k, _, w in NAMED])
def test_named_credential(key: str, value: object, why: str | None) -> None:
    assert named_credential(key, value) == why


# -- real names: LiteLLM's model cost map ------------------------------------------------------


def cost_map_values() -> list[str]:
    lines = COST_MAP.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if not line.startswith("# ")]


def test_no_name_or_value_of_litellms_cost_map_is_a_credential() -> None:
    """7,043 names, keys and values (model ids, provider names, source URLs, notes) of the
    cost map of three LiteLLM releases: none is refused by shape, none reads as random under
    a key LiteLLM masks (the rules of sync/secrets/credentials.py measured at 0 of 7,043)."""
    values = cost_map_values()
    assert len(values) > 7000
    assert [v for v in values if looks_like_credential(v)] == []
    assert [v for v in values if random_looking(v)] == []


ALPHABETS = {
    "base62": string.ascii_letters + string.digits,
    "base64": string.ascii_letters + string.digits + "+/",
}


# The thresholds' cost, measured on seeded random keys: how many of 2,000 may pass unseen (the
# shortest standard-base64 keys lose most: separators fall close together by chance).
MISSED_AT_MOST = {32: 60, 40: 30, 64: 10}


@pytest.mark.parametrize("length", sorted(MISSED_AT_MOST))
@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
def test_random_keys_are_found(alphabet: str, length: int) -> None:
    rng = random.Random(f"{alphabet}{length}")
    keys = ["".join(rng.choice(ALPHABETS[alphabet]) for _ in range(length)) for _ in range(2000)]
    missed = [k for k in keys if not looks_like_credential(k)]
    assert len(missed) <= MISSED_AT_MOST[length], missed[:5]


@pytest.mark.parametrize(("size", "length"), [(24, 32), (32, 43)])
def test_random_url_safe_tokens_are_found(size: int, length: int) -> None:
    """secrets.token_urlsafe(size): base64url, - and _ among the letters and digits."""
    rng = random.Random(size)
    tokens = [
        base64.urlsafe_b64encode(rng.randbytes(size)).decode().rstrip("=") for _ in range(2000)
    ]
    assert {len(t) for t in tokens} == {length}
    assert sum(not looks_like_credential(t) for t in tokens) <= MISSED_AT_MOST[min(length, 40)]


# -- measured: what passes unseen, format by format ------------------------------------------

B62 = string.ascii_letters + string.digits
B64U = B62 + "-_"
UPPER = string.ascii_uppercase + string.digits
LOWER = string.ascii_lowercase + string.digits


def chars(rng: random.Random, n: int, alphabet: str = B62) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


Make = Callable[[random.Random], str]
# Formats of real keys (issuers' documented or scanned shapes) and of random secrets, and how
# many of 1,000 seeded samples pass unseen: by their shape alone (anywhere in fleet.yaml, in a
# plan's live values), and under a key LiteLLM masks (X-Access-Key: by shape or as a random
# value there). Under a key named for a secret (api_key, password) every one is refused. The
# figures "before" are what the definition before this table missed, measured the same way.
FORMATS: dict[str, tuple[Make, int, int]] = {
    # before: 1000 / 1000
    "RunPod key (32 upper-case, digits)": (lambda g: chars(g, 32, UPPER), 1, 0),
    # before: 140 / 140
    "RunPod rpa_ key": (lambda g: "rp" + "a_" + chars(g, 40, UPPER) + chars(g, 6), 0, 0),
    # before: 0 / 0
    "LiteLLM key (sk- + token_urlsafe(16))": (
        lambda g: "sk-" + base64.urlsafe_b64encode(g.randbytes(16)).decode().rstrip("="),
        5,
        0,
    ),
    # before: 0 / 0
    "OpenAI project key": (lambda g: "sk-proj-" + chars(g, 48, B64U), 0, 0),
    # before: 0 / 0
    "Anthropic key": (lambda g: "sk-ant-api03-" + chars(g, 93, B64U) + "AA", 0, 0),
    # before: 0 / 0
    "Groq key": (lambda g: "gs" + "k_" + chars(g, 52), 0, 0),
    # before: 0 / 0
    "Replicate key": (lambda g: "r" + "8_" + chars(g, 37), 0, 0),
    # before: 1 / 1
    "Perplexity key": (lambda g: "pp" + "lx-" + chars(g, 48), 0, 0),
    # before: 1000 / 1000
    "Fireworks key": (lambda g: "f" + "w_" + chars(g, 24), 0, 0),
    # before: 0 / 0
    "NVIDIA key": (lambda g: "nva" + "pi-" + chars(g, 64, B64U), 0, 0),
    # before: 0 / 0
    "Hugging Face token": (lambda g: "h" + "f_" + chars(g, 34, string.ascii_letters), 0, 0),
    # before: 6 / 6
    "AWS secret key (40 base64)": (lambda g: chars(g, 40, B62 + "+/"), 6, 0),
    # before: 0 / 0
    "Azure OpenAI key (32 hex)": (lambda g: chars(g, 32, "0123456789abcdef"), 0, 0),
    # before: 6 / 6
    "Mistral key (32 base62)": (lambda g: chars(g, 32), 6, 0),
    # before: 2 / 2
    "Cohere key (40 base62)": (lambda g: chars(g, 40), 2, 0),
    # before: 1000 / 1000
    "40 lower-case and digits": (lambda g: chars(g, 40, LOWER), 0, 0),
    # before: 1000 / 1000
    "base32 secret (32)": (lambda g: chars(g, 32, string.ascii_uppercase + "234567"), 21, 1),
    # before: 5 / 5
    "token_urlsafe(32)": (
        lambda g: base64.urlsafe_b64encode(g.randbytes(32)).decode().rstrip("="),
        5,
        3,
    ),
    # before: 1000 / 1000
    "UUID (vLLM --api-key)": (lambda g: str(uuid.UUID(bytes=g.randbytes(16), version=4)), 1000, 0),
    # before: 1000 / 1000
    "16 base62": (lambda g: chars(g, 16), 1000, 9),
    # before: 1000 / 1000
    "24 base62": (lambda g: chars(g, 24), 1000, 2),
    # before: 1000 / 1000
    "ApiKey header value": (lambda g: "ApiKey " + chars(g, 20), 0, 0),
    # before: 1000 / 1000
    "Bearer token in a sentence": (lambda g: "use Bearer " + chars(g, 20), 1, 1),
    # before: 1000 / 1000
    "x-auth header line": (lambda g: "x-auth: " + chars(g, 20), 2, 2),
    # before: 1000 / 1000
    "JWT without its signature": (lambda g: "eyJhbGciOiJub25lIn0." + chars(g, 30, B64U), 0, 0),
    # before: 1000 / 1000
    "?key= in an address": (lambda g: "https://api.example.com/v1?key=" + chars(g, 24), 0, 0),
    # before: 387 / 387
    "RunPod key in an address's path": (
        lambda g: f"https://api.example.com/v2/{chars(g, 32, UPPER)}/openai/v1",
        1,
        1,
    ),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_what_passes_unseen_format_by_format(name: str) -> None:
    make, by_shape, under_masked_key = FORMATS[name]
    rng = random.Random(name)
    samples = [make(rng) for _ in range(1000)]
    unseen = [s for s in samples if not looks_like_credential(s)]
    assert len(unseen) == by_shape, unseen[:3]
    masked = [s for s in unseen if named_credential("X-Access-Key", s) is None]
    assert len(masked) == under_masked_key, masked[:3]
    assert all(named_credential("api_key", s) == NAMED_SECRET for s in samples)


# -- masking in text ---------------------------------------------------------------------------


def test_mask_tokens_keeps_what_fleet_sync_writes_itself() -> None:
    """The final scrub masks these shapes in every output: nothing fleet-sync writes may be
    touched — plan hashes, digests, route ids (even of a fleet named sk-...), commit ids, and
    the base64 of git blobs it sends to GitHub."""
    own = [
        "sha256:" + hashlib.sha256(b"plan").hexdigest(),
        value_digest(["x"]),
        route_id("sk-prod", "sk-team-a", "host-1"),
        route_id("gpu-fleet", "AIza" + "m" * 40, "AKIA" + "A" * 16),
        hashlib.sha1(b"commit").hexdigest(),
    ]
    rng = random.Random(1)
    own += [base64.b64encode(rng.randbytes(3000)).decode() for _ in range(200)]
    for text in own:
        assert mask_tokens(text) == text


def test_mask_tokens_masks_every_token_in_a_text() -> None:
    strong = [
        text
        for text, kind in MUST_REFUSE
        if kind.startswith(("a token", "a JSON", "a private")) and not kind.endswith(("sk-", "pk_"))
    ]
    assert len(strong) == 20
    text = " | ".join(strong)
    masked = mask_tokens(text)
    assert masked.count(MASK) == len(strong), masked
    assert mask_tokens("https://h/v1?a=1&api_key=abc123&b=2") == "https://h/v1?a=1&api_key=***&b=2"
    # A private key is masked to its END line, also in a JSON string (escaped newlines).
    pem = "-----BEGIN " + 'RSA PRIVATE KEY-----\\nMIIEbody\\n-----END RSA PRIVATE KEY-----", "n": 1'
    assert mask_tokens(pem) == '***", "n": 1'
    # sk- keys are names as much as keys: masked by value (the run's keys), not by shape.
    assert mask_tokens("sk-abcdef0123456789abcdef") == "sk-abcdef0123456789abcdef"


def test_mask_credentials_masks_every_shape_and_keeps_the_rest() -> None:
    text = f"m: 'sk-abcdef0123456789abcdef' at http://u:p@h/x/{R32}/v1 {'312a4fe4d4b5c01d' * 2} ok"
    assert mask_credentials(text) == "m: '***' at http://***@h/x/***/v1 *** ok"
