"""Routes LiteLLM scopes to a team (team / BYOK models), as `/v2/model/info` lists them.

Read in LiteLLM's source, the same in 1.98.1, 1.108.7 and 1.110.2:

- A team model is created by `add_team_model_to_db` (proxy/management_endpoints/
  model_management_endpoints.py) when `model_info.team_id` is set: it stores
  `model_info.team_public_model_name` = the name the caller gave, `model_name` =
  `model_name_{team_id}_{uuid4}`, and adds the public name to the team's models. A PATCH that
  sets `model_info.team_id` (`_update_team_model_in_db`) moves a route into a team the same way.
  Both are Enterprise-only: without a licence LiteLLM answers 403 CommonProxyErrors.
  not_premium_user ("You must be a LiteLLM Enterprise user to use this feature ..."), and it
  answers the same to an update or delete of any route whose stored `model_info.team_id` is set
  (ModelManagementAuthChecks.can_user_make_model_call -> can_user_make_team_model_call).
- `ModelInfo` (types/router.py) declares exactly two team fields: `team_id` and
  `team_public_model_name`; no other model_info key scopes a route (grep of `model_info` reads
  of `team*` in the three releases finds only these two).
- The listing (`_translate_model_name_for_response` in proxy_server.py) shows such a row under
  its public name: `model_name` is replaced by `team_public_model_name` when both team fields
  are set and the stored name starts with `model_name_{team_id}_`; otherwise the stored name
  is listed as is (a row written before `team_public_model_name` existed lists its
  `model_name_{team}_{uuid}` name). `model_info` is listed whole, team fields included.
- Routing (router.py `should_include_deployment`; 1.110.2 router_rust registry
  `_core_should_include_deployment`): a deployment with a `team_id` serves the public name only
  to keys of that team (matched on `team_public_model_name`); a request for the public name from
  a key outside the team never reaches it (its stored `model_name` is the internal one, and a
  deployment whose `team_id` differs from the caller's team is excluded). So a team route never
  serves the public model group.

A route carrying any of these markers is the team's: fleet-sync never claims, adopts, updates,
prunes or imports it. Pure: no import of fleet-sync.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

TEAM_ID = "team_id"
TEAM_PUBLIC_NAME = "team_public_model_name"
# The stored name add_team_model_to_db gives a team route: model_name_{team_id}_{uuid4}.
STORED_NAME = re.compile(
    r"^model_name_(?P<team>.+)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
# What LiteLLM answers (403) to a write only an Enterprise licence allows: a team model's create,
# update or delete among them (CommonProxyErrors.not_premium_user, 1.98.1 to 1.110.2).
ENTERPRISE_ONLY = "you must be a litellm enterprise user"
_SHOWN = 64


def _shown(value: Any) -> str:
    """A team id as a plan may quote it: printable, bounded (it is the proxy's string)."""
    text = value if isinstance(value, str) else repr(value)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def team_scope(model_name: str, model_info: Mapping[str, Any]) -> str | None:
    """Which team LiteLLM scopes this listed route to, as a plan says it ("team T"), or None for
    a route LiteLLM serves to every key allowed its model name."""
    team = model_info.get(TEAM_ID)
    if team is not None:
        return f"team {_shown(team)}"
    public = model_info.get(TEAM_PUBLIC_NAME)
    if public is not None:
        return f"a team (model_info.{TEAM_PUBLIC_NAME} {_shown(public)}, no {TEAM_ID} listed)"
    stored = STORED_NAME.match(model_name)
    if stored is not None:
        return f"team {_shown(stored['team'])} (stored name model_name_<team>_<uuid>)"
    return None


def team_reason(scope: str) -> str:
    """Why a team route is left alone, as plans and import say it."""
    return f"team model of {scope}: LiteLLM scopes it to that team; fleet-sync never touches it"


def enterprise_only(message: str) -> bool:
    """Whether LiteLLM's error text is its Enterprise-licence refusal (not a key's role)."""
    return ENTERPRISE_ONLY in message.lower()
