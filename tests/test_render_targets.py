"""`render --target`: a fleet with targets: renders one target's model_list (its limits and
overlays), never the base fleet no proxy receives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sync.commands.main import run

EXAMPLE = Path(__file__).parent.parent / "examples" / "config-repo" / "two-targets" / "fleet.yaml"


def render(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(["render", "-f", str(EXAMPLE), *args])
    out, err = capsys.readouterr()
    return code, out, err


def hosts(text: str) -> dict[str, dict[str, object]]:
    routes = yaml.safe_load(text)["model_list"]
    return {r["model_info"]["fleet_sync_host"]: r["litellm_params"] for r in routes}


def test_each_target_renders_its_own_model_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, staging, _ = render(capsys, "--target", "staging")
    assert code == 0
    code, prod, _ = render(capsys, "--target", "prod")
    assert code == 0
    on_staging, on_prod = hosts(staging), hosts(prod)
    assert "runpod-canary" in on_staging and "runpod-canary" not in on_prod
    assert on_prod["runpod-a"].get("rpm") == 600
    assert on_staging["runpod-a"].get("rpm") != 600


@pytest.mark.parametrize("args", [(), ("--target", "staging", "--target", "prod")])
def test_several_targets_are_one_target_too_many(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    code, out, err = render(capsys, *args)
    assert (code, out) == (1, "")
    assert "give --target NAME once (staging, prod)" in err


def test_an_unknown_target_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = render(capsys, "--target", "qa")
    assert (code, out) == (1, "")
    assert f"unknown target(s) qa; {EXAMPLE} declares: staging, prod" in err  # the file read
