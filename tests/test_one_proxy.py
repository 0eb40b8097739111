"""Targets that are one proxy are one proxy (issue 23, Deliver 6), on plain data: the spellings
of one address compare equal (sync/fleet/proxyaddress.py), a name is compared by what it
resolves to (the resolver injected: sync/live/resolve.py is the edge), validate catches what
it can normalise without the network, and a run stops before any request."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from sync.commands.main import cli
from sync.fleet.model import load_fleet
from sync.fleet.problems import FleetError
from sync.fleet.proxyaddress import Shared, canonical_ip, one_proxy, place, place_key
from sync.live.resolve import resolve_names

LOOPBACK = {"localhost": frozenset({"127.0.0.1", "::1"})}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://127.0.0.1:4000", "http://[::ffff:127.0.0.1]:4000"),
        ("http://127.0.0.1:4000", "http://[::FFFF:7f00:1]:4000/"),
        ("http://[::1]:4000", "http://[0:0:0:0:0:0:0:1]:4000"),
        ("http://Proxy.Example:80/", "http://proxy.example."),
        ("https://proxy.example", "https://PROXY.example.:443"),
        ("https://proxy.example", "http://proxy.example:443"),  # the scheme picks the port only
        ("http://proxy.example/litellm/", "http://proxy.example:80/litellm"),
        # found by an outside attack: each reached the same pod and planned against it
        ("http://127.0.0.1:4000", "http://0.0.0.0:4000"),
        ("http://[::1]:4000", "http://[::]:4000"),
        ("http://127.0.0.1:4000", "http://127.0.0.1:4000/."),
        ("http://127.0.0.1:4000", "http://127.0.0.1:4000/v1/.."),
        ("http://proxy.example/litellm", "http://proxy.example//litellm/./x/../"),
    ],
)
def test_spellings_of_one_address_are_one_place(a: str, b: str) -> None:
    assert place_key(a) == place_key(b)
    assert one_proxy({"staging": [a], "prod": [b]}) == [
        Shared("staging", "prod", a, b, place(a).key)
    ]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://127.0.0.1:4000", "http://127.0.0.1:4001"),
        ("http://127.0.0.1:4000", "http://127.0.0.2:4000"),
        ("http://proxy.example", "https://proxy.example"),  # 80 and 443
        ("http://proxy.example/a", "http://proxy.example/b"),  # a path may route to another
        ("http://staging.example", "http://prod.example"),
    ],
)
def test_other_addresses_are_other_proxies(a: str, b: str) -> None:
    assert place_key(a) != place_key(b)
    assert one_proxy({"staging": [a], "prod": [b]}, LOOPBACK) == []


def test_a_name_is_compared_by_what_it_resolves_to() -> None:
    urls = {"staging": ["http://localhost:4000"], "prod": ["http://127.0.0.1:4000/"]}
    assert one_proxy(urls) == []  # unresolved, the spellings differ
    assert one_proxy(urls, LOOPBACK) == [
        Shared("staging", "prod", "http://localhost:4000", "http://127.0.0.1:4000/",
               "127.0.0.1:4000")
    ]  # fmt: skip
    ipv6 = {"staging": ["http://[::1]:4000"], "prod": ["http://LOCALHOST.:4000"]}
    assert [s.address for s in one_proxy(ipv6, LOOPBACK)] == ["[::1]:4000"]
    mapped = {"eu": ["http://a.example:1"], "us": ["http://[::ffff:10.0.0.5]:1"]}
    resolved = {"a.example": frozenset({"::ffff:10.0.0.5"})}  # a resolver's mapped answer
    assert [s.address for s in one_proxy(mapped, resolved)] == ["10.0.0.5:1"]


def test_two_names_at_one_address_stay_two_proxies() -> None:
    """An ingress in front of several proxies routes by the name: not one proxy."""
    both = frozenset({"10.0.0.9"})
    urls = {"staging": ["https://staging.example"], "prod": ["https://prod.example"]}
    assert one_proxy(urls, {"staging.example": both, "prod.example": both}) == []


def test_pairs_are_named_once_and_a_targets_own_pods_are_not_compared() -> None:
    assert one_proxy({"p": ["http://a:1", "http://a:1/"]}) == []
    assert [
        (s.first, s.second)
        for s in one_proxy({
            "staging": ["http://Proxy:80/"],
            "prod": ["http://b:4000", "http://proxy", "http://PROXY."],
            "eu": ["http://b:4000/", "http://c:1"],
        })
    ] == [("staging", "prod"), ("prod", "eu")]  # fmt: skip


def _spellings(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> st.SearchStrategy[str]:
    mapped = ipaddress.IPv6Address(f"::ffff:{ip}")
    return st.sampled_from([
        str(ip), f"[{mapped}]", f"[{mapped.exploded}]", f"[::ffff:{ip}]", f"[::FFFF:{ip}]",
    ])  # fmt: skip


@given(
    st.ip_addresses(v=4).flatmap(lambda ip: st.tuples(_spellings(ip), _spellings(ip))),
    st.sampled_from(["http", "https"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["", "/", "/litellm", "/litellm/"]),
)
def test_any_spelling_of_an_ipv4_address_is_one_place(
    hosts: tuple[str, str], scheme: str, port_a: bool, port_b: bool, path: str
) -> None:
    default = 80 if scheme == "http" else 443
    a = f"{scheme}://{hosts[0]}{f':{default}' if port_a else ''}{path}"
    b = f"{scheme}://{hosts[1]}{f':{default}' if port_b else ''}{path.rstrip('/')}"
    assert place_key(a) == place_key(b)
    assert len(one_proxy({"x": [a], "y": [b]})) == 1


@given(st.ip_addresses(), st.ip_addresses())
def test_two_addresses_are_one_place_only_when_equal(
    a: ipaddress.IPv4Address | ipaddress.IPv6Address,
    b: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    def url(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
        return f"http://[{ip}]:4000" if ip.version == 6 else f"http://{ip}:4000"

    same = canonical_ip(str(a)) == canonical_ip(str(b))
    assert (place_key(url(a)) == place_key(url(b))) == same


def test_the_resolver_edge_reports_a_name_that_does_not_resolve() -> None:
    def resolver(name: str) -> list[str]:
        if name == "gone.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return ["::ffff:127.0.0.1", "fe80::1%eth0"] if name == "up.example" else []

    got = resolve_names(["127.0.0.1", "up.example", "gone.example", "empty.example"], resolver)
    assert got.addresses == {"up.example": frozenset({"127.0.0.1", "fe80::1"})}
    assert got.unresolved == {"gone.example": "Name or service not known",
                              "empty.example": "no address"}  # fmt: skip


# --- validate: the spellings it can normalise without the network --------------------------


def _fleet(tmp_path: Path, staging: Any, prod: Any) -> Path:
    doc = {
        "version": 1,
        "fleet": "f",
        "targets": {
            "staging": {"proxy_url": staging, "api_key": "os.environ/S_KEY"},
            "prod": {"proxy_url": prod, "api_key": "os.environ/P_KEY"},
        },
        "models": {"m": {"served_model": "org/m", "hosts": []}},
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "prod",
    [
        "http://[::ffff:127.0.0.1]:4000",
        "http://127.0.0.1:4000/",
        "https://127.0.0.1:4000",
        ["http://10.0.0.1:1", "http://[::FFFF:7F00:1]:4000"],
    ],
)
def test_validate_refuses_a_spelling_of_anothers_proxy(tmp_path: Path, prod: Any) -> None:
    path = _fleet(tmp_path, "http://127.0.0.1:4000", prod)
    with pytest.raises(FleetError) as raised:
        load_fleet(path, "fleet.yaml")
    assert any("the same proxy as target 'staging'" in p.message for p in raised.value.problems)


def test_validate_keeps_names_it_cannot_resolve_apart(tmp_path: Path) -> None:
    path = _fleet(tmp_path, "http://127.0.0.1:4000", "http://localhost:4000")
    assert [t.name for t in load_fleet(path, "fleet.yaml").targets] == ["staging", "prod"]


# --- a run: resolved before any request ----------------------------------------------------


def _run(tmp_path: Path, env: dict[str, str], *args: str) -> Any:
    path = _fleet(tmp_path, "os.environ/S_URL", "os.environ/P_URL")
    base = {"S_KEY": "sk-staging", "P_KEY": "sk-prod", "NO_COLOR": "1"}
    return CliRunner().invoke(cli, [args[0], "-f", str(path), *args[1:]], env={**base, **env})


def test_a_run_refuses_localhost_and_127_0_0_1_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    def no_request(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a request was sent")

    monkeypatch.setattr(httpx.Client, "send", no_request)
    env = {"S_URL": "http://localhost:9", "P_URL": "http://127.0.0.1:9"}
    for command in (["plan"], ["apply"], ["drift"]):
        done = _run(tmp_path, env, *command)
        assert done.exit_code == 1, done.output
        assert (
            "error: targets staging and prod (http://localhost:9 and http://127.0.0.1:9 both "
            "reach 127.0.0.1:9): one proxy given as two targets; each would prune the other's "
            "routes: nothing was sent to any target"
        ) in done.output


def test_a_name_that_does_not_resolve_is_said_for_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = socket.getaddrinfo

    def resolver(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "gone.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    env = {"S_URL": "http://127.0.0.1:9", "P_URL": "http://gone.example:4000"}
    done = _run(tmp_path, env, "plan", "--timeout", "1")
    assert done.exit_code == 1, done.output
    assert (
        "[prod] error: target prod: proxy_url: the host gone.example does not resolve (Name or "
        "service not known); nothing was sent to it"
    ) in done.output
