"""A read-only LiteLLM key, made the way a user makes one: a user whose role is
proxy_admin_viewer (`POST /user/new`), then a key for that user (`POST /key/generate`)."""

from __future__ import annotations

import secrets

from .proxyharness import Proxy


def read_only_key(proxy: Proxy) -> str:
    user_id = f"fleet-sync-reader-{secrets.token_hex(3)}"
    with proxy.http() as http:
        user = http.post("/user/new", json={"user_id": user_id, "user_role": "proxy_admin_viewer"})
        assert user.status_code == 200, user.text
        key = http.post("/key/generate", json={"user_id": user_id, "key_alias": user_id})
        assert key.status_code == 200, key.text
        role = http.get("/user/info", params={"user_id": user_id}).json()["user_info"]
        assert role["user_role"] == "proxy_admin_viewer"
    value: str = key.json()["key"]
    return value
