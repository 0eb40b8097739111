"""Error classification of LiteLLM answers, on plain data (no HTTP)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sync.litellm.releases import TESTED
from sync.live.client import (
    ErrorKind,
    LiteLLMClient,
    ProxyError,
    Retry,
    classify,
    error_message,
)

from .support.litellm_answers import EXPECTED, captured, expected


def body(message: str) -> str:
    return json.dumps({"error": {"message": message, "type": "x", "code": "500"}})


@pytest.mark.parametrize(
    ("status", "text", "write", "kind"),
    [
        (
            500,
            body("Model create was saved to the database, but the reload failed"),
            True,
            ErrorKind.MAYBE_COMMITTED,
        ),
        (500, body("{'error': 'Failed to add model to db.'}"), True, ErrorKind.MAYBE_COMMITTED),
        (500, body("Internal Server Error"), False, ErrorKind.TRANSIENT),
        (502, "bad gateway", True, ErrorKind.TRANSIENT),
        (503, "", False, ErrorKind.TRANSIENT),
        (504, "", True, ErrorKind.TRANSIENT),
        (429, body("rate limited"), True, ErrorKind.TRANSIENT),
        (401, body("Authentication Error, Invalid API key provided."), False, ErrorKind.AUTH),
        (403, body("not allowed"), True, ErrorKind.AUTH),
        (404, body("Model x not found on proxy."), True, ErrorKind.NOT_FOUND),
        (400, body("{'error': 'Model with id=x not found in db'}"), True, ErrorKind.NOT_FOUND),
        (400, body("invalid params"), True, ErrorKind.CLIENT),
        (422, json.dumps({"detail": [{"msg": "field required"}]}), True, ErrorKind.CLIENT),
        (500, body("No DB Connected. Here's how to do it"), True, ErrorKind.NO_DATABASE),
    ],
)
def test_classify(status: int, text: str, write: bool, kind: ErrorKind) -> None:
    assert classify(status, text, write) is kind


def test_error_message_reads_litellm_and_fastapi_shapes() -> None:
    assert error_message(body("boom")) == "boom"
    assert error_message(json.dumps({"detail": "nope"})) == "nope"
    assert error_message("<html>502</html>") == "<html>502</html>"


# -- what each tested LiteLLM version really answers (tests/cases/litellm, captured by
#    `python -m tests.support.litellm_answers`)
# -------------------------------------------------------


def captured_errors() -> list[Any]:
    params = []
    for version in TESTED:
        for answer in captured(version)["answers"]:
            if isinstance(answer["status"], int) and answer["status"] >= 400:
                name = f"{version}-{answer['target']}-{answer['case']}".replace(" ", "-")
                params.append(pytest.param(version, answer, id=name))
    return params


@pytest.mark.parametrize(("version", "answer"), captured_errors())
def test_real_answers_of_each_version_classify(version: str, answer: dict[str, Any]) -> None:
    body = answer["body"] if isinstance(answer["body"], str) else json.dumps(answer["body"])
    kind = classify(answer["status"], body, answer["write"])
    assert kind is expected(answer["target"], answer["case"], version), body


def test_every_expectation_is_met_by_a_captured_answer() -> None:
    """No stale expectation: each one classifies an error some tested version really gave."""
    errors = {
        (a["target"], a["case"])
        for version in TESTED
        for a in captured(version)["answers"]
        if isinstance(a["status"], int) and a["status"] >= 400
    }
    assert set(EXPECTED) == errors


def test_1_110_database_outage_on_a_write_stops_the_run() -> None:
    """1.109+ answer a write whose database is unreachable with 503 "no_db_connection"
    (litellm/proxy/common_utils/openai_error_payload.py, proxy_exception_for). The harness's
    query-engine stand-in fails differently, so this shape comes from the source, not a capture."""
    outage = {
        "error": {
            "message": "Service Unavailable, the authentication database is temporarily "
            "unreachable. Please retry shortly.",
            "type": "no_db_connection",
            "param": None,
            "code": "503",
        }
    }
    assert classify(503, json.dumps(outage), True) is ErrorKind.NO_DATABASE
    assert classify(503, json.dumps({"error": {"message": "busy"}}), True) is ErrorKind.TRANSIENT


def test_readiness_of_a_proxy_whose_database_is_down_is_refused_clearly() -> None:
    down = next(
        a
        for a in captured("1.110.2")["answers"]
        if (a["target"], a["case"]) == ("outage", "readiness")
    )

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(down["status"], json=down["body"])

    client = LiteLLMClient(["http://127.0.0.1:9"], "sk-x", transport=httpx.MockTransport(answer))
    with pytest.raises(ProxyError) as refused:
        client.check_ready("http://127.0.0.1:9")
    assert refused.value.kind is ErrorKind.NO_DATABASE
    assert "cannot reach its database" in str(refused.value) and "db: disconnected" in str(
        refused.value
    )


@pytest.mark.parametrize(
    ("details_status", "readiness", "version"),
    [
        (401, {"status": "healthy", "db": "connected"}, None),  # a key details refuses
        (404, {"status": "healthy", "db": "connected", "litellm_version": "1.60.0"}, "1.60.0"),
    ],
)
def test_readiness_falls_back_to_the_public_probe_and_the_version_is_not_asked_again(
    details_status: int, readiness: dict[str, Any], version: str | None
) -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/health/readiness/details":
            return httpx.Response(details_status, json={"error": {"message": "no"}})
        return httpx.Response(200, json=readiness)

    client = LiteLLMClient(["http://127.0.0.1:9"], "sk-x", transport=httpx.MockTransport(answer))
    client.check_ready("http://127.0.0.1:9")
    assert client.read_version("http://127.0.0.1:9") == version
    assert seen == ["/health/readiness/details", "/health/readiness"]


@pytest.mark.parametrize("version", TESTED)
def test_one_readiness_read_says_the_database_and_the_version(version: str) -> None:
    details = next(a for a in captured(version)["answers"] if a["case"] == "readiness details")
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(details["status"], json=details["body"])

    transport = httpx.MockTransport(answer)
    client = LiteLLMClient(["http://127.0.0.1:9"], "sk-x", transport=transport)
    client.check_ready("http://127.0.0.1:9")
    assert client.read_version("http://127.0.0.1:9") == version
    assert seen == ["/health/readiness/details"]
    # Without check_ready first (a client that reads only the version): the same one request.
    fresh = LiteLLMClient(["http://127.0.0.1:9"], "sk-x", transport=transport)
    assert fresh.read_version("http://127.0.0.1:9") == version
    assert seen == ["/health/readiness/details"] * 2


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, b'{"error": {"message": "boom"}}'),
        (503, b'{"detail": "Service Unhealthy (x)"}'),  # LiteLLM's catch-all, not the database
        (200, b"not json"),
        (200, b'{"status": "healthy", "db": "connected"}'),  # no version: asked of the probe
    ],
)
def test_a_details_answer_that_does_not_say_both_is_completed_by_the_public_probe(
    status: int, body: bytes
) -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/health/readiness/details":
            return httpx.Response(status, content=body)
        return httpx.Response(200, json={"db": "connected", "litellm_version": "1.60.0"})

    retry = Retry(attempts=1)
    client = LiteLLMClient(
        ["http://127.0.0.1:9"], "sk-x", retry=retry, transport=httpx.MockTransport(answer)
    )
    client.check_ready("http://127.0.0.1:9")
    assert client.read_version("http://127.0.0.1:9") == "1.60.0"
    assert seen == ["/health/readiness/details", "/health/readiness"]


def test_a_pod_shutting_down_is_refused_before_any_write() -> None:
    """LiteLLM's /health/drain: the public probe answers 503 shutting_down, details still 200."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health/readiness":
            return httpx.Response(503, json={"status": "shutting_down"})
        return httpx.Response(200, json={"db": "connected", "litellm_version": "1.108.7"})

    client = LiteLLMClient(
        ["http://127.0.0.1:9"], "sk-x", retry=Retry(attempts=1),
        transport=httpx.MockTransport(answer),
    )  # fmt: skip
    client.check_ready("http://127.0.0.1:9")  # what a plan asks: ready to be read
    with pytest.raises(ProxyError) as refused:
        client.check_serving()
    assert "shutting_down" in str(refused.value)
    assert "proxy unreachable at http://127.0.0.1:9" in str(refused.value)
