"""Addresses: what validate, set-host and import take (sync/fleet/addresses.py) is what a client can
reach as written, and no address, taken or not, crashes the probe, verify or connect.

Found by the outside attack: `http://xn--/v1`, `http://a\\u00ad.com/v1`, a 64-character label...
passed validate, then httpx or Python's resolver raised (InvalidURL, IDNAError, UnicodeError)
from inside the probe: plan, apply and drift with --probe exited 1 with a traceback. None of
these tests connects anywhere: each address fails before a connection, or is a loopback port
nothing listens on.
"""

from __future__ import annotations

import ipaddress
import string
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sync.core.keytrust import KeyTrust
from sync.core.render import Route
from sync.fleet import addresses
from sync.fleet.addresses import host_problem, normalise_address
from sync.fleet.model import Defaults, Fleet, Host, Model, address_problem
from sync.live.probe import ask, probe_fleet
from sync.live.verify import verify_groups

from .support.proxyharness import fleet_sync, write_fleet

# Each refused, with what the message must say.
UNREACHABLE = {
    "http://xn--/v1": "internationalised host names (xn--) are refused",
    "http://xn--a.com/v1": "internationalised host names (xn--) are refused",
    "http://xn--nxasmq6b.com/v1": "internationalised host names (xn--) are refused",
    "http://a\u00ad.com/v1": "U+00AD SOFT HYPHEN at position 9",
    "http://ex\u200dample.com/v1": "U+200D ZERO WIDTH JOINER at position 10",
    "http://\u2488x/v1": "internationalised host names are refused; write the host in ASCII",
    "http://\u00e9x.example/v1": "write the host in ASCII",
    "http://[v1.abc]/v1": "the host in [] is not an IPv6 address",
    f"http://{'a' * 64}.example/v1": "a label of 64 characters; at most 63 each",
    f"http://{'a.' * 126}ab/v1": "host name is 254 characters; at most 253",
    "http://a..example/v1": "an empty label",
    "http://.example/v1": "an empty label",
    "http://-a.example/v1": "none starting or ending with '-'",
    "http://a-.example/v1": "none starting or ending with '-'",
    "http://a%2e.example/v1": "a name of letters, digits, '-' and '_'",
    "http://256.1.1.1/v1": "not a dotted IPv4 address",
    "http://1.2.3/v1": "not a dotted IPv4 address",
    "http://0x7f.1/v1": "not a dotted IPv4 address",
    "http://010.0.0.1/v1": "not a dotted IPv4 address",
    "http://a.0x/v1": "not a dotted IPv4 address",
    "http://127.0.0.1./v1": "not a dotted IPv4 address",
    "http://[fe80::1%25eth0]:8000/v1": "an IPv6 zone",
    "http://[::1]x/v1": "the host in [] is not an IPv6 address",
    "http://10.0.0.1:8000/v1\x1b]0;title\x07": "U+001B at position 24",
    "http://10.0.0.1:8000/\u202ev1": "U+202E RIGHT-TO-LEFT OVERRIDE",
    "http://10.0.0.1:8000/v1\ud800": "U+D800 at position 24",
    "http://10.0.0.1:8000/\x00": "U+0000",
    f"http://10.0.0.1:8000/{'v' * 2040}": "the address is 2061 characters; at most 2048",
}
REACHABLE = [
    "http://10.0.0.1:8000/v1",
    "https://abc123-8000.proxy.runpod.net/v1",
    "http://vllm_server-2:8000/v1",  # a Compose service name
    "http://localhost:8000",
    "http://example.com./v1",  # fully qualified
    "http://[::1]:8000/v1",
    "http://[2001:db8::1]/v1",
    "http://EXAMPLE.com/v1",
    "http://a.b--c.example/v1",
    f"http://{'a' * 63}.example/v1",
    f"http://{'a.' * 125}abc/v1",  # 253 characters
    "http://10.0.0.1:8000/v1/é",  # a path may hold any printable character
]


@pytest.mark.parametrize("address", sorted(UNREACHABLE), ids=lambda a: ascii(a)[:60])
def test_an_address_no_client_can_reach_as_written_is_refused(address: str) -> None:
    problem = address_problem(address)
    assert problem is not None and UNREACHABLE[address] in problem, problem
    assert problem.isprintable(), problem  # named, never printed


@pytest.mark.parametrize("address", REACHABLE)
def test_an_address_a_client_reaches_is_taken(address: str) -> None:
    assert address_problem(address) is None
    _client_can_build(address)


