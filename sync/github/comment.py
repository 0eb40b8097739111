"""The pull-request comment as a value: a hidden header (fleet, target, kind, plan hash) and a
body.

The header is the first line of the rendered comment; a fleet without targets has none, one run
per target (fleet.yaml `targets:`) names it::

    <!-- fleet-sync:plan fleet=gpu-fleet hash=sha256:… -->
    <!-- fleet-sync:plan fleet=gpu-fleet target=staging hash=sha256:… -->

``marker_for(fleet, kind, target)`` is the part of that header that does not depend on the hash,
so the sticky comment of a fleet (and target) is found and edited in place whatever plan it
showed last. No marker is a prefix of another (each ends with `` hash=``), and a comment is
matched by its whole parsed marker, so (fleet, staging), (fleet, prod) and the target-less
(fleet) never take each other's comment. A comment
is one of ours only when ``parse`` finds the whole header at the very start of its body: a plan
quotes route names from the proxy, and one named like a header is just text further down.
``fit`` keeps a body under GitHub's 65,536-character comment limit; ``add_run`` keeps the
earlier runs of a comment that records a history (the apply result on a merged pull request).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GITHUB_COMMENT_LIMIT = 65536
KINDS = ("plan", "apply")
MAX_FIELD_LEN = 100
# Longest possible header line ("<!-- fleet-sync:apply fleet=… hash=… -->\n"), rounded up; a
# target's header takes its ` target=NAME` on top (comment_limit).
HEADER_RESERVE = 256
DEFAULT_NOTE = "the full plan is in the job summary"

_TOKEN = r"[^\s>]+"
_FIELD = re.compile(_TOKEN)
# A target name as fleet.yaml's `targets:` allows it (sync/fleet checks it first).
TARGET_PATTERN = r"[a-z0-9-]+"
_TARGET = re.compile(TARGET_PATTERN)
_HEADER = re.compile(
    rf"<!-- fleet-sync:(plan|apply) fleet=({_TOKEN})(?: target=({TARGET_PATTERN}))?"
    rf" hash=({_TOKEN}) -->\r?\n"
)


def check_target(target: str | None) -> None:
    """A target name that can go in a marker or a title: `[a-z0-9-]+`, at most 100 characters
    (None: the fleet has no targets)."""
    if target is not None and (not _TARGET.fullmatch(target) or len(target) > MAX_FIELD_LEN):
        raise ValueError(f"target must be 1-{MAX_FIELD_LEN} of a-z, 0-9 and '-', got {target!r}")


def target_field(target: str | None) -> str:
    """What a marker carries for a target: nothing without one (the header of every fleet-sync
    before targets), else ` target=NAME`."""
    check_target(target)
    return "" if target is None else f" target={target}"


def comment_limit(target: str | None) -> int:
    """The `limit` for fit and add_run that leaves room for a target's longer header (GitHub's
    own limit without a target)."""
    return GITHUB_COMMENT_LIMIT - len(target_field(target))


def marker_for(fleet: str, kind: str, target: str | None = None) -> str:
    """The hidden-header prefix shared by every comment of this fleet, target and kind, any
    hash."""
    _check_field("fleet", fleet)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return f"<!-- fleet-sync:{kind} fleet={fleet}{target_field(target)} hash="


@dataclass(frozen=True)
class PlanComment:
    fleet: str
    plan_hash: str
    kind: str  # "plan" | "apply"
    body: str
    target: str | None = None  # fleet.yaml's `targets:` name; None without targets

    def __post_init__(self) -> None:
        marker_for(self.fleet, self.kind, self.target)  # validates fleet, kind and target
        _check_field("plan_hash", self.plan_hash)

    @property
    def marker(self) -> str:
        return marker_for(self.fleet, self.kind, self.target)

    def render(self) -> str:
        return f"{self.marker}{self.plan_hash} -->\n{self.body}"

    @classmethod
    def parse(cls, text: str) -> PlanComment | None:
        """The comment a rendered text holds, or None when it does not start with a header."""
        match = _HEADER.match(text)
        if match is None:
            return None
        kind, fleet, target, plan_hash = match.groups()
        if any(len(field) > MAX_FIELD_LEN for field in (fleet, target or "", plan_hash)):
            return None
        return cls(fleet, plan_hash, kind, text[match.end() :], target)


def _check_field(name: str, value: str) -> None:
    if not _FIELD.fullmatch(value) or len(value) > MAX_FIELD_LEN:
        raise ValueError(
            f"{name} must be 1-{MAX_FIELD_LEN} characters without spaces or '>', got {value!r}"
        )


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_DETAILS_OPEN = re.compile(r"<details\b[^>]*>", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)


def fit(body: str, limit: int = GITHUB_COMMENT_LIMIT, note: str = DEFAULT_NOTE) -> str:
    """Cut ``body`` at a line boundary so the rendered comment stays under ``limit`` characters.

    Room for the hidden header (HEADER_RESERVE) is kept. A code fence or ``<details>`` block the
    cut goes through is closed, and a note says how many lines are shown. A body that fits is
    returned unchanged.
    """
    budget = limit - HEADER_RESERVE - 1  # strictly under the limit
    if len(body) <= budget:
        return body
    lines = body.splitlines(keepends=True)
    total = len(lines)

    def tail(shown: int, fence: str | None, depth: int) -> str:
        closers = ""
        if fence is not None:
            closers += fence + "\n"
        closers += "</details>\n" * depth
        return f"{closers}\n… truncated: {shown} of {total} lines shown; {note}\n"

    fence: str | None = None  # the opening fence run (``` or ~~~…) while inside a code block
    depth = 0  # open <details> outside code blocks
    used = 0
    best = ""
    best_len = -1
    if len(tail(0, None, 0)) <= budget:
        best_len = 0
        best = tail(0, None, 0)
    for index, line in enumerate(lines):
        used += len(line)
        if used > budget:
            break
        fence, depth = _advance(line, fence, depth)
        prefix_end = "" if line.endswith(("\n", "\r")) else "\n"
        candidate_len = used + len(prefix_end) + len(tail(index + 1, fence, depth))
        if candidate_len <= budget:
            best_len = index + 1
            best = prefix_end + tail(index + 1, fence, depth)
    if best_len < 0:
        raise ValueError(f"limit {limit} leaves no room for the truncation note")
    return "".join(lines[:best_len]) + best


def _advance(line: str, fence: str | None, depth: int) -> tuple[str | None, int]:
    """Markdown state (open fence, <details> depth) after ``line``."""
    text = line.rstrip("\r\n")
    match = _FENCE.match(text)
    if fence is not None:
        if (
            match
            and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
            and not match.group(2).strip()
        ):
            return None, depth
        return fence, depth
    if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
        return match.group(1), depth
    depth += len(_DETAILS_OPEN.findall(text))
    depth = max(0, depth - len(_DETAILS_CLOSE.findall(text)))
    return None, depth


# A comment that keeps a history (the apply result) holds its runs newest first, separated so.
RUN_SEPARATOR = "\n---\n<!-- fleet-sync:run -->\n"


def add_run(
    run: str, earlier: str | None, limit: int = GITHUB_COMMENT_LIMIT, note: str = DEFAULT_NOTE
) -> str:
    """This run's body on top of the ``earlier`` runs (a body built here, or None): as many of
    them as fit under ``limit``, newest first. A run equal to the latest one is not repeated, so
    a re-run adds to the comment and never erases what an earlier run reported.

    ``earlier`` is only ever the body of our own comment, recognised by PlanComment.parse (the
    header at the start) and its author; the separator starts a line, which nothing live in a
    body can (sync/secrets/display.py keeps every live string on its line)."""
    runs = [r for r in (earlier or "").split(RUN_SEPARATOR) if r.strip()]
    if runs and runs[0].strip() == run.strip():
        return RUN_SEPARATOR.join(runs)
    body = fit(run, limit, note)
    budget = limit - HEADER_RESERVE - 1
    for older in runs:
        if len(body) + len(RUN_SEPARATOR) + len(older) > budget:
            break
        body += RUN_SEPARATOR + older
    return body
