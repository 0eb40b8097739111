"""Whether a proxy URL can be sent to as given (httpx's own parse), before any request."""

from __future__ import annotations

import httpx

from sync.fleet.addresses import address_problem
from sync.fleet.proxyaddress import openai_path_problem
from sync.secrets.credentials import has_userinfo, strip_userinfo


def proxy_url_problem(url: str, origin: str = "--proxy-url") -> str | None:
    """What is wrong with a proxy URL, naming where it was read (origin: --proxy-url, the
    variable, the target's proxy_url); None when httpx can send to it."""
    what = f"proxy URL (from {origin})"
    shown = strip_userinfo(url)
    if not url.startswith(("http://", "https://")):
        return f"{what} {shown!r} must start with http:// or https://"
    if has_userinfo(url):
        # httpx would turn user:pass@ into Basic auth in place of the admin key.
        return (
            f"{what} {shown!r} carries credentials (user:pass@); "
            "remove them and give the admin key with LITELLM_PROXY_API_KEY or --api-key"
        )
    try:
        parsed = httpx.URL(url)
        parsed.port  # noqa: B018  (httpx checks the port only when it is read)
        host = parsed.host  # decodes an xn-- name: IDNAError, a ValueError
    except (httpx.InvalidURL, ValueError) as exc:
        return f"{what} {shown!r} is not a valid address ({exc})"
    if not host:
        return f"{what} {shown!r} has no host"
    if problem := address_problem(url):
        # A host httpx takes but the resolver does not (a 64-character label), or one
        # that is not printed as itself: the same rules as a host's api_base.
        return f"{what}: {problem}"
    if problem := openai_path_problem(url):
        return f"{what}: {problem}"
    return None
