"""The full report of a GitHub job as files, for what a comment (64 KiB) and the step summary
(1 MiB) cannot hold: ``<fleet>.<kind>.md`` (the full markdown) and ``<fleet>.<kind>.json`` (the
plan as ``plan --format json`` prints it). The workflow uploads the directory as an artifact; the
action names it in ``FLEET_SYNC_ARTIFACT`` so the truncation notes can say where to look.

Directory: ``FLEET_SYNC_REPORT_DIR``, else ``$RUNNER_TEMP/fleet-sync`` on a GitHub runner, else
none (nothing is written)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import scrub

WHAT = {"plan": "plan", "apply": "apply result", "drift": "drift report"}


@dataclass(frozen=True)
class ReportFiles:
    directory: Path | None
    artifact: str | None  # the artifact name the workflow uploads the directory as

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReportFiles:
        chosen = environ.get("FLEET_SYNC_REPORT_DIR")
        runner_temp = environ.get("RUNNER_TEMP")
        if not chosen and runner_temp:
            chosen = os.path.join(runner_temp, "fleet-sync")
        return cls(Path(chosen) if chosen else None, environ.get("FLEET_SYNC_ARTIFACT") or None)

    def save(self, fleet: str, kind: str, markdown: str, data: Mapping[str, Any]) -> str:
        """Write both files; returns where the full text now is, as a note for a reader."""
        if self.directory is None:
            return "run fleet-sync with FLEET_SYNC_REPORT_DIR set to keep the full text"
        name = f"{fleet}.{kind}.md"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # Uploaded as an artifact anyone with read access downloads: the final scrub.
            scrub.write_text(self.directory / name, markdown)
            scrub.write_text(
                self.directory / f"{fleet}.{kind}.json",
                json.dumps(data, indent=2, ensure_ascii=False) + "\n",
            )
        except OSError as exc:
            return f"the full text could not be written to {self.directory} ({exc.strerror})"
        what = WHAT.get(kind, kind)
        if self.artifact:
            return f"the full {what} is `{name}` in the workflow artifact `{self.artifact}`"
        return f"the full {what} was written to `{self.directory / name}` on the runner"
