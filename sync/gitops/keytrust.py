"""Where a host's upstream key may go. The probe sends a host's key only to the address fleet.yaml
at a trusted ref gives that same host, with that same api_key reference: an address from a
dispatch payload or a pull request gets no key before a person (or the configured rule)
accepted it, and neither does a key reference a pull request points at a reviewed address.

Which ref is trusted: in `propose`, the checked-out commit (set-host edited only the working
file); in a pull request's run (GITHUB_EVENT_NAME pull_request, pull_request_target, a review
of one, merge_group; or --base-ref), the merge base with the pull request's base; in every
other run (local, apply on main, drift) fleet.yaml itself. When that ref cannot be read, no
address is trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from sync.core.keytrust import FLEET_ITSELF, Entry, KeyTrust, address_key, nothing_trusted
from sync.core.render import render
from sync.fleet.model import Fleet, fleet_from_doc
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import parse_yaml
from sync.untrusted.json_parser import parse_json

# Runs on a pull request's code; a merge group's commit is not on its branch yet either.
PULL_REQUEST_EVENTS = frozenset(
    {
        "pull_request",
        "pull_request_target",
        "pull_request_review",
        "pull_request_review_comment",
        "merge_group",
    }
)
EVENT_MAX_BYTES = 64 * 2**20  # GitHub's event file; a pull request's body is at most 64 KiB


def trust_of(fleet: Fleet, where: str) -> KeyTrust:
    """Every host of a trusted fleet.yaml, drained ones too (enabling a host at its reviewed
    address is no new address), with the api_key reference render gives it."""
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
    return KeyTrust(frozenset(entries), where)


# -- the edge: which ref, read through git -----------------------------------------------------


def for_run(fleet_file: Path, base_ref: str | None, environ: Mapping[str, str]) -> KeyTrust:
    """plan, apply and drift: the pull request's base in a pull request's run (its event, or
    --base-ref given), fleet.yaml itself otherwise."""
    if base_ref is None and environ.get("GITHUB_EVENT_NAME") not in PULL_REQUEST_EVENTS:
        return FLEET_ITSELF
    ref = base_ref or event_base_sha(environ)
    if ref is None:
        return nothing_trusted(
            "the pull request's base is unknown (GITHUB_EVENT_PATH holds no "
            "pull_request.base.sha; pass --base-ref)"
        )
    from sync.gitops.gitref import GitRefError, merge_base

    try:
        base = merge_base(fleet_file.resolve().parent, ref)
    except GitRefError as exc:
        return nothing_trusted(f"fleet.yaml at the pull request's base cannot be read ({exc})")
    return at_commit(fleet_file, base, f"fleet.yaml at the pull request's base ({base[:12]})")


def at_head(fleet_file: Path) -> KeyTrust:
    """propose: the checked-out commit, which the dispatch's set-host did not change."""
    from sync.gitops.gitref import GitRefError, head_commit

    try:
        sha, _ = head_commit(fleet_file)
    except GitRefError as exc:
        return nothing_trusted(f"fleet.yaml at HEAD cannot be read ({exc})")
    return at_commit(fleet_file, sha, f"fleet.yaml at HEAD ({sha[:12]})")


def at_commit(fleet_file: Path, sha: str, where: str) -> KeyTrust:
    from sync.gitops.gitref import GitRefError, file_at

    try:
        text = file_at(fleet_file, sha)
    except GitRefError as exc:
        return nothing_trusted(f"{where} cannot be read ({exc})")
    if text is None:
        return nothing_trusted(f"{where} does not exist")
    try:
        fleet = fleet_from_doc(parse_yaml(text, str(fleet_file)), str(fleet_file))
    except FleetError:
        return nothing_trusted(f"{where} is invalid")
    return trust_of(fleet, where)


def event_base_sha(environ: Mapping[str, str]) -> str | None:
    """pull_request.base.sha (merge_group.base_sha) of the event file GitHub Actions writes, or
    None."""
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            event = parse_json(fh.read(EVENT_MAX_BYTES + 1), max_bytes=EVENT_MAX_BYTES)
    except (OSError, ValueError):
        return None
    if not isinstance(event, dict):
        return None
    pull, group = event.get("pull_request"), event.get("merge_group")
    base = pull.get("base") if isinstance(pull, dict) else None
    sha = base.get("sha") if isinstance(base, dict) else None
    if sha is None and isinstance(group, dict):
        sha = group.get("base_sha")
    return sha if isinstance(sha, str) and sha else None
