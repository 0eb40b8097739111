"""JSON fleet-sync did not write goes through one bounded parser (sync/untrusted/json_parser.py),
and every request to a host or through the proxy has a total deadline
(sync/untrusted/bounded_http.py): a probed host, the proxy answering apply --verify, or a saved plan
file that answers with nesting past any parser, more than any cap, or bytes that trickle ends in
that one verdict or a one-line error, never a traceback or a hang (issue 15). Upstreams are on
127.0.0.1 (tests/support/upstream.py)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from sync.core.health import listed_models
from sync.core.keytrust import FLEET_ITSELF
from sync.core.render import Route, route_id
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.live.errors import error_message
from sync.live.probe import BODY_CAP, NeedsKey, ask, probe_fleet
from sync.live.verify import verify_groups
from sync.run.console import Exit
from sync.run.saved import read_saved
from sync.untrusted.json_parser import parse_json

from .support.upstream import Trickle, Upstream, hostile

DEEP = b"[" * 200_000  # ~200 KB, far under every cap: json.loads raises RecursionError
NESTED = json.dumps({"data": [{"id": "m", "x": json.loads("[" * 70 + "]" * 70)}]}).encode()
HUGE = b'{"data": [' + b'{"id": "m"},' * 200_000 + b'{"id": "m"}]}'  # 2.4 MB of valid JSON


def test_parse_json_is_bounded_in_depth_and_size_and_says_what_is_wrong() -> None:
    assert parse_json(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    assert parse_json(b"  ") is None
    for body in (DEEP, NESTED):
        with pytest.raises(ValueError, match=r"^the answer is nested deeper than 64 levels$"):
            parse_json(body)
    assert parse_json(NESTED, max_depth=80)["data"][0]["id"] == "m"
    with pytest.raises(ValueError, match=r"^the answer is larger than 1 MiB$"):
        parse_json(HUGE, max_bytes=2**20)
    with pytest.raises(ValueError, match=r"^the file is not JSON: expecting ',' delimiter at "):
        parse_json(b'{"a": 1\n "b": 2}', what="the file")
    with pytest.raises(ValueError, match=r"^the answer is not JSON$"):
        parse_json(b'{"a": "\xff"}')  # not UTF-8
    with pytest.raises(ValueError, match=r"^the answer is not JSON$"):
        parse_json(b"1" * 5000)  # past Python's 4,300-digit limit


@pytest.mark.parametrize(
    "body",
    [
        b'{"model_name": "x\\ud800y"}',
        b'{"data": [{"id": "\\uDCFF"}]}',
        b'{"\\udbff": 1}',
        '["\\ud800"]'.encode("utf-16"),  # json.loads reads UTF-16 too: other bytes
    ],
)
def test_a_lone_surrogate_anywhere_is_refused(body: bytes) -> None:
    with pytest.raises(ValueError, match=r"^the answer holds a lone surrogate escape"):
        parse_json(body)


def test_a_surrogate_encoded_in_utf8_is_refused() -> None:
    """json.loads decodes bytes with surrogatepass: an encoded surrogate is no escape."""
    with pytest.raises(ValueError, match=r"^the answer holds a lone surrogate"):
        parse_json(b'{"model_name": "x\xed\xa0\x80"}')


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": 1, "a": [2.5, -0.0, 1e-400, 123456789012345678901234567890]}',  # last key wins
        b'{"n": ' + b"9" * 4300 + b"}",  # the most digits json.loads reads
        b'{"x": NaN, "y": [Infinity, -Infinity], "z": 1e400}',  # json.loads reads them
        b'\xef\xbb\xbf{"bom": true}',
        '{"utf16": ["\u00e9"]}'.encode("utf-16"),
        b'{"pair": "\\ud83d\\ude00", "escaped": "\\\\ud800", "nul": "\\u0000"}',
    ],
    ids=["duplicate-key-and-numbers", "4300-digits", "nan-infinity", "bom", "utf-16", "escapes"],
)
def test_every_answer_reads_as_json_loads_reads_it(body: bytes) -> None:
    """The fast decoder reads the common answer; whatever it refuses or reads, the value is
    json.loads's, value and type (NaN compared by its text)."""
    assert repr(parse_json(body)) == repr(json.loads(body))


def test_a_surrogate_pair_and_an_escaped_backslash_are_text() -> None:
    assert parse_json(b'["\\ud83d\\ude00", "\\\\ud800"]') == ["\U0001f600", "\\ud800"]


def test_listed_models_of_garbage_is_a_verdict() -> None:
    assert listed_models(DEEP) == "the answer is nested deeper than 64 levels"
    assert listed_models(b"<html>") == "the answer is not JSON: expecting value at line 1 column 1"
    assert error_message(DEEP.decode()).startswith("[[[[")  # shown cut, not parsed


def no_key(url: str, key: str | None = None) -> tuple[str, ...] | str | NeedsKey:
    with httpx.Client(timeout=1.0) as http:
        return ask(http, url, key, 0.5)


