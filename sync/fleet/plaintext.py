"""Plaintext credentials in fleet.yaml: found by key and by shape in every key and string, and
said without ever quoting them.

fleet.yaml goes into git, its values into LiteLLM and into every plan: a credential anywhere in
it (a model_info string, an address's path, a host name, a header in a list) is refused, located,
with the fix. By key (sync/secrets/credentials.py named_credential), in litellm_params or model_info
at any depth: a key named for a secret (api_key, Authorization, client_secret) holding a plain
string, a key LiteLLM masks (X-RunPod-Key, vllm_serve_key) holding a random-looking one. By
shape: any key or string of the whole document. A reference os.environ/NAME is never a
credential. No message quotes a value that looks like a credential or random (quote).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sync.fleet.problems import Problem
from sync.fleet.yamlmarks import JsonPath
from sync.litellm.redirects import REDIRECTS
from sync.secrets.credentials import (
    NAMED_SECRET,
    credential_kind,
    is_reference,
    looks_like_credential,
    mask_credentials,
    may_quote,
    named_credential,
)

# LiteLLM resolves os.environ/NAME in api_key and in top-level litellm_params values
# (proxy_server._resolve_db_litellm_param, Router.set_model_list), nowhere else.
FIX_REFERENCE = "write a reference os.environ/NAME and set NAME in the proxy's environment"
FIX_MOVE = (
    "LiteLLM reads a reference only in api_key and top-level litellm_params: put the credential "
    "there as os.environ/NAME and set NAME in the proxy's environment"
)
HIDDEN = "(hidden: looks like a credential)"
PROXY_ENVIRONMENT = "in the proxy's environment"
# litellm_params keys fleet-sync sets itself, and those that send requests elsewhere than
# api_base (sync/litellm/redirects.py): refused at the key, the value never quoted.
_RESERVED_PARAMS = {"model", "api_base", "api_key", *REDIRECTS}

ProblemAt = Callable[[JsonPath, str, bool], Problem]


# A reference written nearly right, any case, blanks around: os.env/NAME, os.environ.NAME,
# os.environ/ NAME, env/NAME, environ:NAME, os.environ[NAME], os.getenv("NAME"), $NAME, ${NAME}.
_NEAR_REFERENCE = re.compile(
    r"\s*(?:(?:os\s*[./_:]?\s*)?(?:environ|env|getenv)\s*[./:\\\[(]\s*|\$\{?\s*)"
    r"['\"]?\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*['\"]?\s*[\])}]?\s*",
    re.IGNORECASE,
)


def misspelt_reference(value: Any) -> str | None:
    """The variable a string nearly written as a reference os.environ/NAME names, or None: a
    reference as written, nothing like one, or a NAME no message may quote (a key pasted after
    a `$` is a plaintext key, said as one)."""
    if not isinstance(value, str) or is_reference(value):
        return None
    match = _NEAR_REFERENCE.fullmatch(value)
    return match["name"] if match and may_quote(match["name"]) else None


def misspelt_message(value: Any, place: str) -> str | None:
    """The fix of a misspelt reference (misspelt_reference); `place`: where NAME is set."""
    name = misspelt_reference(value)
    if name is None:
        return None
    return (
        f"{quote(value)} looks like a misspelt reference; write os.environ/{name} and set "
        f"{name} {place}"
    )


def where(path: JsonPath) -> str:
    """A path as messages show it; a part that looks like a credential (a model name, a key) is
    hidden, since the path would otherwise quote it."""
    out = ""
    for part in path:
        name = str(part) if str(part).isprintable() else repr(part)  # one problem, one line
        if isinstance(part, str) and not may_quote(part):
            name = HIDDEN
        out += f"[{part}]" if isinstance(part, int) else (f".{name}" if out else name)
    return out or "top level"


def quote(value: Any) -> str:
    """A value as a message quotes it; one that may be a credential (its shape, or random as
    a key pasted in the wrong place is) is said, never shown. validate's messages (the address
    rules' too, which set-host and import ask) quote values through here."""
    return HIDDEN if isinstance(value, str) and not may_quote(value) else repr(value)


def holds_credential(value: Any) -> bool:
    """Whether a credential-shaped string is anywhere in a value, keys included."""
    if isinstance(value, str):
        return looks_like_credential(value)
    if isinstance(value, dict):
        return any(holds_credential(k) or holds_credential(v) for k, v in value.items())
    return isinstance(value, list) and any(holds_credential(v) for v in value)


