"""Edge: ask every enabled host of fleet.yaml what it serves (OpenAI-compatible
GET {api_base}/models), within a total deadline, with bounded concurrency and a cap on the
answer. A host's key goes only where KeyTrust allows (sync/gitops/keytrust.py); an address not
trusted with it is asked without it, and its answer is still a verdict. A reference naming a
variable the run holds for another purpose (sync/fleet/runner.py: GitHub's, fleet-sync's own, a
target's), or whose value is one of those variables' values, is never resolved nor sent,
whatever fleet.yaml it comes from (validated or not, a base ref, a saved plan). The targets are
those of every fleet file of the job: this one's, and those FLEET_SYNC_FLEET_FILES names (the
action passes all its fleet files so to every command)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

from sync.core.health import PROBE_TIMEOUT, HostHealth, judge, listed_models
from sync.core.keytrust import KeyTrust
from sync.core.render import render
from sync.fleet.model import Fleet, file_target_variables
from sync.fleet.problems import FleetError
from sync.fleet.runner import held_by_run
from sync.secrets.credentials import is_reference
from sync.secrets.display import printable
from sync.untrusted.bounded_http import AnswerLate, AnswerTooLarge, exchange

PROBE_CONCURRENCY = 8
# The job's fleet files, separated by whitespace (the action sets it for every command): their
# targets' variables are the run's too, so no host of any of them gets one.
JOB_FILES = "FLEET_SYNC_FLEET_FILES"
BODY_CAP = 1 << 20  # a /models answer is a few KiB; a host streaming more is not an API


@dataclass(frozen=True)
class Target:
    """One enabled host as fleet.yaml renders it: where to ask, with which key, for what."""

    route_id: str
    model_name: str
    host: str
    api_base: str
    served_model: str
    key_ref: str | None  # os.environ/NAME, resolved in fleet-sync's own environment


@dataclass(frozen=True)
class NeedsKey:
    """The host answered 401/403 to a request that carried no key."""

    status: int

    @property
    def detail(self) -> str:
        return f"GET /models answered {self.status} without a key"


def targets(fleet: Fleet) -> tuple[Target, ...]:
    served = {m.name: m.served_model for m in fleet.models}
    out = []
    for route in render(fleet):
        key = route.litellm_params.get("api_key")
        out.append(
            Target(
                route_id=route.id,
                model_name=route.model_name,
                host=route.host or "",
                api_base=route.api_base or "",
                served_model=served[route.model_name],
                key_ref=key if isinstance(key, str) else None,
            )
        )
    return tuple(out)


def resolve_key(
    key_ref: str | None, environ: Mapping[str, str], targets: frozenset[str] = frozenset()
) -> tuple[str | None, str]:
    """(the key to send, a note for the plan when none is sent). A variable the run holds for
    another purpose (targets: the targets' variables) is never read, and a key whose value is
    such a variable's is never sent."""
    if key_ref is None or not is_reference(key_ref):
        return None, ""
    if why := runner_refusal(key_ref, targets):
        return None, why
    name = key_ref.split("/", 1)[1]
    value = environ.get(name)
    if not value:
        return None, f"{name} is not set in fleet-sync's environment: probed without a key"
    if same := runner_value(value, environ, targets):
        return None, (
            f"key not sent: {name} holds the value of {same}, a variable the run holds for "
            "another purpose"
        )
    return value, ""


def runner_refusal(key_ref: str, targets: frozenset[str]) -> str:
    """Why a reference names a variable the run holds for another purpose ("" when not)."""
    why = held_by_run(key_ref.split("/", 1)[1], targets)
    if why is None:
        return ""
    return (
        f"key not sent: {key_ref} names a variable the run holds for another purpose ({why}); "
        "validate refuses it"
    )


def runner_value(key: str, environ: Mapping[str, str], targets: frozenset[str]) -> str | None:
    """The first variable (by name) the run holds for another purpose whose value is `key`: a
    host's variable set to the job's token or the proxy's key is that secret by another name."""
    return next((n for n in sorted(environ) if environ[n] == key and held_by_run(n, targets)), None)


def job_variables(environ: Mapping[str, str]) -> tuple[frozenset[str], str]:
    """(the target variables of every fleet file JOB_FILES names, why no key may be sent: a
    file of the job that cannot be read hides which variables the run holds)."""
    names: set[str] = set()
    for name in environ.get(JOB_FILES, "").split():
        try:
            names |= file_target_variables(Path(name))
        except FleetError:
            return frozenset(), (
                f"key not sent: {printable(name)}, a fleet file of this job ({JOB_FILES}), "
                "cannot be read: which variables its targets hold is unknown"
            )
    return frozenset(names), ""


def key_for(
    target: Target,
    trust: KeyTrust,
    environ: Mapping[str, str],
    held: frozenset[str] = frozenset(),
    unknown: str = "",
) -> tuple[str | None, str]:
    """(the key to send to this host's address, a note for the plan when none is sent although
    the host has one). An address not trusted with the key never learns whether it is set; a
    variable the run holds for another purpose (held: the targets' variables of the job's fleet
    files, with those of the trusted ref) is never read; unknown: why no key is sent at all."""
    if target.key_ref is None or not is_reference(target.key_ref):
        return None, ""
    if unknown:
        return None, unknown
    targets = held | trust.held
    if why := runner_refusal(target.key_ref, targets):
        return None, why
    refusal = trust.refusal(target.model_name, target.host, target.api_base, target.key_ref)
    if refusal:
        return None, f"key not sent: {refusal}"
    return resolve_key(target.key_ref, environ, targets)


def probe_fleet(
    fleet: Fleet,
    trust: KeyTrust,
    *,
    timeout: float = PROBE_TIMEOUT,
    concurrency: int = PROBE_CONCURRENCY,
    environ: Mapping[str, str] | None = None,
) -> tuple[HostHealth, ...]:
    """One HostHealth per enabled host; one request per distinct (address, key sent)."""
    env = os.environ if environ is None else environ
    job, unknown = job_variables(env)
    held = fleet.target_variables | job
    wanted = {t: key_for(t, trust, env, held, unknown) for t in targets(fleet)}
    # The reference, not the key, tells asks apart: a secret is never a dictionary key.
    sent = {t: (t.key_ref if key else None) for t, (key, _) in wanted.items()}
    keys = {sent[t]: key for t, (key, _) in wanted.items()}
    asks = sorted({(t.api_base, sent[t]) for t in wanted}, key=lambda a: (a[0], a[1] or ""))
    with (
        # No pool limit: a host that trickles past its deadline keeps its connection a while,
        # and a few such hosts must not leave the healthy ones waiting for one.
        httpx.Client(
            timeout=timeout, follow_redirects=False, limits=httpx.Limits(max_connections=None)
        ) as http,
        ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool,
    ):
        answers = dict(
            zip(asks, pool.map(lambda a: ask(http, a[0], keys[a[1]], timeout), asks), strict=True)
        )
    return tuple(
        verdict(t, answers[(t.api_base, sent[t])], sent[t] is not None, note)
        for t, (_, note) in wanted.items()
    )


def verdict(
    t: Target, answer: tuple[str, ...] | str | NeedsKey, key_sent: bool, note: str
) -> HostHealth:
    common = (t.route_id, t.model_name, t.host, t.api_base, t.served_model)
    if isinstance(answer, NeedsKey):
        return HostHealth(
            *common, "needs_key", detail=answer.detail, key_note=note, key_sent=key_sent
        )
    if isinstance(answer, str):
        return HostHealth(*common, "no_answer", detail=answer, key_note=note, key_sent=key_sent)
    state = judge(answer, t.served_model)
    return HostHealth(*common, state, answer, key_note=note, key_sent=key_sent)


def ask(
    http: httpx.Client, api_base: str, key: str | None, timeout: float
) -> tuple[str, ...] | str | NeedsKey:
    """The models a host lists, NeedsKey when it refuses a request without a key, or why it
    gave no usable answer (never echoing the key)."""
    url = api_base.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        reply = exchange(http, "GET", url, seconds=timeout, cap=BODY_CAP, headers=headers)
    except AnswerLate:
        return f"no complete answer within {timeout:g}s"
    except AnswerTooLarge:
        return f"the answer is larger than {BODY_CAP // 1024} KiB"
    except httpx.TimeoutException:
        return f"no answer within {timeout:g}s"
    except httpx.ConnectError as exc:
        return printable(f"cannot connect: {exc}")
    except httpx.HTTPError as exc:
        return printable(f"{type(exc).__name__}: {exc}")
    except UnicodeEncodeError as exc:  # a key no header can carry: its text is not shown
        return f"the request could not be sent ({type(exc).__name__})"
    except (httpx.InvalidURL, UnicodeError) as exc:
        # No request could be built or sent to this address (httpx refuses the URL, the IDNA
        # codec or the resolver the host name): that host's verdict, like any other failure.
        return printable(f"invalid address: {exc}")
    except ValueError as exc:  # any other request httpx cannot build: not shown either
        return f"the request could not be sent ({type(exc).__name__})"
    if reply.status in (401, 403):
        if key is None:
            return NeedsKey(reply.status)
        return f"GET /models answered {reply.status}: the host refused the key"
    if not 200 <= reply.status < 300:
        return f"GET /models answered {reply.status}"
    return listed_models(reply.body)
