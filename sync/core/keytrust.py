"""Where a host's upstream key may go, and where a target's proxy key may go: the values the
probe and the commands obey (sync/gitops/keytrust.py computes them from git and the event;
the probe sends a key only where KeyTrust allows, a command reads a target only at the
endpoint TrustedRef.pin gives)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sync.core.render import render
from sync.fleet.model import Fleet, normalise_address
from sync.fleet.targets import Target, for_target

# (model_name, host, normalised api_base, api_key reference or None)
Entry = tuple[str, str, str, str | None]


@dataclass(frozen=True)
class KeyTrust:
    """The (model, host, address, key reference) a key may go to; entries None: fleet.yaml
    itself is trusted."""

    entries: frozenset[Entry] | None
    where: str = ""  # the trusted ref as a plan names it, e.g. "fleet.yaml at HEAD (0123abcd)"
    problem: str = ""  # why no address is trusted at all
    # The variables the trusted ref's targets name: the run may read them (a pull request's run
    # reads each target with the base's), so no host's key reference may name one.
    held: frozenset[str] = frozenset()

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


def trust_of(fleet: Fleet, where: str) -> KeyTrust:
    """Every host of a trusted fleet.yaml, drained ones too (enabling a host at its reviewed
    address is no new address), with the api_key reference render gives it. A fleet with
    targets: every target's projection (its overlays' api_key included), together."""
    if fleet.targets:
        views = [for_target(fleet, t.name) for t in fleet.targets]
        entries = frozenset().union(*(_entries(view) for view in views))
        return KeyTrust(entries, where, held=fleet.target_variables)
    return KeyTrust(_entries(fleet), where, held=fleet.target_variables)


def _entries(fleet: Fleet) -> frozenset[Entry]:
    every = replace(
        fleet,
        models=tuple(
            replace(m, hosts=tuple(replace(h, enabled=True) for h in m.hosts)) for m in fleet.models
        ),
    )
    entries: set[Entry] = set()
    for route in render(every):
        key = route.litellm_params.get("api_key")
        entry = (route.model_name, route.host or "", address_key(route.api_base or ""))
        entries.add((*entry, key if isinstance(key, str) else None))
    return frozenset(entries)


# -- a run's trusted ref: keys for the probe, endpoints for the targets -------------------------

ENDPOINT_FIELDS = ("proxy_url", "api_key", "read_api_key")


@dataclass(frozen=True)
class Pin:
    """The endpoint a target is read at in this run: `target` with the trusted proxy_url and
    keys (None: not read, `refusal` says why); `note` says what a pull request changed."""

    target: Target | None
    note: str = ""
    refusal: str = ""


@dataclass(frozen=True)
class TrustedRef:
    """fleet.yaml at the ref a run trusts, as data. `fleet` None and no problem: fleet.yaml
    itself (not a pull request's run); a problem: that ref could not be read or is invalid,
    and nothing of it is trusted."""

    fleet: Fleet | None = None
    where: str = ""
    problem: str = ""

    def key_trust(self, target: str | None = None) -> KeyTrust:
        """Where the probe may send a host's key when planning `target` (None: a fleet without
        targets): an entry of the trusted ref's projection of that same target only."""
        if self.problem:
            return nothing_trusted(self.problem)
        if self.fleet is None:
            return FLEET_ITSELF
        if target is None:
            return trust_of(self.fleet, self.where)
        if not any(t.name == target for t in self.fleet.targets):
            return nothing_trusted(f"{self.where} does not declare target {target}")
        return trust_of(for_target(self.fleet, target), self.where)

    def pin(self, target: Target) -> Pin:
        """The target read at the proxy_url and keys the trusted ref writes for it: a pull
        request chooses what is planned, never where a key is sent nor which variable is."""
        later = "it is read once the pull request is merged"
        if self.problem:
            return Pin(None, refusal=f"target {target.name}: not read: {self.problem}; {later}")
        if self.fleet is None:
            return Pin(target)
        trusted = next((t for t in self.fleet.targets if t.name == target.name), None)
        if trusted is None:
            return Pin(
                None,
                refusal=f"target {target.name}: not read: {self.where} does not declare it, and "
                f"a pull request does not choose a proxy or a key; {later}",
            )
        changed = [f for f in ENDPOINT_FIELDS if getattr(trusted, f) != getattr(target, f)]
        pinned = replace(
            target,
            proxy_url=trusted.proxy_url,
            api_key=trusted.api_key,
            read_api_key=trusted.read_api_key,
        )
        if not changed:
            return Pin(pinned)
        return Pin(
            pinned,
            note=f"target {target.name}: {', '.join(changed)} changed in this pull request; "
            f"read with those of {self.where}; the new ones are used once merged",
        )


FLEET_ITSELF_REF = TrustedRef()
