"""What fleet-sync tells the proxy about itself, and whether its key may write routes.

Every write carries LiteLLM's ``litellm-changed-by`` header naming fleet-sync, its version and,
in GitHub Actions, the repository and commit. A key whose user role is read-only
(``proxy_admin_viewer``) may list routes, so plan and drift work with it, but LiteLLM answers 403
to every route write: apply asks the key's role before its first write and stops there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sync import __version__

CHANGED_BY_HEADER = "litellm-changed-by"
# LiteLLM roles that may read the admin API but never write a route (proxy/auth/route_checks.py).
READ_ONLY_ROLES = frozenset({"proxy_admin_viewer", "internal_user_viewer"})
READ_ONLY = "this key can read but not write routes"
_UNSAFE = re.compile(r"[^\x21-\x7e]+")  # header values: visible ASCII only, no spaces to split


def changed_by(environ: Mapping[str, str]) -> str:
    """``fleet-sync/1.0.0``, plus ``owner/repo@sha`` when GitHub Actions names the commit."""
    who = f"fleet-sync/{__version__}"
    repository = _UNSAFE.sub("", environ.get("GITHUB_REPOSITORY", ""))
    sha = _UNSAFE.sub("", environ.get("GITHUB_SHA", ""))
    if repository and sha:
        return f"{who} {repository}@{sha}"
    return f"{who} {repository}" if repository else who


def write_refusal(role: str | None, key_name: str = "LITELLM_PROXY_API_KEY") -> str | None:
    """Why a key with this user role cannot apply, or None when it may try."""
    if role not in READ_ONLY_ROLES:
        return None
    if key_name != "LITELLM_PROXY_API_KEY":  # a target's key: its own variable, no read one
        return (
            f"{READ_ONLY} (its user role is {role}); nothing was written. apply needs a key "
            f"whose user role is proxy_admin in {key_name}"
        )
    return (
        f"{READ_ONLY} (its user role is {role}); nothing was written. apply needs a key whose "
        "user role is proxy_admin in LITELLM_PROXY_API_KEY; LITELLM_PROXY_READ_API_KEY is for "
        "plan and drift"
    )
