"""Where a host's upstream key may go: the value the probe obeys (sync/gitops/keytrust.py
computes it from git and the event; the probe sends a key only where it allows)."""

from __future__ import annotations

from dataclasses import dataclass

from sync.fleet.model import normalise_address

# (model_name, host, normalised api_base, api_key reference or None)
Entry = tuple[str, str, str, str | None]


@dataclass(frozen=True)
class KeyTrust:
    """The (model, host, address, key reference) a key may go to; entries None: fleet.yaml
    itself is trusted."""

    entries: frozenset[Entry] | None
    where: str = ""  # the trusted ref as a plan names it, e.g. "fleet.yaml at HEAD (0123abcd)"
    problem: str = ""  # why no address is trusted at all

    def refusal(self, model_name: str, host: str, api_base: str, key_ref: str | None) -> str:
        """Why this host's key must not go to `api_base` ("" when it may)."""
        if self.entries is None:
            return ""
        if self.problem:
            return self.problem
        if (model_name, host, address_key(api_base), key_ref) in self.entries:
            return ""
        return f"{self.where} does not give host {host} this address and api_key (not reviewed)"


FLEET_ITSELF = KeyTrust(None)


def nothing_trusted(problem: str) -> KeyTrust:
    return KeyTrust(frozenset(), problem=f"{problem}: no address is trusted with a key")


def address_key(api_base: str) -> str:
    """The address as trust compares it: spellings of one address are one (case of the host,
    default port, trailing slash); anything else differs."""
    try:
        return normalise_address(api_base)
    except (KeyError, ValueError):
        return api_base
