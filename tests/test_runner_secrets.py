"""No runner secret leaves for a host (issue 23, deliver 4).

A host's key reference is resolved in the run's environment, which also holds GitHub's variables
(the job's token), fleet-sync's own (the proxy's address and admin key) and each target's
variables. One rule (sync/fleet/runner.py held_by_run) names those; validate refuses a host's,
model's, defaults' or overlay's reference naming one
(tests/cases/invalid/99-host-key-runner-variables.yaml), and the probe never resolves one:
proven here on fleets that never passed validate, against upstreams on 127.0.0.1 that record
every Authorization header they get."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from sync.core.keytrust import FLEET_ITSELF, KeyTrust, trust_of
from sync.fleet.model import Defaults, Fleet, Host, Model
from sync.fleet.placement import Overlay, Target
from sync.fleet.runner import held_by_run, host_reference_problem, target_variables
from sync.fleet.targets import for_target
from sync.live.probe import probe_fleet, resolve_key

from .support.upstream import Upstream

TOKEN = "ghs_0123456789abcdefghijklmnopqrstuvwxyzAB"
ADMIN = "sk-proxy-admin-0123456789abcdef"
READ = "sk-proxy-read-0123456789abcdef"
STAGING = "sk-staging-target-key-0123456789"
HOST_KEY = "sk-host-own-key-0123456789abcdef"
# What a CI job holds beside the host's own key.
RUNNER = {
    "GITHUB_TOKEN": TOKEN,
    "GH_TOKEN": TOKEN,
    "ACTIONS_RUNTIME_TOKEN": "actions-runtime-0123456789",
    "RUNNER_TEMP": "/tmp/runner",
    "LITELLM_PROXY_API_KEY": ADMIN,
    "LITELLM_PROXY_READ_API_KEY": READ,
    "FLEET_SYNC_GITHUB_AUTHOR": "fleet-bot",
    "STAGING_KEY": STAGING,
    "HOST_KEY": HOST_KEY,
}
SECRETS = (TOKEN, ADMIN, READ, STAGING)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream("host", ["org/m"]).start()
    try:
        yield up
    finally:
        up.stop()


def unvalidated(api_base: str, key_ref: str | None, **fleet: Any) -> Fleet:
    """A Fleet built by hand, as from a base ref or a saved plan: no validate ran on it."""
    host = Host("h", api_base, True, None, key_ref, {}, {})
    model = Model("m", "org/m", None, None, {}, {}, (host,))
    return Fleet("f", "tagged", Defaults("hosted_vllm", None, {}, {}), 30.0, (model,), **fleet)


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "github_token",
        "GH_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "RUNNER_TEMP",
        "LITELLM_PROXY_API_KEY",
        "LITELLM_PROXY_READ_API_KEY",
        "FLEET_SYNC_GITHUB_AUTHOR",
        "LITELLM_MASTER_KEY",  # the proxy's own, where a job (a local run) holds them
        "database_url",
        "REDIS_PASSWORD",
    ],
)
def test_the_probe_never_resolves_a_runner_variable(upstream: Upstream, name: str) -> None:
    fleet = unvalidated(upstream.url, f"os.environ/{name}")
    env = {**RUNNER, name: RUNNER.get(name.upper(), TOKEN)}
    [health] = probe_fleet(fleet, FLEET_ITSELF, environ=env)
    assert upstream.authorizations == [None]  # asked, without any key
    assert health.state == "serves" and not health.key_sent
    assert health.key_note.startswith(f"key not sent: os.environ/{name} names a variable the run")


def test_a_targets_variable_is_never_a_hosts_key(upstream: Upstream) -> None:
    """Whether the fleet names the target (its projection keeps the names) or only the trusted
    ref does (a pull request's run reads each target with the base's variables)."""
    staging = Target("staging", "os.environ/STAGING_URL", "os.environ/STAGING_KEY", None, ())
    whole = unvalidated(upstream.url, "os.environ/staging_key", targets=(staging,))
    whole = replace(whole, target_variables=target_variables(whole.targets))
    projected = for_target(whole, "staging")
    assert projected.targets == () and projected.target_variables == {"STAGING_KEY", "STAGING_URL"}
    for fleet in (whole, projected):
        [health] = probe_fleet(fleet, FLEET_ITSELF, environ=RUNNER)
        assert "a target's proxy_url, api_key or read_api_key" in health.key_note
    bare = unvalidated(upstream.url, "os.environ/STAGING_KEY")  # the head fleet names none
    trust = trust_of(whole, "fleet.yaml at the pull request's base")
    assert trust.held == {"STAGING_KEY", "STAGING_URL"}
    [health] = probe_fleet(bare, KeyTrust(None, held=trust.held), environ=RUNNER)
    assert not health.key_sent
    assert upstream.authorizations == [None, None, None]


def test_a_runner_secret_under_another_name_is_not_sent(upstream: Upstream) -> None:
    """HOST_KEY set to the job's token (or the proxy's key) is that secret by another name."""
    fleet = unvalidated(upstream.url, "os.environ/HOST_KEY")
    for secret, holder in ((TOKEN, "GH_TOKEN"), (ADMIN, "LITELLM_PROXY_API_KEY")):
        [health] = probe_fleet(fleet, FLEET_ITSELF, environ={**RUNNER, "HOST_KEY": secret})
        assert health.key_note == (
            f"key not sent: HOST_KEY holds the value of {holder}, a variable the run holds for "
            "another purpose"
        )
    assert upstream.authorizations == [None, None]


def test_the_hosts_own_key_is_still_sent(upstream: Upstream) -> None:
    """The rule refuses the run's variables only: the host's own goes, beside them all."""
    fleet = unvalidated(upstream.url, "os.environ/HOST_KEY")
    [health] = probe_fleet(fleet, FLEET_ITSELF, environ=RUNNER)
    assert health.key_sent and health.key_note == ""
    assert upstream.authorizations == [f"Bearer {HOST_KEY}"]


def test_an_overlay_key_is_judged_like_any_other(upstream: Upstream) -> None:
    staging = Target("staging", "os.environ/STAGING_URL", None, None, ())
    host = Host(
        "h",
        upstream.url,
        True,
        None,
        "os.environ/HOST_KEY",
        {},
        {},
        targets={"staging": Overlay(api_key="os.environ/LITELLM_PROXY_API_KEY")},
    )
    fleet = replace(
        unvalidated(upstream.url, None, targets=(staging,)),
        models=(Model("m", "org/m", None, None, {}, {}, (host,)),),
    )
    [health] = probe_fleet(for_target(fleet, "staging"), FLEET_ITSELF, environ=RUNNER)
    assert not health.key_sent and "LITELLM_PROXY_" in health.key_note
    assert upstream.authorizations == [None]


def test_resolve_key_alone_keeps_the_rule() -> None:
    assert resolve_key("os.environ/GITHUB_TOKEN", RUNNER)[0] is None
    assert resolve_key("os.environ/STAGING_KEY", RUNNER, frozenset({"STAGING_KEY"}))[0] is None
    assert resolve_key("os.environ/HOST_KEY", {**RUNNER, "HOST_KEY": ADMIN})[0] is None
    assert resolve_key("os.environ/HOST_KEY", RUNNER) == (HOST_KEY, "")


@pytest.mark.parametrize(
    ("name", "held"),
    [
        ("GITHUB_TOKEN", True),
        ("GITHUB_API_URL", True),
        ("gh_token", True),
        ("Actions_ID_Token_Request_Token", True),
        ("RUNNER_TEMP", True),
        ("LITELLM_PROXY_URL", True),
        ("LITELLM_PROXY_URLS", True),
        ("litellm_proxy_api_key", True),
        ("FLEET_SYNC_DEBUG", True),
        ("STAGING_KEY", True),  # a target's, any case
        ("staging_key", True),
        ("MY_GITHUB_TOKEN", False),
        ("VLLM_API_KEY", False),
        ("LITELLM_PROXYKEY", False),
        ("GH_TOKENS", False),
        # The proxy's own secrets: LiteLLM resolves a route's reference in the proxy's
        # environment and sends the value to the host.
        ("LITELLM_MASTER_KEY", True),
        ("litellm_salt_key", True),
        ("LITELLM_LICENSE", True),
        ("DATABASE_URL", True),
        ("database_url", True),
        ("DATABASE_URL_READ_REPLICA", True),
        ("DIRECT_URL", True),
        ("REDIS_PASSWORD", True),
        ("UI_PASSWORD", True),
        ("SMTP_PASSWORD", True),
        # Provider credentials routes legitimately reference, and names merely containing one.
        ("AWS_SECRET_ACCESS_KEY", False),
        ("OPENAI_API_KEY", False),
        ("UPSTREAM_ORG_SECRET", False),
        ("MY_DATABASE_URL", False),
        ("LITELLM_MASTER_KEY_OF_HOST_A", False),
    ],
)
def test_the_one_rule(name: str, held: bool) -> None:
    assert (held_by_run(name, frozenset({"STAGING_KEY"})) is not None) is held
    problem = host_reference_problem(f"os.environ/{name}", frozenset({"STAGING_KEY"}))
    assert (problem is not None) is held
