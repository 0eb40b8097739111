"""LiteLLM keys made the way a user makes them, through the proxy's own API with the master key:
a user with a role (`POST /user/new`), then a key for that user (`POST /key/generate`)."""

from __future__ import annotations

import secrets

from .proxyharness import Proxy


def key_for_role(proxy: Proxy, role: str) -> str:
    user_id = f"fleet-sync-{role.replace('_', '-')}-{secrets.token_hex(3)}"
    with proxy.http() as http:
        user = http.post("/user/new", json={"user_id": user_id, "user_role": role})
        assert user.status_code == 200, user.text
        key = http.post("/key/generate", json={"user_id": user_id, "key_alias": user_id})
        assert key.status_code == 200, key.text
        info = http.get("/user/info", params={"user_id": user_id}).json()["user_info"]
        assert info["user_role"] == role
    value: str = key.json()["key"]
    return value


def read_only_key(proxy: Proxy) -> str:
    """What LITELLM_PROXY_READ_API_KEY holds: a proxy_admin_viewer's key."""
    return key_for_role(proxy, "proxy_admin_viewer")
