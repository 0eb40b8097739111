"""The database rows LiteLLM's `POST /model/new` would store, made by LiteLLM's own code.

Runs in the proxy's venv (`/var/tmp/litellm-harness/venv/bin/python`), never in fleet-sync's:
benchmarks/real_proxy.py seeds thousands of routes as these rows in one SQL transaction instead
of thousands of /model/new calls (each reloads the pod's whole router: quadratic). The steps are
`add_new_model`'s in LiteLLM 1.108.7 (litellm/proxy/management_endpoints/
model_management_endpoints.py) for a proxy admin without a team: the request model
(`Deployment`), `without_server_derived_pricing`, `_ptu_priced_deployment`, then
`add_model_to_db` without its database write (it encrypts every string of litellm_params with
the salt key, LITELLM_MASTER_KEY here, as the proxy does).

    python litellm_rows.py rows   < deployments.jsonl > rows.jsonl
    python litellm_rows.py check  < {"deployment": ..., "stored": ...}   (one JSON object)

`check` compares a row the proxy stored through /model/new with the row made here for the same
deployment (decrypted: each encryption draws a new nonce) and prints what differs, if anything.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

# Before LiteLLM loads: its bundled cost map, never a fetch from GitHub (nothing leaves 127.0.0.1).
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_TELEMETRY_DISABLED"] = "true"

from litellm.proxy import proxy_server  # type: ignore[import-not-found]
from litellm.proxy._types import LitellmUserRoles, UserAPIKeyAuth  # type: ignore[import-not-found]
from litellm.proxy.common_utils.encrypt_decrypt_utils import (  # type: ignore[import-not-found]
    decrypt_value_helper,
)
from litellm.proxy.management_endpoints import (  # type: ignore[import-not-found]
    model_management_endpoints as endpoints,
)
from litellm.types.router import Deployment, ModelInfo  # type: ignore[import-not-found]
from litellm.types.utils import without_server_derived_pricing  # type: ignore[import-not-found]

# The salt key the proxy encrypts with: its master key (config: os.environ/LITELLM_MASTER_KEY),
# unless LITELLM_SALT_KEY is set, as LiteLLM's get_salt_key reads it.
proxy_server.master_key = os.environ["LITELLM_MASTER_KEY"]
ADMIN = UserAPIKeyAuth(user_role=LitellmUserRoles.PROXY_ADMIN)


def row(deployment: dict[str, Any]) -> dict[str, Any]:
    """The row /model/new stores for this request body."""
    params = Deployment.model_validate(deployment)
    info = params.model_info.model_dump(exclude_none=True)
    params.model_info = ModelInfo.model_validate(dict(without_server_derived_pricing(info)))
    priced = endpoints._ptu_priced_deployment(params)
    stored = asyncio.run(
        endpoints.add_model_to_db(
            model_params=priced,
            user_api_key_dict=ADMIN,
            prisma_client=None,
            should_create_model_in_db=False,
        )
    )
    return {
        "model_id": stored.model_id,
        "model_name": stored.model_name,
        "litellm_params": _json(stored.litellm_params),
        "model_info": _json(stored.model_info),
        "created_by": stored.created_by,
        "updated_by": stored.updated_by,
    }


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _plain(stored: dict[str, Any]) -> dict[str, Any]:
    params = {
        k: decrypt_value_helper(v, k) if isinstance(v, str) else v
        for k, v in stored["litellm_params"].items()
    }
    keep = ("model_name", "model_info", "created_by", "updated_by")
    return {"litellm_params": params, **{k: stored[k] for k in keep}}


def main() -> None:
    if sys.argv[1:] == ["rows"]:
        for line in sys.stdin:
            if line.strip():
                print(json.dumps(row(json.loads(line))))
        return
    if sys.argv[1:] == ["check"]:
        given = json.load(sys.stdin)
        made, stored = _plain(row(given["deployment"])), _plain(given["stored"])
        differ = {k: (made[k], stored[k]) for k in made if made[k] != stored[k]}
        print(json.dumps(differ))
        return
    raise SystemExit("usage: litellm_rows.py rows|check")


if __name__ == "__main__":
    main()