@pytest.mark.parametrize(
    ("body", "trickle", "verdict"),
    [
        (DEEP, "", "the answer is nested deeper than 64 levels"),
        (HUGE, "", f"the answer is larger than {BODY_CAP // 1024} KiB"),
        (b"", "body", "no complete answer within 0.5s"),
        (b"", "headers", "no complete answer within 0.5s"),
    ],
    ids=["deep", "huge", "trickling-body", "trickling-headers"],
)
def test_a_hostile_host_gets_its_verdict(body: bytes, trickle: Trickle, verdict: str) -> None:
    with hostile(body, trickle) as host:
        assert no_key(host.url) == verdict
        assert host.requests == 1


def fleet_of(hosts: dict[str, str], **top: object) -> Fleet:
    models = {
        "m": {
            "served_model": "org/m",
            "hosts": [{"name": h, "api_base": a} for h, a in hosts.items()],
        }
    }
    doc = {"version": 1, "fleet": "f1", **top, "models": models}
    return fleet_from_doc(parse_yaml(yaml.safe_dump(doc), "fleet.yaml"), "fleet.yaml")


def test_one_hostile_host_leaves_every_other_verdict_alone() -> None:
    good = Upstream("good", ["org/m"]).start()
    try:
        with hostile(DEEP) as deep, hostile(trickle="headers") as slow:
            fleet = fleet_of({"a": good.url, "deep": deep.url, "slow": slow.url})
            probed = {h.host: h for h in probe_fleet(fleet, FLEET_ITSELF, timeout=0.5)}
    finally:
        good.stop()
    assert probed["a"].serves
    assert probed["deep"].summary() == "not answering (the answer is nested deeper than 64 levels)"
    assert probed["slow"].summary() == "not answering (no complete answer within 0.5s)"


def desired(url: str) -> list[Route]:
    rid = route_id("f1", "m", "a")
    return [Route(rid, "m", {"model": "hosted_vllm/org/m", "api_base": url}, {"id": rid})]


@pytest.mark.parametrize(
    ("body", "trickle", "detail"),
    [
        (b"", "body", "no complete answer from the proxy within 0.5s"),
        (b"", "headers", "no complete answer from the proxy within 0.5s"),
        (b"x" * (2**20 + 1), "", "the proxy's answer is larger than 1024 KiB"),
    ],
    ids=["trickling-body", "trickling-headers", "huge"],
)
def test_verify_has_a_total_deadline_and_a_cap(body: bytes, trickle: Trickle, detail: str) -> None:
    with hostile(body, trickle) as proxy:
        [verified] = verify_groups(proxy.origin, "sk-admin", ["m"], desired("x"), timeout=0.5)
    assert (verified.ok, verified.detail) == (False, detail)


def test_verify_reads_a_deep_error_answer_as_text() -> None:
    with hostile(DEEP, status=500) as proxy:
        [verified] = verify_groups(proxy.origin, "sk-admin", ["m"], desired("x"), timeout=5.0)
    assert not verified.ok
    assert verified.detail.startswith("500 (the proxy did not say which route; this fleet's")
    assert verified.detail.endswith(": " + "[" * 300)  # shown cut, not parsed


def test_a_saved_plan_that_is_not_one_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def error(path: Path) -> str:
        with pytest.raises(Exit) as caught:
            read_saved(path)
        assert caught.value.code == 1
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1
        return lines[0]

    deep = tmp_path / "deep.json"
    deep.write_bytes(b'{"hash": "sha256:x", "fleet": "f1", "changes": ' + DEEP + b"}")
    assert error(deep) == (
        f"error: {deep}: not a saved fleet-sync plan (the file is nested deeper than 64 levels)"
    )
    broken = tmp_path / "broken.json"
    broken.write_text('{"hash": "sha256:x",\n "fleet": }', encoding="utf-8")
    assert error(broken).endswith("(the file is not JSON: expecting value at line 2 column 11)")
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    assert error(listed).endswith("(it has no hash and fleet strings)")
    assert "cannot read the saved plan (No such file or directory)" in error(tmp_path / "none")

    monkeypatch.setattr("sync.run.saved.SAVED_PLAN_MAX_BYTES", 1024)
    assert error(Path("/dev/zero")).endswith("(the file is larger than 1 KiB)")
    (tmp_path / "plan.json").write_text(json.dumps({"hash": "sha256:x", "fleet": "f1"}))
    saved = read_saved(tmp_path / "plan.json")
    assert (saved.hash, saved.fleet) == ("sha256:x", "f1")


def test_a_deep_recorded_path_in_a_live_route_is_no_record() -> None:
    """fleet_sync_paths is a live tag: whoever edits the row writes it."""
    rid = route_id("f1", "m", "a")
    info = {"id": rid, "fleet_sync_paths": ["read " + "[" * 100_000]}
    assert Route(rid, "m", {}, info).written is None
    info = {"id": rid, "fleet_sync_paths": ['read ["litellm_params", "rpm"]']}
    assert Route(rid, "m", {}, info).written == {("litellm_params", "rpm"): "read"}
