"""The rules of one level's litellm_params and model_info (defaults, a model, a host, or a
target's overlay on any of them): keys fleet-sync sets itself, keys that send requests
elsewhere than api_base, and values LiteLLM would never give back as written.

One function for every level, so an overlay obeys exactly what its level obeys.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from sync.fleet.plaintext import quote, where
from sync.fleet.problems import Problem
from sync.fleet.yamlmarks import JsonPath
from sync.litellm.convergence import unconvergeable
from sync.litellm.redirects import REDIRECTS

# Set by fleet-sync from dedicated fields, so a second spelling in litellm_params is an error.
RESERVED_PARAMS = {"model": "served_model", "api_base": "the host's api_base", "api_key": "api_key"}
# Refused at the key (a reserved or redirecting litellm_params key): its value is not judged.
SET_ELSEWHERE = RESERVED_PARAMS.keys() | REDIRECTS.keys()
RESERVED_INFO = re.compile(r"^(id|fleet_sync_.*)$")

ProblemAt = Callable[..., Problem]  # (path, message, at_key=False)


def param_problems(
    section: dict[str, Any], path: JsonPath, problem: ProblemAt
) -> Iterator[Problem]:
    """Every problem of one level's litellm_params and model_info, located under path."""
    params = section.get("litellm_params")
    if isinstance(params, dict):
        for key in params:
            at: JsonPath = (*path, "litellm_params", key)
            if key in RESERVED_PARAMS:
                yield problem(
                    at,
                    f"{where(at)}: set by fleet-sync from {RESERVED_PARAMS[key]}; remove it here",
                    True,
                )
            elif key in REDIRECTS:
                does, fix = REDIRECTS[key]
                yield problem(at, f"{where(at)}: {does}; {fix}", True)
    info = section.get("model_info")
    if isinstance(info, dict):
        for key in info:
            if RESERVED_INFO.match(key):
                at = (*path, "model_info", key)
                yield problem(
                    at, f"{where(at)}: {quote(key)} is set by fleet-sync; remove it here", True
                )
    for name in ("litellm_params", "model_info"):
        values = section.get(name)
        if isinstance(values, dict):
            own = {k: v for k, v in values.items() if k not in SET_ELSEWHERE}
            if name == "model_info":
                own = {k: v for k, v in values.items() if not RESERVED_INFO.match(str(k))}
            for at, why, key in unconvergeable(name, own, (*path, name)):
                yield problem(at, f"{where(at)}: {why}", key)
