"""fleet.yaml as bytes on disk for set-host: read with its line endings and BOM, written back
in one rename, and the unified diff of the change."""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path

from sync.fleet.problems import FleetError, Problem
from sync.fleet.yamlmarks import read_bytes

BOM = "\ufeff"


def read_text(path: Path, file: str) -> tuple[str, bool]:
    """fleet.yaml as text with its line endings, and whether it starts with a BOM."""
    raw = read_bytes(path, file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FleetError([Problem(file, 1, 1, "not UTF-8 text")]) from None
    return text.removeprefix(BOM), text.startswith(BOM)


def write_atomically(path: Path, text: str, bom: bool) -> None:
    """Replace the file in one rename: a reader sees the old or the new file, never half."""
    target = path.resolve()
    data = ((BOM if bom else "") + text).encode("utf-8")
    mode = target.stat().st_mode & 0o7777
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def unified_diff(old: str, new: str, file: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), file, file
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
