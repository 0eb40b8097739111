"""Render on plain data: each tests/cases/render/*.yaml holds a fleet and the exact model_list it
must render (pyinfra style: input and expected output side by side). Plus the properties the
design promises: identity-derived, URL-safe ids; a digest that covers the api_key reference; a
byte-for-byte deterministic `fleet-sync render`."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sync.core.render import TAG_DIGEST, TAG_PATHS, Route, render, render_config
from sync.fleet.model import Fleet, load_fleet

from .support.proxyharness import crashed

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "tests" / "cases" / "render"
CASES = sorted(p for p in CASES_DIR.glob("*.yaml") if not p.name.endswith(".config.yaml"))
EXAMPLE = ROOT / "fleet.yaml"
EXAMPLE_CONFIG = CASES_DIR / "example.config.yaml"
URL_SAFE = re.compile(r"[A-Za-z0-9._~-]+")

MOVING_FLEET = """\
version: 1
fleet: gpu-fleet
defaults:
  api_key: os.environ/VLLM_API_KEY
models:
  llama4-scout:
    served_model: meta-llama/Llama-4-Scout-17B-16E-Instruct
    hosts:
      - name: runpod-c
        api_base: http://216.243.220.245:16643/v1
      - name: runpod-d
        api_base: https://def456-8000.proxy.runpod.net/v1
"""


def load_case(path: Path) -> dict[str, Any]:
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(case, dict) and set(case) == {"fleet", "expected"}, path.name
    return case


def fleet_of(document: Any, tmp_path: Path) -> Fleet:
    """Through the real reader and validator; written order kept (models, hosts, keys)."""
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return load_fleet(path)


def fleet_from_text(text: str, tmp_path: Path, name: str = "fleet.yaml") -> Fleet:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_fleet(path)


def recomputed_digest(deployment: dict[str, Any]) -> str:
    """The digest as the design defines it: over the rendered route, api_key included."""
    info = {k: v for k, v in deployment["model_info"].items() if k != TAG_DIGEST}
    body = {
        "model_name": deployment["model_name"],
        "litellm_params": deployment["litellm_params"],
        "model_info": info,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def by_host(routes: tuple[Route, ...]) -> dict[tuple[str, str | None], Route]:
    return {(r.model_name, r.host): r for r in routes}


# --- cases as data ----------------------------------------------------------------------------


def test_cases_present() -> None:
    names = {p.name.split("-", 1)[1] for p in CASES}
    assert {"precedence.yaml", "disabled-host.yaml", "default-provider.yaml"} <= names


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_render_case(path: Path, tmp_path: Path) -> None:
    case = load_case(path)
    routes = render(fleet_of(case["fleet"], tmp_path))
    assert [r.deployment() for r in routes] == case["expected"]
    for route in routes:
        assert route.model_info["id"] == route.id
        assert URL_SAFE.fullmatch(route.id), route.id
        assert route.digest == recomputed_digest(route.deployment())
        # Keys come out sorted, so the rendered text never depends on how the file was written.
        assert list(route.litellm_params) == sorted(route.litellm_params)
        assert list(route.model_info) == sorted(route.model_info)


def test_disabled_host_has_no_route(tmp_path: Path) -> None:
    case = load_case(CASES_DIR / "02-disabled-host.yaml")
    fleet = fleet_of(case["fleet"], tmp_path)
    hosts = {(r.model_name, r.host) for r in render(fleet)}
    assert ("qwen3-8b", "runpod-a") not in hosts
    assert "drained-model" in fleet.model_names
    assert not any(model == "drained-model" for model, _ in hosts)


# --- identity, address and digest -------------------------------------------------------------


def test_address_change_keeps_id(tmp_path: Path) -> None:
    """A host that moves is an in-place update: same id, new api_base, new digest."""
    before = render(fleet_from_text(MOVING_FLEET, tmp_path, "before.yaml"))
    moved = MOVING_FLEET.replace("216.243.220.245:16643", "103.196.86.105:17140")
    after = render(fleet_from_text(moved, tmp_path, "after.yaml"))
    old, new = (
        by_host(before)["llama4-scout", "runpod-c"],
        by_host(after)["llama4-scout", "runpod-c"],
    )
    assert new.id == old.id
    assert old.api_base == "http://216.243.220.245:16643/v1"
    assert new.api_base == "http://103.196.86.105:17140/v1"
    assert new.digest != old.digest
    assert {k: v for k, v in new.litellm_params.items() if k != "api_base"} == {
        k: v for k, v in old.litellm_params.items() if k != "api_base"
    }
    # The other host did not move: nothing about it changes.
    assert by_host(before)["llama4-scout", "runpod-d"] == by_host(after)["llama4-scout", "runpod-d"]


def test_digest_changes_with_api_key_reference_only(tmp_path: Path) -> None:
    """LiteLLM never returns api_key: a new reference is visible only through the digest."""
    before = render(fleet_from_text(MOVING_FLEET, tmp_path, "before.yaml"))
    rotated = MOVING_FLEET.replace("os.environ/VLLM_API_KEY", "os.environ/VLLM_API_KEY_2")
    after = render(fleet_from_text(rotated, tmp_path, "after.yaml"))
    assert [r.id for r in before] == [r.id for r in after]
    for old, new in zip(before, after, strict=True):
        assert new.litellm_params["api_key"] == "os.environ/VLLM_API_KEY_2"
        assert {**new.litellm_params, "api_key": None} == {**old.litellm_params, "api_key": None}
        assert new.digest != old.digest
        # The record of paths keeps a digest of the reference (LiteLLM resolves it on read).
        assert new.written is not None and old.written is not None
        key = ("litellm_params", "api_key")
        assert new.written[key] != old.written[key] and new.written[key].startswith("sha256:")
        assert {**new.written, key: None} == {**old.written, key: None}
        ignore = {TAG_DIGEST: None, TAG_PATHS: None}
        assert {**new.model_info, **ignore} == {**old.model_info, **ignore}
        # What a read-back sees (no api_key) is identical: only the digest tells them apart.
        seen_old = {k: v for k, v in old.litellm_params.items() if k != "api_key"}
        seen_new = {k: v for k, v in new.litellm_params.items() if k != "api_key"}
        assert seen_old == seen_new


def test_id_ignores_everything_but_identity(tmp_path: Path) -> None:
    base = render(fleet_from_text(MOVING_FLEET, tmp_path, "a.yaml"))
    edited = (
        MOVING_FLEET.replace("meta-llama/Llama-4-Scout-17B-16E-Instruct", "other/served-model")
        .replace("os.environ/VLLM_API_KEY", "os.environ/OTHER")
        .replace(
            "        api_base: https://def456", "        enabled: true\n        api_base: https://x"
        )
    )
    other = render(fleet_from_text(edited, tmp_path, "b.yaml"))
    assert [r.id for r in base] == [r.id for r in other]
    renamed = render(
        fleet_from_text(MOVING_FLEET.replace("runpod-c", "runpod-e"), tmp_path, "c.yaml")
    )
    assert renamed[0].id != base[0].id and renamed[1].id == base[1].id


ODD_MODEL_NAMES = [
    "org/model:tag@v1+x",
    "org/model:tag@v1-x",
    "org-model-tag-v1-x",
    "Q",
    "a.b_c-d",
    "x@y:z/w+v",
    "9" + "/" * 127,
]


@pytest.mark.parametrize("model_name", ODD_MODEL_NAMES)
def test_ids_are_url_safe(model_name: str, tmp_path: Path) -> None:
    text = f"""\
