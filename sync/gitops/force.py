"""The reviewed force: a pull request's `fleet-sync:force` label, added by someone with write
access, accepts the refusals the pull request's plan comment showed, and only those.

- plan (pull request): the label accepts what our plan comment showed when it was added (the
  comment last written before the label event), and then what it recorded as accepted under
  that same label event: a refusal that appears later (a push after the label) is not
  accepted until someone with write access adds the label again. The comment records every
  refusal it shows and those accepted (their keys, sync/core/verdict.py) in a hidden line at
  the top of its body, with the label event and its author.
- apply (push to main): the merged pull request of the commit must carry the label still, added
  by a writer in the very event our plan comment recorded; apply then forces the refusals that
  comment recorded as accepted, nothing else (a refusal it did not show still refuses, exit 3).

Who labelled is GitHub's audit trail (the issue events); the comment and the apply result name
them. Only our own plan comment (marker and author, sync/github/client.py) is read."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sync.core.verdict import Acceptance, refusal_key
from sync.github.client import GitHubClient
from sync.github.comment import PlanComment, marker_for
from sync.github.labels import Labelled, label_on
from sync.report.markdown import FORCE_LABEL

_RECORD = re.compile(
    r"<!-- fleet-sync:refusals shown=([r0-9a-f,]*) accepted=([r0-9a-f,]*)"
    r"(?: by=([A-Za-z0-9-]+) event=([0-9]+))? -->"
)


@dataclass(frozen=True)
class Record:
    """What a plan comment showed (refusal keys), what of it was accepted, under which label."""

    shown: frozenset[str]
    accepted: frozenset[str] = frozenset()
    by: str | None = None
    event: int | None = None

    def line(self) -> str:
        label = f" by={self.by} event={self.event}" if self.by and self.event is not None else ""
        return (
            f"<!-- fleet-sync:refusals shown={','.join(sorted(self.shown))} "
            f"accepted={','.join(sorted(self.accepted))}{label} -->"
        )

    @classmethod
    def parse(cls, body: str) -> Record | None:
        """The record at the top of a plan comment's body (its first line), or None."""
        match = _RECORD.fullmatch(body.split("\n", 1)[0].removesuffix("\r"))
        if match is None:
            return None
        shown, accepted, by, event = match.groups()
        return cls(_keys(shown), _keys(accepted), by, int(event) if event else None)


def _keys(field: str) -> frozenset[str]:
    return frozenset(k for k in field.split(",") if k)


def by_label(login: str) -> str:
    return f"@{login}'s {FORCE_LABEL} label"


@dataclass(frozen=True)
class Review:
    """A pull request's reviewed force: what it accepts (None: nothing), its label, and what the
    comment and the log say about it."""

    acceptance: Acceptance | None = None
    label: Labelled | None = None
    notes: tuple[str, ...] = ()
    number: int | None = None

    def record(self, reasons: Sequence[str]) -> Record:
        """The record the plan comment keeps: every refusal it shows, those accepted."""
        shown = frozenset(refusal_key(r) for r in reasons)
        accepted = frozenset(
            k for k in shown if self.acceptance is not None and self.acceptance.accepts_key(k)
        )
        label = self.label if self.label is not None and self.label.by_writer else None
        return Record(
            shown, accepted, label.login if label else None, label.event if label else None
        )


def _ignored(label: Labelled) -> str | None:
    """Why a label present on the pull request does not count, or None when it does."""
    if label.login is None or label.event is None:
        return (
            f"the {FORCE_LABEL} label is on this pull request, but GitHub's events do not name "
            "a person who added it: it is not counted"
        )
    if not label.by_writer:
        return (
            f"@{label.login} added the {FORCE_LABEL} label but has {label.permission} access to "
            "the repository, not write: it is not counted; someone with write access must add it"
        )
    return None


def at_plan(
    github: GitHubClient, number: int, fleet: str, target: str | None, reasons: Sequence[str]
) -> Review:
    """The label's review of this pull request's plan (whose refusals are `reasons`)."""
    label = label_on(github, number, FORCE_LABEL)
    if label is None:
        return Review()
    if why := _ignored(label):
        return Review(None, label, (why,), number)
    earlier = github.find_comment(number, marker_for(fleet, "plan", target))
    parsed = PlanComment.parse(str(earlier.get("body") or "")) if earlier else None
    record = Record.parse(parsed.body) if parsed else None
    login = str(label.login)
    if record is not None and record.event == label.event:
        allowed = record.accepted  # accepted earlier under this very label
    elif record is not None and earlier is not None and _before(earlier, label):
        allowed = record.shown  # what the comment showed when the label was added
    else:
        allowed = frozenset()
    new = [r for r in reasons if refusal_key(r) not in allowed]
    notes = (
        (
            f"{len(new)} refusal(s) were not in this comment when @{login} added the "
            f"{FORCE_LABEL} label: not accepted; review them, then remove the label and add it "
            "again to accept them",
        )
        if new
        else ()
    )
    return Review(Acceptance(by_label(login), allowed), label, notes, number)


def _before(comment: dict[str, Any], label: Labelled) -> bool:
    """Whether the comment was last written before the label was added (GitHub's timestamps,
    both ISO 8601 in UTC); unknown is not before."""
    written = comment.get("updated_at") or comment.get("created_at")
    return isinstance(written, str) and label.at is not None and written <= label.at


def at_apply(github: GitHubClient, sha: str, fleet: str, target: str | None) -> Review:
    """The reviewed force of the pull request merged as `sha`: its label, still on it, added by
    a writer in the event our plan comment recorded, accepts what that comment accepted."""
    notes: list[str] = []
    for number in github.pull_requests_for_commit(sha, merged_only=True):
        label = label_on(github, number, FORCE_LABEL)
        if label is None:
            continue
        if why := _ignored(label):
            notes.append(f"#{number}: {why}")
            continue
        ours = github.find_comment(number, marker_for(fleet, "plan", target))
        parsed = PlanComment.parse(str(ours.get("body") or "")) if ours else None
        record = Record.parse(parsed.body) if parsed else None
        if record is None or record.event != label.event:
            notes.append(
                f"#{number}: the {FORCE_LABEL} label by @{label.login} was added after its "
                "plan was last made, so no reviewed plan lists what it accepts: not counted; "
                "run the pull request's plan again (or apply by hand with --force)"
            )
            continue
        acceptance = Acceptance(f"{by_label(str(label.login))} on #{number}", record.accepted)
        return Review(acceptance, label, tuple(notes), number)
    return Review(None, None, tuple(notes))