def masked(problems: Iterable[Problem]) -> list[Problem]:
    """Problems with anything credential-shaped in their text masked: the last guard, behind
    messages that never quote such a value (a YAML error may quote a key or an alias)."""
    return [Problem(p.file, p.line, p.col, mask_credentials(p.message)) for p in problems]


def address_credential(address: str) -> str | None:
    """Why an api_base holds a credential by its shape (a token in its path or host), or None;
    user:password@ is the address rules' to say (sync/fleet/model.py address_problem)."""
    kind = None if "@" in authority(address) else credential_kind(address)
    return f"looks like a credential ({kind}); {FIX_MOVE}" if kind else None


def authority(address: str) -> str:
    """The host[:port] part of an address, with any user:password@ (what follows :// up to the
    first / ? #)."""
    rest = address.split("://", 1)[-1]
    for stop in "/?#":
        rest = rest.split(stop, 1)[0]
    return rest


def secret_problems(data: Any, problem: ProblemAt) -> Iterator[Problem]:
    """Every plaintext credential in a fleet document, one problem per place, never quoted."""
    yield from _walk(data, (), problem)


def _walk(value: Any, at: JsonPath, problem: ProblemAt) -> Iterator[Problem]:
    if isinstance(value, str):
        kind = None if is_reference(value) else credential_kind(value)
        if kind:
            size = _owner(at)
            fix = _fix(size, at[size:] if size else ())
            yield problem(at, f"{where(at)}: looks like a credential ({kind}); {fix}", False)
        return
    if isinstance(value, dict):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        here: JsonPath = (*at, key)
        size = _owner(here)
        rest = here[size:] if size else ()
        if _checked_elsewhere(here, size, rest):
            continue
        kind = credential_kind(key) if isinstance(key, str) else None
        if kind:
            names: dict[JsonPath, str] = {
                ("models",): "a model name",
                ("targets",): "a target name",
            }
            what = names.get(at, "a key")
            message = f"{where(at)}: {what} looks like a credential ({kind}); {FIX_MOVE}"
            yield problem(here, message, True)
        in_section = len(rest) >= 2 and rest[0] in {"litellm_params", "model_info"}
        named = named_credential(key, item) if in_section and isinstance(key, str) else None
        misspelt = (
            misspelt_message(item, PROXY_ENVIRONMENT) if _fix(size, rest) == FIX_REFERENCE else None
        )
        if named == NAMED_SECRET and misspelt:
            yield problem(here, f"{where(here)}: {misspelt}", False)
            continue
        if named is not None:
            message = (
                f"{where(here)}: a credential written out ({named})"
                if named == NAMED_SECRET
                else f"{where(here)}: looks like a credential ({named})"
            )
            yield problem(here, f"{message}; {_fix(size, rest)}", False)
            continue
        yield from _walk(item, here, problem)


def _owner(path: JsonPath) -> int:
    """How long the part of a path is that names defaults, a model or a host, or a target's
    overlay on one of them, which holds the same keys (0: none of these)."""
    if path[:1] == ("defaults",):
        size = 1
    elif path[:1] != ("models",) or len(path) < 2:
        return 0
    else:
        size = 4 if len(path) >= 4 and path[2] == "hosts" and isinstance(path[3], int) else 2
    overlay = len(path) >= size + 2 and path[size] == "targets" and isinstance(path[size + 1], str)
    return size + 2 if overlay else size


def _checked_elsewhere(path: JsonPath, size: int, rest: JsonPath) -> bool:
    """api_key (the schema takes a reference only), a host's api_base and a target's proxy_url
    (the address rules) and the litellm_params fleet-sync sets itself (refused at the key):
    never quoted there either."""
    if rest == ("api_key",) or is_address(path):
        return True
    if len(path) == 3 and path[0] == "targets" and path[2] in {"api_key", "read_api_key"}:
        return True
    return len(rest) == 2 and rest[0] == "litellm_params" and rest[1] in _RESERVED_PARAMS


def is_address(path: JsonPath) -> bool:
    """A host's api_base (models.M.hosts[i].api_base) or a target's proxy_url (targets.T.proxy_url,
    or one of its list's items): the address rules judge it, naming what is wrong."""
    if len(path) == 5 and path[0] == "models" and path[2] == "hosts" and path[4] == "api_base":
        return isinstance(path[3], int)
    return len(path) in {3, 4} and path[0] == "targets" and path[2] == "proxy_url"


def _fix(size: int, rest: JsonPath) -> str:
    """Where LiteLLM resolves a reference, the reference; elsewhere, where one would go."""
    top_level_param = size > 0 and len(rest) == 2 and rest[0] == "litellm_params"
    return FIX_REFERENCE if top_level_param else FIX_MOVE