def _client_can_build(address: str) -> None:
    """What the probe, verify and LiteLLM do before connecting: httpx builds the request, and
    Python's resolver encodes the host (its IDNA codec refuses an empty or overlong label)."""
    url = httpx.URL(address)
    assert url.port is None or 1 <= url.port <= 65535
    httpx.Request("GET", address.rstrip("/") + "/models")  # what Client.build_request makes
    host = url.host
    if not host.startswith("[") and ":" not in host:
        host.encode("idna")


_NAME_CHARS = string.ascii_letters + string.digits + "-_.%0x:[]" + "\u00ad\u200d\u2488é\x1b "


@given(
    host=st.text(alphabet=_NAME_CHARS, min_size=1, max_size=80),
    label=st.integers(min_value=0, max_value=70),
)
def test_whatever_validate_takes_a_client_can_build(host: str, label: int) -> None:
    """Generated hosts (odd characters, dots, numbers, brackets, long labels): every one
    address_problem takes, httpx and the resolver take too."""
    for candidate in (f"http://{host}/v1", f"http://{'a' * label}.{host}:8000/v1"):
        if address_problem(candidate) is None:
            _client_can_build(candidate)


def _fleet(addresses: list[str]) -> Fleet:
    """A Fleet built directly, as no fleet.yaml could give it: the probe must hold anyway."""
    hosts = tuple(
        Host(f"h{i}", address, True, None, "os.environ/UPSTREAM_KEY", {}, {})
        for i, address in enumerate(addresses)
    )
    model = Model("m", "org/m", None, None, {}, {}, hosts)
    return Fleet("f1", "tagged", Defaults("hosted_vllm", None, {}, {}), 30.0, (model,))


@pytest.mark.parametrize("address", sorted(UNREACHABLE), ids=lambda a: ascii(a)[:60])
def test_the_probe_turns_any_address_into_a_verdict(address: str) -> None:
    with httpx.Client(timeout=2, follow_redirects=False) as http:
        answer = ask(http, address, None, 2)
    assert isinstance(answer, str), answer
    assert answer.isprintable(), answer


def test_the_probe_gives_each_unbuildable_address_its_own_verdict() -> None:
    """The addresses the attack sent, each httpx or the resolver refuses: one verdict per host,
    "not answering (invalid address: ...)", the run goes on."""
    addresses = [
        "http://xn--/v1",
        "http://xn--a.com/v1",
        "http://a\u00ad.com/v1",
        "http://ex\u200dample.com/v1",
        "http://\u2488x/v1",
        "http://[v1.abc]/v1",
        f"http://{'a' * 64}.example/v1",
        "http://a..example/v1",
        "http://256.1.1.1/v1",
        "http://10.0.0.1:8000/v1\x1b]0;title\x07",
    ]
    fleet = _fleet(addresses)
    trust = KeyTrust(None)
    verdicts = probe_fleet(fleet, trust, timeout=2, environ={"UPSTREAM_KEY": "sk-upstream"})
    assert len(verdicts) == len(addresses)
    for verdict in verdicts:
        assert verdict.state == "no_answer", verdict
        assert verdict.detail.startswith("invalid address: "), verdict.detail
        assert verdict.detail.isprintable()


def test_a_key_no_header_can_carry_is_a_verdict_that_does_not_show_it() -> None:
    """Not an address problem, and the key's text is never in the verdict."""
    fleet = _fleet(["http://127.0.0.1:9/v1"])
    key = "sk-\u00e9-not-latin-1-\u2603"
    (verdict,) = probe_fleet(fleet, KeyTrust(None), timeout=2, environ={"UPSTREAM_KEY": key})
    assert verdict.state == "no_answer"
    assert verdict.detail == "the request could not be sent (UnicodeEncodeError)", verdict.detail


