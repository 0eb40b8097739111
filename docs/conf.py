"""Sphinx configuration of the fleet-sync docs site (built by scripts/docs, strictly: every
warning is an error, every internal link must resolve; nothing is fetched from the network)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

import fleet_sync_reference

sys.path.insert(0, str(fleet_sync_reference.ROOT))  # the sync package, installed or not

project = "fleet-sync"
author = "fleet-sync contributors"
copyright = "fleet-sync contributors"
version = release = __import__("sync").__version__

extensions = ["myst_parser", "fleet_sync_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "example-pr-comment.md"]

# Headings get GitHub's anchors, so [text](page.md#a-heading) works on GitHub and here alike;
# an anchor or page that does not exist is a warning, and warnings fail the build.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

html_theme = "alabaster"
html_title = f"fleet-sync {release}"
html_show_sourcelink = False
html_theme_options = {"description": "LiteLLM routes from fleet.yaml in git", "fixed_sidebar": True}
