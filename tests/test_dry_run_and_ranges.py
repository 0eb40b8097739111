"""Hostile options and honest previews (issue 8, item 6).

Option ranges are the parser's job (a usage error, exit 1, never a traceback), and
`apply --dry-run` exits as the real apply would: a CI preview must not pass what apply refuses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sync.core.render import route_id

from .support.proxyharness import Proxy, fleet_sync, write_fleet

OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"
UNREACHABLE = "http://127.0.0.1:9"  # the parser must refuse before anything is dialled


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["apply", "--concurrency", "0"], "'--concurrency': 0 is not in the range 1<=x<=64"),
        (["apply", "--concurrency", "-3"], "'--concurrency': -3 is not in the range"),
        (["apply", "--concurrency", "65"], "'--concurrency': 65 is not in the range"),
        (["apply", "--concurrency", "two"], "'--concurrency': 'two' is not a valid integer"),
        (["apply", "--timeout", "-1"], "'--timeout': -1.0 is not in the range 0<x<=3600"),
        (["plan", "--timeout", "0"], "'--timeout': 0.0 is not in the range 0<x<=3600"),
        (["drift", "--timeout", "nan"], "'--timeout': 'nan' is not a finite number of seconds"),
        (["plan", "--timeout", "inf"], "'--timeout': inf is not in the range"),
        (["apply", "--confirm-timeout", "-5"], "'--confirm-timeout': -5.0 is not in the range"),
        (["apply", "--confirm-timeout", "nan"], "'--confirm-timeout': 'nan' is not a finite"),
        (["apply", "--probe-timeout", "-1"], "'--probe-timeout': -1.0 is not in the range 0<x"),
        (["plan", "--probe-timeout", "nan"], "'--probe-timeout': 'nan' is not a finite"),
    ],
)
def test_option_out_of_range_is_a_usage_error(
    args: list[str], message: str, tmp_path: Path
) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", "ranges", {"m": {"hosts": {"a": OLD}}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
    env.update(LITELLM_PROXY_URL=UNREACHABLE, LITELLM_PROXY_API_KEY="sk-ranges-test")
    run = fleet_sync([*args, "-f", str(fleet)], env)
    assert run.code == 1, run.out + run.err
    assert f"Invalid value for {message}" in run.err, run.err
    assert run.out == ""


def test_option_at_its_bounds_is_accepted(proxy: Proxy, tmp_path: Path, fleet_name: str) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {f"{fleet_name}-m": {"hosts": {}}})
    args = ["--concurrency", "1", "--timeout", "3600", "--confirm-timeout", "0"]
    run = fleet_sync(["apply", "-f", str(fleet), *args], proxy.env())
    assert run.code == 0, run.out + run.err


def test_dry_run_with_a_stale_saved_plan_is_refused(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    saved = tmp_path / "plan.json"
    run = fleet_sync(["plan", "-f", str(fleet), "--out", str(saved)], proxy.env())
    assert run.code == 0, run.err
    # Live state moves after the review: someone applies a different fleet.yaml.
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": NEW}}})
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    write_fleet(fleet, fleet_name, {model: {"hosts": {"a": OLD}}})
    run = fleet_sync(["apply", "-f", str(fleet), "--plan", str(saved), "--dry-run"], proxy.env())
    assert run.code == 3, run.out + run.err
    assert "is stale" in run.err
    assert run.out == ""  # the stale check comes before the preview
    route = proxy.route(route_id(fleet_name, model, "a"))
    assert route is not None and route["litellm_params"]["api_base"] == NEW  # nothing written


def test_dry_run_with_a_fresh_saved_plan_previews(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    saved = tmp_path / "plan.json"
    assert fleet_sync(["plan", "-f", str(fleet), "--out", str(saved)], proxy.env()).code == 0
    args = ["apply", "-f", str(fleet), "--plan", str(saved), "--dry-run", "--format", "json"]
    run = fleet_sync(args, proxy.env())
    assert run.code == 0, run.out + run.err
    assert json.loads(run.out)["hash"] == json.loads(saved.read_text())["hash"]
    assert proxy.ids(model) == []


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_dry_run_of_a_refused_plan_exits_like_apply(
    proxy: Proxy, tmp_path: Path, fleet_name: str, fmt: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_name, {model: {"hosts": {"a": OLD}}})
    assert fleet_sync(["apply", "-f", str(fleet)], proxy.env()).code == 0
    drained = {"a": {"name": "a", "api_base": OLD, "enabled": False}}
    write_fleet(fleet, fleet_name, {model: {"hosts": drained}})  # would leave m with no route

    preview = ["apply", "-f", str(fleet), "--dry-run", "--format", fmt]
    run = fleet_sync(preview, proxy.env())
    real = fleet_sync(["apply", "-f", str(fleet), "--format", fmt], proxy.env())
    assert run.code == real.code == 3, run.out + run.err + real.out + real.err
    assert f"model {model} would be left with no routes" in run.err
    if fmt == "json":
        assert json.loads(run.out)["refused"] == json.loads(real.out)["refused"] != []
    else:
        assert "REFUSED: " in run.out
    assert proxy.ids(model) == [route_id(fleet_name, model, "a")]  # nothing pruned

    forced = fleet_sync([*preview, "--force"], proxy.env())
    assert forced.code == 0, forced.out + forced.err  # --force: apply would go ahead
    assert proxy.ids(model) == [route_id(fleet_name, model, "a")]  # still a preview


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:abc", "is not a valid address (Invalid port: 'abc')"),
        ("http://[::1", "is not a valid address"),
        ("http://:4000", "has no host"),
    ],
)
def test_a_proxy_url_that_is_no_address_is_an_error_not_a_traceback(
    url: str, message: str, tmp_path: Path
) -> None:
    """Found by the outside attack: httpx raised InvalidURL from deep inside the client."""
    fleet = write_fleet(tmp_path / "fleet.yaml", "bad-url", {"m": {"hosts": {"a": OLD}}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
    env.update(LITELLM_PROXY_API_KEY="sk-bad-url-test")
    run = fleet_sync(["plan", "-f", str(fleet), "--proxy-url", url], env)
    assert run.code == 1, run.out + run.err
    assert message in run.err, run.err
