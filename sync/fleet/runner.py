"""Variables the run holds for other purposes: never a host's key.

fleet-sync resolves a host's `api_key: os.environ/NAME` in its own environment (the probe sends
it to the host's address), and LiteLLM resolves every top-level litellm_params reference in the
proxy's environment and sends it upstream. A CI job's environment also holds GitHub's variables
(the job's token, the runner's own), fleet-sync's own (the proxy's address and keys, its
settings) and the proxy_url/api_key/read_api_key variable of every target of every fleet file
the job runs (not only the file at hand: `held`, the other files' target variables); the proxy's
holds its own secrets (its master key, its database). One rule says which names those are
(held_by_run): validate refuses a target's reference naming GitHub's, and a host's, model's,
defaults' or overlay's naming any of them; the probe resolves only references that pass it.
Pure: no environment is read here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from sync.fleet.plaintext import quote, where
from sync.fleet.problems import Problem
from sync.fleet.sections import SET_ELSEWHERE, ProblemAt
from sync.fleet.yamlmarks import JsonPath

REFERENCE_PREFIX = "os.environ/"  # LiteLLM's own test is str.startswith
# What GitHub Actions sets in every job (the job's token, the runner's own).
GITHUB_VARIABLES = frozenset({"GITHUB_TOKEN", "GH_TOKEN"})
GITHUB_PREFIXES = ("GITHUB_", "ACTIONS_", "RUNNER_")
GITHUB_SAYS = "GITHUB_TOKEN, GH_TOKEN, GITHUB_*, ACTIONS_*, RUNNER_*"
# What fleet-sync reads itself: the proxy's address and keys, its own settings.
OWN_PREFIXES = ("LITELLM_PROXY_", "FLEET_SYNC_")
TARGET_FIELDS = ("proxy_url", "api_key", "read_api_key")
# What LiteLLM's proxy reads for itself (litellm/proxy of 1.98.1, 1.108.7 and 1.110.2: the
# server, db/, auth/ login and master-key checks, credential encryption, alerting): its admin
# key, the key that encrypts stored credentials, its licence, its database, cache, UI and mail
# credentials. LiteLLM resolves a route's reference in that same environment and sends the value
# upstream, so a route naming one hands the proxy's own secret to a host. Provider keys
# (OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY), which routes legitimately reference, are not here.
PROXY_VARIABLES = frozenset(
    {
        "LITELLM_MASTER_KEY",
        "LITELLM_SALT_KEY",
        "LITELLM_LICENSE",
        "DIRECT_URL",
        "UI_USERNAME",
        "UI_PASSWORD",
        "SMTP_PASSWORD",
    }
)
PROXY_PREFIXES = ("DATABASE_", "REDIS_")
PROXY_SAYS = (
    "LITELLM_MASTER_KEY, LITELLM_SALT_KEY, LITELLM_LICENSE, DATABASE_*, DIRECT_URL, REDIS_*, "
    "UI_USERNAME, UI_PASSWORD, SMTP_PASSWORD"
)


def reference_name(value: Any) -> str | None:
    """NAME of a string os.environ/NAME as LiteLLM reads it (a prefix test), else None."""
    if isinstance(value, str) and value.startswith(REFERENCE_PREFIX):
        return value[len(REFERENCE_PREFIX) :]
    return None


def github_variable(name: str) -> bool:
    """Whether GitHub Actions sets this variable itself (a Windows runner ignores case)."""
    upper = name.upper()
    return upper in GITHUB_VARIABLES or upper.startswith(GITHUB_PREFIXES)


def held_by_run(name: str, targets: Collection[str] = ()) -> str | None:
    """Why the run holds the variable `name` for another purpose than a host's key, or None.
    targets: the variables the targets of the job's fleet files name, upper case
    (target_variables)."""
    upper = name.upper()
    if github_variable(name):
        return f"GitHub Actions sets it: {GITHUB_SAYS}"
    if upper.startswith(OWN_PREFIXES):
        return "fleet-sync reads it: LITELLM_PROXY_*, FLEET_SYNC_*"
    if upper in targets:
        return "a target's proxy_url, api_key or read_api_key, in any fleet file of the job"
    if upper in PROXY_VARIABLES or upper.startswith(PROXY_PREFIXES):
        return (
            f"the proxy's own secret: {PROXY_SAYS}; LiteLLM resolves it in the proxy's "
            "environment and sends it to the host"
        )
    return None


def target_variables(specs: Iterable[Any]) -> frozenset[str]:
    """The variables the targets' proxy_url, api_key and read_api_key name (upper case): each
    spec a mapping (fleet.yaml's targets: values) or a Target."""
    names: set[str] = set()
    for spec in specs:
        for field in TARGET_FIELDS:
            value = spec.get(field) if isinstance(spec, Mapping) else getattr(spec, field, None)
            if (name := reference_name(value)) is not None:
                names.add(name.upper())
    return frozenset(names)


def data_target_variables(data: Any) -> frozenset[str]:
    """The target variables of a parsed fleet.yaml, valid or not (its `targets:` mapping)."""
    raw = data.get("targets") if isinstance(data, dict) else None
    specs = raw.values() if isinstance(raw, dict) else ()
    return target_variables(spec for spec in specs if isinstance(spec, Mapping))


def host_reference_problem(value: Any, targets: Collection[str]) -> str | None:
    """Why a host's (model's, defaults', overlay's) reference must not be resolved, or None."""
    name = reference_name(value)
    why = None if name is None else held_by_run(name, targets)
    if why is None:
        return None
    return (
        f"{quote(value)} names a variable the run holds for another purpose ({why}); a host's "
        "reference is resolved and sent to the host's address: keep the host's key in a "
        "variable of its own"
    )


def key_reference_problems(
    data: dict[str, Any], problem: ProblemAt, held: frozenset[str] = frozenset()
) -> Iterator[Problem]:
    """Every key reference of defaults, models, hosts and their overlays that names a variable
    the run holds (held_by_run), located at the value. held: the target variables of the job's
    other fleet files (data_target_variables of each)."""
    targets = data_target_variables(data) | held
    for at, value in key_references(data):
        if why := host_reference_problem(value, targets):
            yield problem(at, f"{where(at)}: {why}")


def key_references(data: dict[str, Any]) -> Iterator[tuple[JsonPath, Any]]:
    """(where, value) of every api_key and top-level litellm_params reference of a level (or
    an overlay on one), the keys fleet-sync sets itself excepted (refused there already)."""
    for at, level in levels(data):
        for section_at, section in with_overlays(at, level):
            if reference_name(section.get("api_key")) is not None:
                yield (*section_at, "api_key"), section["api_key"]
            params = section.get("litellm_params")
            if not isinstance(params, dict):
                continue
            for key, value in params.items():
                if key not in SET_ELSEWHERE and reference_name(value) is not None:
                    yield (*section_at, "litellm_params", key), value


def levels(data: dict[str, Any]) -> Iterator[tuple[JsonPath, dict[str, Any]]]:
    defaults = data.get("defaults")
    if isinstance(defaults, dict):
        yield ("defaults",), defaults
    models = data.get("models")
    if not isinstance(models, dict):
        return
    for name, model in models.items():
        if not isinstance(model, dict):
            continue
        yield ("models", name), model
        hosts = model.get("hosts")
        for index, host in enumerate(hosts if isinstance(hosts, list) else ()):
            if isinstance(host, dict):
                yield ("models", name, "hosts", index), host


def with_overlays(at: JsonPath, level: dict[str, Any]) -> Iterator[tuple[JsonPath, dict[str, Any]]]:
    yield at, level
    overlays = level.get("targets")
    if isinstance(overlays, dict):
        for name, overlay in overlays.items():
            if isinstance(overlay, dict):
                yield (*at, "targets", name), overlay
