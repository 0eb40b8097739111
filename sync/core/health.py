"""Whether a host serves its model, as plain values: the probe (an edge) produces them, the plan
core and the reports only read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sync.untrusted.json_parser import parse_json

# needs_key: the host answered 401/403 to a probe sent without a key (its address is not
# trusted with the key yet, or fleet-sync's environment does not hold it).
HealthState = Literal["serves", "other_model", "no_answer", "needs_key"]
MODELS_SHOWN = 10
PROBE_TIMEOUT = 5.0  # seconds each host has to answer; here, so the CLI's options need no httpx
ID_SHOWN = 200  # an upstream may list hundreds of models; the plan names a few


@dataclass(frozen=True)
class HostHealth:
    """One enabled host of fleet.yaml, probed at its api_base with GET {api_base}/models."""

    route_id: str
    model_name: str
    host: str
    api_base: str
    served_model: str
    state: HealthState
    models: tuple[str, ...] = ()  # what the host listed (other_model, serves)
    detail: str = ""  # why it is not answering, or what it answered without a key
    key_note: str = ""  # why its key was not sent: an address not yet reviewed, a variable unset
    key_sent: bool = False  # whether the probe carried the host's key

    @property
    def serves(self) -> bool:
        return self.state == "serves"

    def summary(self) -> str:
        """One line, e.g. 'serves Qwen/Qwen3.8-27B' or 'not answering (connection refused)'."""
        if self.state == "serves":
            text = f"serves {self.served_model}"
            text += " (answered without a key)" if self.key_note else ""
        elif self.state == "other_model":
            listed = ", ".join(_short(m) for m in self.models[:MODELS_SHOWN]) or "no model"
            more = len(self.models) - MODELS_SHOWN
            listed += f" and {more} more" if more > 0 else ""
            text = f"serves something else: {listed} (not {self.served_model})"
        elif self.state == "needs_key":
            text = f"needs a key ({self.detail})"
        else:
            text = f"not answering ({self.detail})"
        return f"{text}; {self.key_note}" if self.key_note else text

    def as_dict(self) -> dict[str, Any]:
        return {
            "route_id": self.route_id,
            "model_name": self.model_name,
            "host": self.host,
            "api_base": self.api_base,
            "served_model": self.served_model,
            "state": self.state,
            "models": list(self.models),
            "detail": self.detail,
            "key_note": self.key_note,
            "key_sent": self.key_sent,
        }


@dataclass(frozen=True)
class Verified:
    """One model group asked through the proxy after apply (apply --verify)."""

    model_name: str
    ok: bool
    detail: str
    route_id: str | None = None  # the deployment that answered (or failed), when LiteLLM said
    host: str | None = None  # its host in fleet.yaml, when it is one of this fleet's routes
    api_base: str | None = None  # where LiteLLM sent the request

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "ok": self.ok,
            "route_id": self.route_id,
            "host": self.host,
            "api_base": self.api_base,
            "detail": self.detail,
        }


def listed_models(body: bytes) -> tuple[str, ...] | str:
    """The model ids of an OpenAI-compatible /models answer, or why it is not one."""
    try:
        data = parse_json(body)
    except ValueError as exc:
        return str(exc)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return "the answer has no data list (not an OpenAI-compatible /models)"
    return tuple(_printable(e["id"]) for e in entries if isinstance(e, dict) and "id" in e)


def _printable(value: Any) -> str:
    """An upstream's model id on one line (plans print it)."""
    return "".join(c if c.isprintable() else "?" for c in str(value))


def _short(model_id: str) -> str:
    return model_id if len(model_id) <= ID_SHOWN else model_id[: ID_SHOWN - 1] + "…"


def judge(models: tuple[str, ...], served_model: str) -> HealthState:
    return "serves" if served_model in models else "other_model"
