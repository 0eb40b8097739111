from __future__ import annotations

import datetime
import os
import re
import secrets
import time
from collections.abc import Iterator

import pytest
from hypothesis import settings

from sync.litellm.releases import TESTED

from .support.fake_github import fake_github  # noqa: F401  (fixture)
from .support.matrix_report import VersionResult, table
from .support.proxyharness import (
    DEFAULT_VERSION,
    EXTERNAL,
    Proxy,
    from_environment,
    harness_version,
    setup,
    start,
    stop,
)
from .support.proxysecrets import PROXY_SECRETS

SESSION = secrets.token_hex(2)
VERSIONS_VARIABLE = "FLEET_SYNC_LITELLM_VERSIONS"
MATRIX = "litellm_matrix"
LIVE = "live"
# Versions whose proxies were stopped in this run: one starting again means the tests of a
# version ran in two groups, each starting ~600 MB per pod again.
_FINISHED: set[str] = set()
_TIMES: dict[str, dict[str, float]] = {}  # version -> setup / start / tests seconds


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--litellm-versions",
        metavar="V[,V...]",
        help=f"LiteLLM versions the {MATRIX} tests run against (default: ${VERSIONS_VARIABLE}, "
        f"else every tested version: {','.join(TESTED)}). Tests outside the matrix run against "
        f"{DEFAULT_VERSION} when it is selected, else the first version given.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MATRIX}: runs against every selected LiteLLM version (--litellm-versions)"
    )
    config.addinivalue_line(
        "markers",
        f"{LIVE}: needs a real LiteLLM (started by the harness, or LITELLM_PROXY_URL(S)); "
        f"-m 'not {LIVE}' runs the rest",
    )


def selected_versions(config: pytest.Config) -> list[str]:
    if from_environment(1):
        return [EXTERNAL]
    raw = config.getoption("--litellm-versions") or os.environ.get(VERSIONS_VARIABLE) or ""
    versions = [v.strip() for v in raw.split(",") if v.strip()] or list(TESTED)
    return list(dict.fromkeys(versions))


def pytest_report_header(config: pytest.Config) -> str:
    versions = selected_versions(config)
    if versions == [EXTERNAL]:
        return "LiteLLM: the proxy in LITELLM_PROXY_URL(S) (the version matrix is not started)"
    return f"LiteLLM versions ({MATRIX} tests): {', '.join(versions)}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "litellm_version" not in metafunc.fixturenames:
        return
    versions = selected_versions(metafunc.config)
    if metafunc.definition.get_closest_marker(MATRIX) is None:
        versions = [DEFAULT_VERSION if DEFAULT_VERSION in versions else versions[0]]
    # Session scope: pytest groups the tests of each version, so its proxies start once.
    metafunc.parametrize(
        "litellm_version", versions, indirect=True, scope="session", ids=lambda v: f"litellm-{v}"
    )


