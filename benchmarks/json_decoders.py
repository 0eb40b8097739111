"""JSON decoders on LiteLLM 1.108.7's real listing page: the stdlib against orjson and msgspec.

    .venv/bin/python benchmarks/json_decoders.py [--runs 30]

Pages of 200 and 1,000 entries built from a real entry (litellm-1.108.7-entry.json, ~8.6 KB,
~190 model_info fields), each with its own id and name. Timed per page, best of --runs (CPU
time of this thread): the decoder alone, and the decoder with what fleet-sync's one parser of
untrusted JSON adds to it (sync/untrusted/json_parser.py: the depth walk, the surrogate scan).
orjson and msgspec are optional: a decoder not installed is left out of the table.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sync.untrusted.json_parser import MAX_JSON_DEPTH, _depth_exceeds, _stdlib, parse_json

TEMPLATE = Path(__file__).with_name("litellm-1.108.7-entry.json")


def page(entries: int) -> bytes:
    template = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    data = []
    for index in range(entries):
        entry = copy.deepcopy(template)
        entry["model_name"] = f"model-{index // 10:04d}"
        entry["model_info"]["id"] = f"scale-model-{index // 10:04d}-host-{index % 10:02d}"
        data.append(entry)
    body = {"data": data, "total_count": 10_000, "current_page": 1, "total_pages": 50, "size": 200}
    return json.dumps(body).encode()


def decoders() -> dict[str, Callable[[bytes], Any]]:
    out: dict[str, Callable[[bytes], Any]] = {"json.loads (stdlib)": json.loads}
    try:
        orjson: Any = importlib.import_module("orjson")
        out[f"orjson.loads {orjson.__version__}"] = orjson.loads
    except ImportError:
        pass
    try:
        msgspec: Any = importlib.import_module("msgspec")
        out[f"msgspec.json.decode {msgspec.__version__}"] = msgspec.json.Decoder().decode
        entry = msgspec.defstruct(
            "Entry",
            [
                ("model_name", str),
                ("model_info", dict[str, Any]),
                ("litellm_params", dict[str, Any], {}),
            ],
        )
        fields = [("data", list[entry]), ("total_count", int), ("total_pages", int)]  # type: ignore[valid-type]
        page = msgspec.defstruct("Page", fields)
        out["msgspec typed (Page/Entry structs)"] = msgspec.json.Decoder(page).decode
    except ImportError:
        pass
    return out


def cpu_best(runs: int, action: Callable[[bytes], object], body: bytes) -> float:
    times = []
    for _ in range(runs):
        began = time.thread_time()
        action(body)
        times.append(time.thread_time() - began)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args()
    pages = {n: page(n) for n in (200, 1000)}
    print(
        f"Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}, best of {options.runs} "
        f"(CPU); page bytes: " + ", ".join(f"{n}: {len(b):,}" for n, b in pages.items())
    )
    print("| decoder | 200 entries | + depth walk | 1,000 entries | + depth walk |")
    print("|---|---:|---:|---:|---:|")
    for name, decode in decoders().items():
        cells = []
        for body in pages.values():
            alone = cpu_best(options.runs, decode, body)
            walked = cpu_best(options.runs, partial(_walked, decode), body)
            cells += [f"{alone * 1000:.1f} ms", f"{walked * 1000:.1f} ms"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    checked: dict[str, Callable[[bytes], object]] = {
        "fleet-sync parse_json before (json.loads, all checks)": partial(
            _stdlib, max_depth=MAX_JSON_DEPTH, what="the answer"
        ),
        "fleet-sync parse_json now (msgspec, all checks)": parse_json,
    }
    for name, parse in checked.items():
        cells = []
        for body in pages.values():
            cells += ["", f"{cpu_best(options.runs, parse, body) * 1000:.1f} ms"]
        print(f"| {name} | " + " | ".join(cells) + " |")


def _walked(decode: Callable[[bytes], Any], body: bytes) -> bool:
    return _depth_exceeds(_plain(decode(body)), MAX_JSON_DEPTH)


def _plain(value: Any) -> Any:
    """A typed decode's structs as the plain containers the depth walk reads."""
    return value if isinstance(value, dict | list) else [e.model_info for e in value.data]


if __name__ == "__main__":
    main()
