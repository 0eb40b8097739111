"""The values validate takes are the values LiteLLM's router loads, on the real proxy (matrix).

Found by the outside attack: `litellm_params: {rpm: 99999999999999999999}` validated; LiteLLM
stored the row, but its database layer keeps integers only in -2^63..2^64-1 and hands any other
back as a float, which the router's reload (LiteLLM_Params.model_validate, in one loop over
every row) refuses: from then on no route change on the proxy took effect, for every fleet, and
LiteLLM's /model/delete could not remove the row. validate now refuses every integer outside
that range (sync/litellm/convergence.py). Here: the bounds, applied by fleet-sync, load and read
back exactly; one past a bound, created directly, is stored and ends the reload at its row, so
every route written after it is never loaded (then removed with SQL, the only way out); elsewhere
it comes back as a float. Nesting at the limit
and a route near the size limit go through apply and read back too.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sync.core.render import route_id
from sync.fleet.model import load_fleet
from sync.fleet.problems import FleetError
from sync.litellm.convergence import INT_MAX, INT_MIN, MAX_DEPTH, MAX_ROUTE_BYTES

from .support.proxyharness import Proxy, database_url, fleet_sync
from .support.upstream import silent_address


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def fleet_doc(fleet: str, model: str, **sections: Any) -> dict[str, Any]:
    host = {"name": "a", "api_base": silent_address()}
    entry = {"served_model": f"org/{model}", **sections, "hosts": [host]}
    return {"version": 1, "fleet": fleet, "models": {model: entry}}


def validates(path: Path, doc: dict[str, Any]) -> bool:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    try:
        load_fleet(path)
    except FleetError:
        return False
    return True


@contextmanager
def sql(proxy: Proxy) -> Iterator[Any]:
    url = database_url(proxy)
    if url is None or shutil.which("psql") is None:
        pytest.skip("needs psql and the proxy's DATABASE_URL: only SQL removes the row it makes")

    def run(query: str) -> str:
        done = subprocess.run(
            ["psql", url, "-qAt", "-c", query],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout.strip()

    yield run


TABLE = "LiteLLM_ProxyModelTable"


def reached_after(run: Callable[[str], str], first: str, then: str) -> bool:
    """Whether a scan of the table in its physical order (LiteLLM's reload) meets `then` after
    `first`."""
    order = run(
        f"select model_id from \"{TABLE}\" where model_id in ('{first}', '{then}') order by ctid"
    ).split()
    return order == [first, then]


def listed(proxy: Proxy, rid: str) -> dict[str, Any] | None:
    return proxy.route(rid)


def create(http: httpx.Client, rid: str, model: str, **params: Any) -> httpx.Response:
    body = {
        "model_name": model,
        "litellm_params": {"model": f"hosted_vllm/org/{model}", "api_base": silent_address()}
        | params,
        "model_info": {"id": rid},
    }
    return http.post("/model/new", json=body)


@pytest.mark.litellm_matrix
def test_the_bounds_validate_takes_load_and_read_back(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    doc = fleet_doc(
        fleet_name,
        model,
        litellm_params={"rpm": INT_MAX, "tpm": INT_MIN, "extra_body": nested(MAX_DEPTH)},
        model_info={
            "bounds": [INT_MIN, INT_MAX],
            "deep": nested(MAX_DEPTH),
            "note": "x" * (MAX_ROUTE_BYTES - 2048),
        },
    )
    fleet = tmp_path / "fleet.yaml"
    assert validates(fleet, doc)
    try:
        run = fleet_sync(["apply", "-f", str(fleet)], proxy.env())
        assert run.code == 0, run.out + run.err
        again = fleet_sync(["plan", "-f", str(fleet), "--detailed-exitcode"], proxy.env())
        assert again.code == 0, again.out + again.err  # every value read back as written
        route = listed(proxy, route_id(fleet_name, model, "a"))
        assert route is not None
        assert route["litellm_params"]["rpm"] == INT_MAX
        assert route["litellm_params"]["tpm"] == INT_MIN
        assert route["model_info"]["bounds"] == [INT_MIN, INT_MAX]
        assert route["model_info"]["deep"] == nested(MAX_DEPTH)
    finally:
        empty = tmp_path / "empty.yaml"
        empty.write_text(f"version: 1\nfleet: {fleet_name}\nmodels: {{}}\n", encoding="utf-8")
        fleet_sync(["apply", "-f", str(empty), "--force"], proxy.env())


@pytest.mark.litellm_matrix
@pytest.mark.parametrize("beyond", [INT_MAX + 1, INT_MIN - 1])
def test_one_past_a_bound_ends_the_reload_at_its_row_and_validate_refuses_it(
    proxy: Proxy, tmp_path: Path, fleet_name: str, beyond: int
) -> None:
    model = f"{fleet_name}-m"
    assert not validates(
        tmp_path / "fleet.yaml", fleet_doc(fleet_name, model, litellm_params={"rpm": beyond})
    )
    poisoned, later, untyped = (f"{fleet_name}-{n}" for n in ("poisoned", "later", "untyped"))
    with sql(proxy) as run, proxy.http() as http:
        try:
            # Elsewhere than an integer field it loads, as a float: it never reads back.
            assert create(http, untyped, model, x_note=beyond).status_code == 200
            route = listed(proxy, untyped)
            assert route is not None and route["litellm_params"]["x_note"] == float(beyond)
            assert isinstance(route["litellm_params"]["x_note"], float)
            # In an integer field: stored, never loaded, and the reload ends at it. The reload
            # reads the rows without ORDER BY (table order); rows it reaches after this one are
            # never loaded, so a write whose row lands after it answers 500 and one that
            # PostgreSQL puts in free space before it still loads. Compacting the table first
            # makes new rows append (the usual case on a proxy that has seen deletes is either).
            run(f'vacuum full "{TABLE}"')
            create(http, poisoned, model, rpm=beyond)
            assert run(f"select count(*) from \"{TABLE}\" where model_id = '{poisoned}'") == "1"
            assert listed(proxy, poisoned) is None
            answer = create(http, later, model).status_code
            if reached_after(run, poisoned, later):
                assert answer == 500
                assert listed(proxy, later) is None
            else:
                assert answer == 200
            assert http.post("/model/delete", json={"id": poisoned}).status_code != 200
        finally:
            run(f"delete from \"{TABLE}\" where model_id in ('{poisoned}', '{later}', '{untyped}')")
        # Without the row the reload works again: the next write is loaded.
        try:
            assert create(http, later, model).status_code == 200
            assert listed(proxy, later) is not None
        finally:
            http.post("/model/delete", json={"id": later})
