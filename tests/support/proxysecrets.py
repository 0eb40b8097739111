"""Secrets of the tests' own, held in the environment of the proxies the tests start.

The redaction tests plant a value the proxy holds and fleet-sync does not: a route's
`organization: os.environ/NAME` makes LiteLLM resolve NAME in the proxy's environment and list
the value, and only redaction by provenance can then hide it. The proxy's own secrets
(LITELLM_MASTER_KEY, DATABASE_URL) were that value once; validate now refuses a reference to
them (LiteLLM would send them to the host: sync/fleet/runner.py), so these stand in: an opaque
key, and a database URL with a password (so "postgresql://" in an output still means a leak).

The values are random per test session and never in the tests' own environment, so nothing
but the proxy knows them. A proxy given by LITELLM_PROXY_URL must hold both names in its
environment; where it does not, LiteLLM lists no value and the test skips, naming the variable.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

ORG_SECRET = "UPSTREAM_ORG_SECRET"  # an opaque key, on a key nothing masks (organization)
DSN_SECRET = "UPSTREAM_DSN"  # a database URL with a password
PROXY_SECRETS = {
    ORG_SECRET: f"sk-org-{secrets.token_hex(16)}",
    DSN_SECRET: f"postgresql://upstream:{secrets.token_hex(12)}@10.255.0.9:5432/upstream",
}
ORG_REF = f"os.environ/{ORG_SECRET}"
DSN_REF = f"os.environ/{DSN_SECRET}"


def resolved(external: bool, name: str, listed: Any) -> str:
    """The value LiteLLM listed for `os.environ/<name>` (a route read back after apply): the
    planted value on a proxy the tests started; on an external one, whatever it holds, or a
    skip naming the variable it lacks (the redaction assertions would prove nothing)."""
    if not external:
        assert listed == PROXY_SECRETS[name], f"the proxy did not resolve {name}: {listed!r}"
        return PROXY_SECRETS[name]
    if not isinstance(listed, str) or not listed or listed.startswith("os.environ/"):
        pytest.skip(f"the external proxy's environment holds no {name} (see tests/conftest.py)")
    return listed
