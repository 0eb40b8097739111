"""Error classification of LiteLLM answers, on plain data (no HTTP)."""

from __future__ import annotations

import json

import pytest

from sync.litellm import ErrorKind, classify, error_message


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