version: 1
fleet: f-1
models:
  {json.dumps(model_name)}:
    served_model: org/model
    hosts:
      - {{name: GPU_1.a-b, api_base: "http://10.0.0.1:8000/v1"}}
      - {{name: h, api_base: "http://10.0.0.2:8000/v1"}}
"""
    routes = render(fleet_from_text(text, tmp_path))
    assert [r.model_name for r in routes] == [model_name, model_name]
    for route in routes:
        assert URL_SAFE.fullmatch(route.id), route.id
        assert route.model_info["id"] == route.id


def test_ids_unique_when_names_slug_alike(tmp_path: Path) -> None:
    """org/model:tag@v1+x, org/model:tag@v1-x and org-model-tag-v1-x slug to the same text."""
    models = "".join(
        f"  {json.dumps(name)}:\n    served_model: org/m\n    hosts:\n"
        f'      - {{name: h, api_base: "http://10.0.0.{i}:8000/v1"}}\n'
        for i, name in enumerate(ODD_MODEL_NAMES[:3], start=1)
    )
    routes = render(fleet_from_text(f"version: 1\nfleet: f\nmodels:\n{models}", tmp_path))
    ids = [r.id for r in routes]
    assert len(set(ids)) == 3, ids
    assert len({i.rsplit("-", 1)[0] for i in ids}) == 1  # same readable part, different hash


# --- fleet-sync render, byte for byte ---------------------------------------------------------


def fleet_sync_command() -> list[str]:
    script = Path(sys.executable).with_name("fleet-sync")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sync"]


def render_cli(*args: str, hash_seed: str) -> bytes:
    done = subprocess.run(
        [*fleet_sync_command(), "render", *args],
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert not crashed(done.stderr.decode(errors="replace"))
    return done.stdout


def test_render_is_byte_for_byte_deterministic(tmp_path: Path) -> None:
    first = render_cli("-f", "fleet.yaml", hash_seed="1")
    second = render_cli("-f", "fleet.yaml", hash_seed="2")
    assert first == second
    written = tmp_path / "config.yaml"
    assert render_cli("-f", "fleet.yaml", "-o", str(written), hash_seed="3") == b""
    assert written.read_bytes() == first


def test_render_matches_committed_example() -> None:
    """tests/cases/render/example.config.yaml is what the root fleet.yaml renders to; when
    fleet.yaml changes on purpose, regenerate it with
    `fleet-sync render -f fleet.yaml -o tests/cases/render/example.config.yaml`."""
    expected = EXAMPLE_CONFIG.read_bytes()
    assert render_cli("-f", "fleet.yaml", hash_seed="0") == expected
    assert render_config(render(load_fleet(EXAMPLE))).encode() == expected
    parsed = yaml.safe_load(expected)
    assert set(parsed) == {"model_list"}
    for entry in parsed["model_list"]:
        assert set(entry) == {"model_name", "litellm_params", "model_info"}
        assert entry["model_info"][TAG_DIGEST] == recomputed_digest(entry)
