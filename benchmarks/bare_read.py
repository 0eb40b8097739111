"""The least any tool must do to plan: load fleet.yaml with libyaml, GET every page of the route
listing and json.loads it. No validation, no model, no comparison: the floor `fleet-sync plan`
is measured against (benchmarks/scale.py runs it right after the plan, against the same server).

    python benchmarks/bare_read.py FLEET_YAML URL [--size 200]

Prints the routes read. Standard library and PyYAML only, one keep-alive connection.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
from urllib.parse import urlsplit

import yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("fleet")
    parser.add_argument("url")
    parser.add_argument("--size", type=int, default=200)
    options = parser.parse_args()
    with open(options.fleet, "rb") as handle:
        fleet = yaml.load(handle, Loader=yaml.CSafeLoader)
    assert isinstance(fleet, dict) and fleet.get("models")
    where = urlsplit(options.url)
    connection = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port)
    headers = {"Authorization": f"Bearer {os.environ.get('LITELLM_PROXY_API_KEY', '')}"}
    routes, page, pages = 0, 1, 1
    while page <= pages:
        connection.request(
            "GET", f"/v2/model/info?page={page}&size={options.size}", headers=headers
        )
        answer = connection.getresponse()
        body = json.loads(answer.read())
        routes += len(body["data"])
        pages = body["total_pages"]
        page += 1
    connection.close()
    print(routes)


if __name__ == "__main__":
    main()
