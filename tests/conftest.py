from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
from hypothesis import settings

from .fake_github import fake_github  # noqa: F401  (fixture)
from .proxyharness import Proxy, from_environment, start, stop

SESSION = secrets.token_hex(2)

# Property tests (tests/test_plan_properties.py): 1,000 examples per property in CI, derandomized
# and without the example database so a CI run is reproducible; a quicker random run locally.
settings.register_profile(
    "ci", max_examples=1000, derandomize=True, database=None, deadline=None, print_blob=True
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session")
def proxy() -> Iterator[Proxy]:
    """One real LiteLLM pod with PostgreSQL (and one config-file route, cfg-static-1)."""
    external = from_environment(1)
    if external:
        yield external
        return
    started = start(f"fleet-sync-tests-{os.getpid()}", 1, {"LITELLM_HARNESS_STATIC_MODEL": "1"})
    try:
        yield started
    finally:
        stop(started)


@pytest.fixture
def fleet_name(request: pytest.FixtureRequest) -> str:
    """A fleet (and model-name prefix) of its own per test, so tests share a proxy safely."""
    raw = request.node.name.lower().replace("test_", "", 1)
    slug = "".join(c if c.isalnum() else "-" for c in raw)[:36].strip("-")
    # A suffix per session: a reused proxy (LITELLM_PROXY_URL) keeps earlier runs' routes.
    return f"{slug}-{SESSION}"