def test_verify_through_an_unbuildable_proxy_url_is_a_verdict() -> None:
    route = Route("r1", "m", {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.1/v1"}, {})
    for url in ("http://xn--", f"http://{'a' * 64}.example", "http://a..b"):
        (verified,) = verify_groups(url, "sk-admin", ["m"], [route], timeout=2)
        assert not verified.ok and "invalid address" in verified.detail, verified


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://xn--/", "is not a valid address (Malformed A-label"),
        ("http://xn--a.com", "is not a valid address"),
        (f"http://{'a' * 64}.example", "a label of 64 characters"),
        ("http://a\u00ad.example", "is not a valid address"),
        ("http://ex\u200dample.com", "is not a valid address"),
        ("http://[v1.abc]", "is not a valid address (Invalid IPv6 address"),
        ("http://a..example:4000", "an empty label"),
        ("http://10.0.0.1:4000/\x1b]0;x\x07", "is not a valid address"),
    ],
)
def test_a_proxy_url_no_client_can_reach_is_one_line(
    url: str, message: str, tmp_path: Path
) -> None:
    """--proxy-url / LITELLM_PROXY_URL: `http://xn--/` gave a traceback
    (sync/commands/common.py)."""
    fleet = write_fleet(tmp_path / "fleet.yaml", "bad-url", {"m": {"hosts": {"a": REACHABLE[0]}}})
    env = {"PATH": "/usr/bin:/bin", "LITELLM_PROXY_API_KEY": "sk-bad-url-test", "NO_COLOR": "1"}
    for run in (
        fleet_sync(["plan", "-f", str(fleet), "--proxy-url", url], env),
        fleet_sync(["plan", "-f", str(fleet)], {**env, "LITELLM_PROXY_URL": url}),
    ):
        assert run.code == 1, run.out + run.err
        (line,) = run.err.strip().splitlines()
        assert message in line and line.isprintable(), line


_PIECES = st.sampled_from(
    ["http", "https", "HTTP", "://", ":", "/", ".", "-", "_", "~", "@", "?", "#", "[", "]", "%",
     " ", "\t", "é", "\u00ad", "0", "01", "9", "10", "25", "255", "256", "300", "65535", "65536",
     "99999", "a", "host", "xn--", "v1", "0x7f", "::1", "a" * 64, "1.2.3.4"]
)  # fmt: skip


@given(
    scheme=st.sampled_from(["http://", "https://", "HTTP://", "http:/", ""]),
    pieces=st.lists(_PIECES, max_size=12),
)
def test_the_plain_address_shortcut_says_what_the_rules_say(scheme: str, pieces: list[str]) -> None:
    """address_problem takes a plain http(s)://host[:port][/path] without running each rule
    (a tenth of a large fleet's validation): for every address, taken or refused, its answer is
    the rules' own, word for word."""
    address = scheme + "".join(pieces)
    assert address_problem(address) == addresses._address_rules(address)


@given(
    octets=st.lists(
        st.one_of(st.integers(0, 300), st.sampled_from(["00", "01", "007", "a", ""])),
        min_size=3,
        max_size=5,
    ),
    port=st.sampled_from(["", ":0", ":1", ":8000", ":65535", ":65536", ":99999", ":"]),
    path=st.sampled_from(["", "/", "/v1", "/v1/", "//x", "/a?b", "/%20", "/a#b"]),
)
def test_dotted_quads_are_what_ipaddress_takes(octets: list[object], port: str, path: str) -> None:
    """host_problem takes a dotted quad without parsing it: exactly the hosts IPv4Address takes
    (four numbers 0-255, no leading zeros), and the addresses holding one say what the rules
    say."""
    host = ".".join(str(o) for o in octets)
    address = f"http://{host}{port}{path}"
    assert address_problem(address) == addresses._address_rules(address)
    try:
        ipaddress.IPv4Address(host)
        taken = True
    except ValueError:
        taken = False
    assert (addresses._DOTTED_QUAD.fullmatch(host) is not None) == taken
    if taken:
        assert host_problem(host) is None


_HOSTS = ["Host", "a", "B.c", "10.0.0.1", "a_b-c", "x.", "-", ""]
_PORTS = ["", ":", ":0", ":00", ":1", ":08000", ":8000", ":65535", ":65536", ":99999"]
_PATHS = ["", "/", "//", "/v1", "/V1/", "/a~b/", "/a:b", "/.."]


@given(
    scheme=st.sampled_from(["http://", "https://"]),
    host=st.sampled_from(_HOSTS),
    port=st.sampled_from(_PORTS),
    path=st.sampled_from(_PATHS),
)
def test_the_plain_address_normal_form_is_urlsplits(
    scheme: str, host: str, port: str, path: str
) -> None:
    """normalise_address reads a plain address without urlsplit: the same normal form (or the
    same error) as urlsplit's reading, for every address."""
    address = scheme + host + port + path
    try:
        expected: object = addresses._normal_form(address)
    except ValueError as exc:
        expected = str(exc)
    try:
        got: object = normalise_address.__wrapped__(address)
    except ValueError as exc:
        got = str(exc)
    assert got == expected
