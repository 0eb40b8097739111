"""Whether the proxy can load a route's provider, asked before anything is written.

LiteLLM stores a route whose provider it does not know (`hosted_vlm` for `hosted_vllm`) and
then cannot load it: a create is "saved to the database, but ... not live", and an in-place
update leaves every running router on the route's previous values while the database holds
values no pod that starts afterwards can load. So plan and apply compare each desired route's
provider with the names the proxy lists at `GET /public/providers` (1.98.1 to 1.110.2: its
`LlmProviders`) and refuse an unknown one by name, with the closest the proxy knows.

That list is not everything LiteLLM loads: the OpenAI-compatible providers of its
`providers.json` are not in it, nor the custom providers of a proxy's config. Known too: those
below (1.98.1 to 1.110.2), the provider of every route the router lists where LiteLLM's listing
says it loaded the route with that provider (loaded_with), and the names in
FLEET_SYNC_EXTRA_PROVIDERS (comma-separated) for the rest.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Set

from sync.core.render import Route
from sync.fleet.model import Fleet
from sync.fleet.problems import Problem

# LiteLLM's providers.json providers that /public/providers does not list (1.98.1-1.110.2).
OPENAI_COMPATIBLE = frozenset(
    {"abliteration", "aihubmix", "crusoe", "empiriolabs", "gmi", "llamagate", "sarvam"}
    | {"veniceai"}
)
EXTRA_VARIABLE = "FLEET_SYNC_EXTRA_PROVIDERS"


def provider_of(route: Route) -> str | None:
    """The provider LiteLLM loads the route with: litellm_params.custom_llm_provider when set,
    else the prefix of litellm_params.model; None when neither says one."""
    custom = route.litellm_params.get("custom_llm_provider")
    if isinstance(custom, str) and custom:
        return custom
    model = route.litellm_params.get("model")
    if isinstance(model, str) and "/" in model:
        return model.split("/", 1)[0]
    return None


def loaded_with(route: Route) -> str | None:
    """The provider a listed route shows the router loads: the one it names, where the
    listing's model_info.litellm_provider (LiteLLM's own resolution) says the same; else None.
    A route LiteLLM loads under another provider than it names (`use_litellm_proxy: true`, an
    api_base it recognises as a hosted provider's) says nothing about the one it names: an
    outside attack made such a route `hosted_vlm/x` vouch for the typo `hosted_vlm`."""
    name = provider_of(route)
    if route.litellm_params.get("use_litellm_proxy") not in (None, False):
        return None
    return name if route.model_info.get("litellm_provider") == name else None


def known(
    listed_by_proxy: Iterable[str], serving: Iterable[Route], environ: Mapping[str, str]
) -> frozenset[str]:
    """Every provider the proxy is known to load: the names it lists, OPENAI_COMPATIBLE, the
    providers the routes its router lists are loaded with (loaded_with), and
    FLEET_SYNC_EXTRA_PROVIDERS."""
    extra = (p.strip() for p in environ.get(EXTRA_VARIABLE, "").split(","))
    loaded = (loaded_with(r) for r in serving)
    return frozenset(
        {*listed_by_proxy, *OPENAI_COMPATIBLE, *(p for p in loaded if p), *(p for p in extra if p)}
    )


def unknown(fleet: Fleet, desired: Iterable[Route], providers: Set[str]) -> list[Problem]:
    """One problem per desired route whose provider is not in `providers`, naming the route,
    the provider and the closest known one, located where fleet.yaml writes that provider."""
    out = []
    for route in desired:
        name = provider_of(route)
        if name is None or name in providers:
            continue
        shown = "".join(c if c.isprintable() else "?" for c in name)[:60]
        near = difflib.get_close_matches(name, sorted(providers), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        line, col = fleet.provider_at.get((route.model_name, route.host or ""), (1, 1))
        message = f"{route.model_name} host {route.host}: provider {shown!r} is unknown{hint}"
        out.append(Problem(fleet.file, line, col, message))
    return out
