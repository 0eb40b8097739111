"""Where a host's upstream key may go. The probe sends a host's key only to the address fleet.yaml
at a trusted ref gives that same host, with that same api_key reference: an address from a
dispatch payload or a pull request gets no key before a person (or the configured rule)
accepted it, and neither does a key reference a pull request points at a reviewed address.

Which ref is trusted: in `propose`, the checked-out commit (set-host edited only the working
file); in a pull request's run (GITHUB_EVENT_NAME pull_request, pull_request_target, a review
of one, merge_group; or --base-ref), the merge base with the pull request's base; in every
other run (local, apply on main, drift) fleet.yaml itself. When that ref cannot be read, no
address is trusted.

The same ref says where a target's proxy key goes (fleet.yaml's targets:): in a pull request's
run each target is read at the proxy_url and with the key references the trusted ref gives it
(TrustedRef.pin), never at those the pull request writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sync.core.keytrust import FLEET_ITSELF_REF, KeyTrust, TrustedRef, trust_of
from sync.fleet.model import fleet_from_doc
from sync.fleet.problems import FleetError
from sync.fleet.yamlmarks import parse_yaml
from sync.untrusted.json_parser import parse_json

__all__ = ["at_head", "for_run", "ref_for_run", "trust_of"]

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


# -- the edge: which ref, read through git -----------------------------------------------------


def for_run(fleet_file: Path, base_ref: str | None, environ: Mapping[str, str]) -> KeyTrust:
    """plan, apply and drift without targets: the pull request's base in a pull request's run
    (its event, or --base-ref given), fleet.yaml itself otherwise."""
    return ref_for_run(fleet_file, base_ref, environ).key_trust()


def ref_for_run(fleet_file: Path, base_ref: str | None, environ: Mapping[str, str]) -> TrustedRef:
    """The ref a run trusts, read once: its targets' endpoints and its hosts' keys follow it."""
    if base_ref is None and environ.get("GITHUB_EVENT_NAME") not in PULL_REQUEST_EVENTS:
        return FLEET_ITSELF_REF
    ref = base_ref or event_base_sha(environ)
    if ref is None:
        return TrustedRef(
            problem="the pull request's base is unknown (GITHUB_EVENT_PATH holds no "
            "pull_request.base.sha; pass --base-ref)"
        )
    from sync.gitops.gitref import GitRefError, merge_base

    try:
        base = merge_base(fleet_file.resolve().parent, ref)
    except GitRefError as exc:
        return TrustedRef(problem=f"fleet.yaml at the pull request's base cannot be read ({exc})")
    return at_commit(fleet_file, base, f"fleet.yaml at the pull request's base ({base[:12]})")


def at_head(fleet_file: Path) -> KeyTrust:
    """propose: the checked-out commit, which the dispatch's set-host did not change."""
    return ref_at_head(fleet_file).key_trust()


def ref_at_head(fleet_file: Path) -> TrustedRef:
    """propose over targets: the checked-out commit gives each target's endpoint and keys."""
    from sync.gitops.gitref import GitRefError, head_commit

    try:
        sha, _ = head_commit(fleet_file)
    except GitRefError as exc:
        return TrustedRef(problem=f"fleet.yaml at HEAD cannot be read ({exc})")
    return at_commit(fleet_file, sha, f"fleet.yaml at HEAD ({sha[:12]})")


def at_commit(fleet_file: Path, sha: str, where: str) -> TrustedRef:
    from sync.gitops.gitref import GitRefError, file_at

    try:
        text = file_at(fleet_file, sha)
    except GitRefError as exc:
        return TrustedRef(problem=f"{where} cannot be read ({exc})")
    if text is None:
        return TrustedRef(problem=f"{where} does not exist")
    try:
        fleet = fleet_from_doc(parse_yaml(text, str(fleet_file)), str(fleet_file))
    except FleetError:
        return TrustedRef(problem=f"{where} is invalid")
    return TrustedRef(fleet, where)


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
