"""What looks like a credential by its shape (sync/credentials.py), as a table: values that must
pass (real model ids, addresses, ids, dates, references, fleet-sync's own digests) and values
that must be refused, each with what the refusal says. validate, redaction and import all ask
this one definition.

Tokens of issuers that scan commits for their own (GitHub, GitLab, Slack, Hugging Face, AWS,
Google) are put together at run time, so no file of this repository holds one verbatim.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string

import pytest

from sync.credentials import credential_kind, looks_like_credential, mask_credentials, mask_tokens
from sync.render import route_id, value_digest

MASK = "***"
R32 = "9naHVck6pbd4ZRj2SxphvDTwrzqwo72n"  # random base62
TAIL = "A1b2C3d4E5f6G7h8J9k0" * 2

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
    "os.environ/FLEET_SYNC_IMPORT_PORTAL_QWEN_ORGANIZATION",
    "0123456789abcdef",
    value_digest({"a": 1}) + ' ["litellm_params","extra_headers","X-Api-Key"]',
    route_id("gpu-fleet", "qwen3.8-27b", "runpod-a"),
    "task-abcdefghijklmnopqrstu",
    # words that start like a credential, or hold a prefix inside a name
    "eu-sk-central-region-1",
    "Basic models for testing",
    "Token limits apply per minute",
    "sk-short",
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
    ("http://312a4fe4d4b5c01d7d3037655277230c.gateway.example.com:8000/v1", "a long run of hex"),
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
    assert all(part not in said for part in (TAIL[:12], R32[:12], "s3cr3t", "abc123", "CJ9"))


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
    assert len(strong) == 12
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