# Property tests (tests/test_plan_properties.py): 1,000 examples per property in CI, derandomized
# and without the example database so a CI run is reproducible; a quicker random run locally.
settings.register_profile(
    "ci", max_examples=1000, derandomize=True, database=None, deadline=None, print_blob=True
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session")
def litellm_version(request: pytest.FixtureRequest) -> Iterator[str]:
    """The LiteLLM version under test ("external" for a proxy given by the environment);
    installed by the harness here (minutes the first time on a machine)."""
    version: str = request.param
    if version in _FINISHED:
        raise RuntimeError(f"LiteLLM {version}'s tests ran in two groups; its proxies restart")
    started = time.monotonic()
    if version != EXTERNAL:
        setup(version)
    times = _TIMES.setdefault(version, {})
    times["setup"] = time.monotonic() - started
    try:
        yield version
    finally:
        _FINISHED.add(version)
        times["total"] = time.monotonic() - started


@pytest.fixture(scope="session")
def proxy(litellm_version: str) -> Iterator[Proxy]:
    """One real LiteLLM pod with PostgreSQL (and one config-file route, cfg-static-1), holding
    the tests' own secrets (support/proxysecrets.py) in its environment. A proxy given by
    LITELLM_PROXY_URL(S) must hold UPSTREAM_ORG_SECRET and UPSTREAM_DSN (any values, the DSN a
    postgresql:// URL with a password) in its environment, or the redaction tests skip."""
    external = from_environment(1)
    if external:
        yield external
        return
    began = time.monotonic()
    started = start(
        f"fleet-sync-tests-{os.getpid()}",
        1,
        {"LITELLM_HARNESS_STATIC_MODEL": "1", **PROXY_SECRETS},
        litellm_version,
    )
    _TIMES.setdefault(litellm_version, {})["start"] = time.monotonic() - began
    try:
        yield started
    finally:
        stop(started)


SECOND_PROXY = "FLEET_SYNC_SECOND_PROXY"  # a second real proxy given by env


@pytest.fixture(scope="session")
def prod_proxy(litellm_version: str) -> Iterator[Proxy]:
    """A second LiteLLM (one pod, its own database) beside `proxy`: prod to its staging
    (issue 17); one per session for every test of targets. It holds the tests' own secrets
    like `proxy`; one given by FLEET_SYNC_SECOND_PROXY_URL(S) must hold them too."""
    urls = os.environ.get(f"{SECOND_PROXY}_URLS") or os.environ.get(f"{SECOND_PROXY}_URL") or ""
    key = os.environ.get(f"{SECOND_PROXY}_API_KEY")
    if urls and key:
        yield Proxy(tuple(u.strip().rstrip("/") for u in urls.split(",") if u.strip()), key, None)
        return
    started = start(
        f"fleet-sync-prod-{os.getpid()}", 1, PROXY_SECRETS, harness_version(litellm_version)
    )
    try:
        yield started
    finally:
        stop(started)


@pytest.fixture
def fleet_name(request: pytest.FixtureRequest) -> str:
    """A fleet (and model-name prefix) of its own per test, so tests share a proxy safely."""
    raw = request.node.name.lower().replace("test_", "", 1)
    raw = re.sub(r"litellm-[^\]-]+-?", "", raw)  # each version has its own proxies
    slug = "".join(c if c.isalnum() else "-" for c in raw)[:36].strip("-")
    # A suffix per session: a reused proxy (LITELLM_PROXY_URL) keeps earlier runs' routes.
    return f"{slug}-{SESSION}"


_OUTCOMES: dict[str, str] = {}  # nodeid -> passed / failed / skipped, for the summary
_MATRIX_IDS: set[str] = set()
_MATRIX_SECONDS: dict[str, float] = {}  # version -> its matrix tests' setup + call + teardown


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every test that starts or reads a real LiteLLM does so through litellm_version: marked
    # here, none can lack the mark, and `-m "not live"` leaves out exactly those.
    for item in items:
        if "litellm_version" in getattr(item, "fixturenames", ()):
            item.add_marker(LIVE)
    _MATRIX_IDS.update(i.nodeid for i in items if i.get_closest_marker(MATRIX) is not None)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.nodeid not in _MATRIX_IDS:
        return
    match = re.search(r"litellm-([^\]-]+)", report.nodeid)
    if match:
        version = match.group(1)
        _MATRIX_SECONDS[version] = _MATRIX_SECONDS.get(version, 0.0) + report.duration
    if report.failed:
        _OUTCOMES[report.nodeid] = "failed"
    elif report.skipped:
        _OUTCOMES.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        _OUTCOMES.setdefault(report.nodeid, "passed")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Per LiteLLM version set up in this run: its matrix tests' outcomes and time (proxy starts
    included), as the docs' supported-versions table."""
    counts: dict[str, dict[str, int]] = {v: {} for v in _TIMES if v != EXTERNAL}
    for nodeid, outcome in _OUTCOMES.items():
        match = re.search(r"litellm-([^\]-]+)", nodeid)
        if match and match.group(1) in counts:
            by_outcome = counts[match.group(1)]
            by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
    if not _TIMES:
        return
    results = [
        VersionResult(
            version,
            by_outcome.get("passed", 0),
            by_outcome.get("failed", 0),
            by_outcome.get("skipped", 0),
            _MATRIX_SECONDS.get(version, 0.0),
        )
        for version, by_outcome in counts.items()
        if by_outcome
    ]
    terminalreporter.section("LiteLLM versions")
    for version, times in _TIMES.items():
        terminalreporter.write_line(
            f"LiteLLM {version}: setup {times.get('setup', 0):.0f}s, "
            f"first proxy start {times.get('start', 0):.0f}s, all {times.get('total', 0):.0f}s"
        )
    if results:
        terminalreporter.write(table(results, datetime.date.today().isoformat()))
