"""The full report of a GitHub job as files, for what a comment (64 KiB) and the step summary
(1 MiB) cannot hold: ``<fleet>.<kind>.md`` (the full markdown) and ``<fleet>.<kind>.json`` (the
plan as ``plan --format json`` prints it); ``<fleet>.<target>.<kind>.…`` for one target of a
fleet with ``targets:`` (neither name holds a dot, so no two of them share a file). The workflow
uploads the directory as an artifact; the action names it in ``FLEET_SYNC_ARTIFACT`` so the
truncation notes can say where to look.

Directory: ``FLEET_SYNC_REPORT_DIR``, else ``$RUNNER_TEMP/fleet-sync`` on a GitHub runner, else
none (nothing is written). One that cannot be written is a ReportDirError naming the variable,
raised before GitHub is asked anything: a misconfigured job says so at once."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sync.errors import FleetSyncError
from sync.github.comment import check_target
from sync.secrets import scrub

WHAT = {"plan": "plan", "apply": "apply result", "drift": "drift report"}
REPORT_DIR_VARIABLE = "FLEET_SYNC_REPORT_DIR"


class ReportDirError(FleetSyncError):
    """The report directory cannot be written; the message names the variable and the fix."""


@dataclass(frozen=True)
class ReportFiles:
    directory: Path | None
    artifact: str | None  # the artifact name the workflow uploads the directory as
    variable: str = REPORT_DIR_VARIABLE  # the one that named the directory

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReportFiles:
        chosen = environ.get(REPORT_DIR_VARIABLE)
        runner_temp = environ.get("RUNNER_TEMP")
        variable = REPORT_DIR_VARIABLE
        if not chosen and runner_temp:
            chosen = os.path.join(runner_temp, "fleet-sync")
            variable = "RUNNER_TEMP"
        artifact = environ.get("FLEET_SYNC_ARTIFACT") or None
        return cls(Path(chosen) if chosen else None, artifact, variable)

    def save(
        self,
        fleet: str,
        kind: str,
        markdown: str,
        data: Mapping[str, Any],
        target: str | None = None,
    ) -> str:
        """Write both files; returns where the full text now is, as a note for a reader."""
        if self.directory is None:
            return "run fleet-sync with FLEET_SYNC_REPORT_DIR set to keep the full text"
        check_target(target)  # part of a file name: never a path
        stem = fleet if target is None else f"{fleet}.{target}"
        name = f"{stem}.{kind}.md"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # Uploaded as an artifact anyone with read access downloads: the final scrub.
            scrub.write_text(self.directory / name, markdown)
            scrub.write_text(
                self.directory / f"{stem}.{kind}.json",
                json.dumps(data, indent=2, ensure_ascii=False) + "\n",
            )
        except OSError as exc:
            raise ReportDirError(
                f"{self.variable} names {self.directory}, where the full report cannot be "
                f"written ({exc.strerror or type(exc).__name__}): set {REPORT_DIR_VARIABLE} to a "
                "writable directory, or unset it"
            ) from None
        what = WHAT.get(kind, kind)
        if self.artifact:
            return f"the full {what} is `{name}` in the workflow artifact `{self.artifact}`"
        return f"the full {what} was written to `{self.directory / name}` on the runner"
