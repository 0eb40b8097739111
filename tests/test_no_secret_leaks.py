"""No secret in any output (issue 8, item 5): every command in every format, against the real
LiteLLM and the fake GitHub, with known secrets planted wherever they could leak.

Planted:
- the proxy's admin key;
- a secret the proxy holds in its environment, which LiteLLM resolves into a route on a key not
  named like a secret (`organization: os.environ/UPSTREAM_ORG_SECRET`), and a database URL with
  its password held the same way (`api_version: os.environ/UPSTREAM_DSN`): absent from
  fleet-sync's environment, so only redaction by provenance can hide them (the final scrub does
  not know them). The proxy's own master key and database URL stood here once; validate now
  refuses a reference to them, since LiteLLM would send them to the host (support/proxysecrets.py
  says what an external proxy must hold);
- the value of a variable fleet.yaml references that fleet-sync's environment holds, and the
  GitHub token, both as names of routes made by hand (the final scrub must catch them);
- user:password@ in the api_base of routes made by hand, in --proxy-url and in GITHUB_API_URL;
- values fleet-sync cannot know, edited by hand into a route it owns: at a path whose desired
  value is a reference (what LiteLLM's resolution produces) and inside a list at a path
  fleet.yaml does not set. The userinfo mask and the scrub cannot catch these: only redaction by
  provenance does.

Everything fleet-sync prints or writes, and everything the fake GitHub receives, is searched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sync.core.render import route_id

from .support.fake_github import FakeGitHub
from .support.proxyharness import Proxy, Run, fleet_sync, write_fleet
from .support.proxysecrets import DSN_REF, DSN_SECRET, ORG_REF, ORG_SECRET, PROXY_SECRETS, resolved

UPSTREAM_VARIABLE = "PLANTED_UPSTREAM_KEY"
UPSTREAM_KEY = "planted-upstream-key-6f1c2a9e"
GITHUB_TOKEN = "ghs_planted_token_0b7e5d4c3a21"
HAND_PASSWORD = "hand-pass-93ac1e"
DRIFT_PASSWORD = "drift-pass-41be07"
HAND_RESOLVED = "hand-resolved-value-8d2f61"
HAND_LISTED = "hand-listed-value-3e90b7"
PROXY_URL_PASSWORD = "proxy-pass-27dd0f"
GITHUB_URL_PASSWORD = "gh-url-pass-5a0c44"
OLD = "http://216.243.220.245:16643/v1"
NEW = "http://103.196.86.105:17140/v1"


class Outputs:
    """Every text that left fleet-sync, labelled by where it went."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []

    def run(self, args: list[str], env: dict[str, str]) -> Run:
        done = fleet_sync(args, env)
        label = " ".join(a for a in args if not a.startswith("/"))
        self.texts += [(f"stdout of {label}", done.out), (f"stderr of {label}", done.err)]
        return done

    def add(self, label: str, text: str) -> None:
        self.texts.append((label, text))

    def leaks(self, secrets: dict[str, str]) -> list[str]:
        return [
            f"{name} in {label}"
            for name, secret in secrets.items()
            for label, text in self.texts
            if secret in text
        ]

    def joined(self) -> str:
        return "\n".join(text for _label, text in self.texts)


def make_by_hand(proxy: Proxy, body: dict[str, Any]) -> None:
    with proxy.http() as http:
        answer = http.post("/model/new", json=body)
    assert answer.status_code == 200, answer.text


def test_no_secret_in_any_output_of_any_command(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {
            model: {
                "litellm_params": {
                    "organization": ORG_REF,
                    "api_version": DSN_REF,
                    "rpm": 60,
                },
                "hosts": {"a": OLD, "b": NEW},
            }
        },
        owns="model_groups",
        defaults={"api_key": f"os.environ/{UPSTREAM_VARIABLE}"},
    )
    # Routes made by hand: one of our model (claimed, so pruned and shown) whose address carries
    # credentials; one of another model whose name and id are secrets (listed as ignored).
    make_by_hand(
        proxy,
        {
            "model_name": model,
            "litellm_params": {
                "model": "hosted_vllm/org/m",
                "api_base": f"http://hand-user:{HAND_PASSWORD}@10.1.2.3:8000/v1",
            },
            "model_info": {},
        },
    )
    make_by_hand(
        proxy,
        {
            "model_name": f"{fleet_name}-leak-{UPSTREAM_KEY}",
            "litellm_params": {"model": "hosted_vllm/org/x", "api_base": OLD},
            "model_info": {"id": f"{fleet_name}-leak-{GITHUB_TOKEN}"},
        },
    )

    github = FakeGitHub(token=GITHUB_TOKEN).start()
    try:
        pr = github.add_pull_request(5)
        github.set_commit_pulls("f00d", [pr])
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": pr, "base": {"sha": "0" * 40}}}))
        summary = tmp_path / "summary.md"
        env = {
            k: v for k, v in proxy.env().items() if k != "DATABASE_URL" and k not in PROXY_SECRETS
        }
        env.update(github.env(GITHUB_EVENT_PATH=str(event), GITHUB_STEP_SUMMARY=str(summary)))
        reports = tmp_path / "reports"  # the full reports the workflow uploads as an artifact
        env.update({UPSTREAM_VARIABLE: UPSTREAM_KEY, "GITHUB_SHA": "f00d"})
        env["FLEET_SYNC_REPORT_DIR"] = str(reports)
        out = Outputs()
        f = ["-f", str(fleet)]
        quick = ["--timeout", "10", "--confirm-timeout", "2"]

        for fmt in ("text", "github", "json"):
            out.run(["validate", *f, "--format", fmt], env)
        out.run(["render", *f], env)
        out.run(["render", *f, "-o", str(tmp_path / "config.yaml")], env)

        def plans() -> None:
            for fmt in ("text", "markdown", "json"):
                out.run(["plan", *f, "--format", fmt], env)
            out.run(["plan", *f, "--out", str(tmp_path / "plan.json")], env)
            out.add("--out plan.json", (tmp_path / "plan.json").read_text())
            out.run(["plan", *f, "--github-comment"], env)
            for fmt in ("text", "json"):
                out.run(["apply", *f, *quick, "--dry-run", "--format", fmt], env)

        plans()  # creates, and the prune of the route with user:pass@ in its address
        out.run(["apply", *f, *quick, "--github-comment"], env)

        # LiteLLM resolved the references on keys not named like secrets: the plant took.
        live = proxy.route(route_id(fleet_name, model, "a"))
        assert live is not None, out.joined()
        external = proxy.name is None
        org_secret = resolved(external, ORG_SECRET, live["litellm_params"].get("organization"))
        database_url = resolved(external, DSN_SECRET, live["litellm_params"].get("api_version"))
        assert database_url.startswith("postgres"), "UPSTREAM_DSN is no postgresql:// URL"
        database_password = urlsplit(database_url).password or ""
        assert len(database_password) >= 8

        # Hand edits of routes the fleet owns: credentials in an address, a value where fleet.yaml
        # has a reference, a value in a list where fleet.yaml sets nothing.
        rid_a, rid_b = (route_id(fleet_name, model, h) for h in ("a", "b"))
        edited = f"http://ops:{DRIFT_PASSWORD}@10.9.8.7:8000/v1"
        edits = {
            rid_a: {"organization": HAND_RESOLVED, "extra_body": {"tags": ["ok", HAND_LISTED]}},
            rid_b: {"api_base": edited},
        }
        with proxy.http() as http:
            for rid, params in edits.items():
                answer = http.patch(f"/model/{rid}/update", json={"litellm_params": params})
                assert answer.status_code == 200, answer.text
        route_a = proxy.route(rid_a)
        assert route_a is not None and route_a["litellm_params"]["organization"] == HAND_RESOLVED
        # fleet.yaml swaps its references: the plans compare those paths through the digest
        # (LiteLLM lists the resolved values) and must say so without showing either value.
        swapped = {
            "organization": DSN_REF,
            "api_version": ORG_REF,
            "rpm": 60,
        }
        write_fleet(
            fleet,
            fleet_name,
            {model: {"litellm_params": swapped, "hosts": {"a": OLD, "b": NEW}}},
            owns="model_groups",
            defaults={"api_key": f"os.environ/{UPSTREAM_VARIABLE}"},
        )

        plans()  # updates: live values resolved from references, before and after
        for fmt in ("text", "markdown", "json"):
            out.run(["drift", *f, "--format", fmt, "--github-issue"], env)
        out.run(["apply", *f, *quick, "--format", "json", "--github-comment"], env)

        # Credentials in the addresses of the proxy and of GitHub: refused, never echoed.
        pod = urlsplit(proxy.url)
        with_password = f"http://admin:{PROXY_URL_PASSWORD}@{pod.hostname}:{pod.port}"
        for command in (["plan"], ["apply", *quick], ["drift"]):
            run = out.run([*command, *f, "--proxy-url", with_password], env)
            assert run.code == 1 and "carries credentials" in run.err, run.err
        gh_url = urlsplit(github.url)
        bad_github = {
            **env,
            "GITHUB_API_URL": f"http://x:{GITHUB_URL_PASSWORD}@{gh_url.hostname}:{gh_url.port}",
        }
        run = out.run(["plan", *f, "--github-comment"], bad_github)
        assert run.code == 1 and "GITHUB_API_URL" in run.err, run.err

        out.add("config.yaml", (tmp_path / "config.yaml").read_text())
        out.add("job summary", summary.read_text())
        artifacts = sorted(reports.iterdir())
        for path in artifacts:
            out.add(f"artifact {path.name}", path.read_text())
        with github.lock:
            received = [c.json for c in github.calls if c.json is not None]
            stored = [c["body"] for c in github.comments.values()]
            stored += [i["body"] for i in github.issues.values()]
        out.add("requests GitHub received", json.dumps(received))
        out.add("comments and issues on GitHub", "\n".join(stored))
    finally:
        github.stop()

    secrets = {
        "the admin key": proxy.api_key,
        "the proxy's UPSTREAM_ORG_SECRET": org_secret,
        "the proxy's UPSTREAM_DSN": database_url,
        "the password in UPSTREAM_DSN": database_password,
        "the GitHub token": GITHUB_TOKEN,
        f"${UPSTREAM_VARIABLE}": UPSTREAM_KEY,
        "the password of a hand-made api_base": HAND_PASSWORD,
        "the password of a hand-edited api_base": DRIFT_PASSWORD,
        "the password in --proxy-url": PROXY_URL_PASSWORD,
        "the password in GITHUB_API_URL": GITHUB_URL_PASSWORD,
        "a live value where fleet.yaml has a reference": HAND_RESOLVED,
        "a live value in a list fleet.yaml does not set": HAND_LISTED,
    }
    assert out.leaks(secrets) == []
    everything = out.joined()
    # The planted values did reach the outputs, masked: the check above has teeth.
    assert "http://***@10.1.2.3:8000/v1" in everything
    assert "http://***@10.9.8.7:8000/v1" in everything
    assert f"{fleet_name}-leak-***" in everything
    assert f"(hidden: a live value where fleet.yaml gives {ORG_REF})" in everything
    assert any(c.method == "POST" and "/issues" in c.path for c in github.calls)
    assert github.comments_on(pr), "no comment was posted"
    assert os.path.getsize(summary) > 0
    assert {p.suffix for p in artifacts} == {".md", ".json"}


SHAPED_TOKEN = "sk-hand-edited-7c1f0e9a2b"  # no key of this run: only redaction can hide it
SHAPED_RANDOM = "Qm7Xv2Lr9Tz4Wb8Nc3Vd6Hf1Jg5Pa0Ys"  # random base62: a key without a prefix


def test_no_live_value_of_a_credentials_shape_in_a_plan(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Hand edits on the proxy that fleet.yaml could never hold (validate refuses them): a token
    in a route's api_base path and a random key in its model_info, and an untagged route of the
    model (pruned) with a token in its path. No plan format shows any of them, and neither is a
    secret the final scrub knows: redaction by its shape alone hides them."""
    model = f"{fleet_name}-m"
    fleet = write_fleet(
        tmp_path / "fleet.yaml",
        fleet_name,
        {model: {"model_info": {"description": "team a"}, "hosts": {"a": OLD}}},
        owns="model_groups",
    )
    env = proxy.env()
    rid = route_id(fleet_name, model, "a")
    created = [rid, f"{fleet_name}-hand"]
    try:
        applied = fleet_sync(["apply", "-f", str(fleet), "--confirm-timeout", "30"], env)
        assert applied.code == 0, applied.out + applied.err
        with proxy.http() as http:
            edit = {
                "litellm_params": {"api_base": f"http://10.4.5.6:8000/{SHAPED_TOKEN}/v1"},
                "model_info": {"description": f"team {SHAPED_RANDOM}"},
            }
            answer = http.patch(f"/model/{rid}/update", json=edit)
            assert answer.status_code == 200, answer.text
        make_by_hand(
            proxy,
            {
                "model_name": model,
                "litellm_params": {
                    "model": "hosted_vllm/org/m",
                    "api_base": f"http://10.4.5.7:8000/{SHAPED_TOKEN}/v1",
                },
                "model_info": {"id": created[1]},
            },
        )
        live = proxy.route(rid)
        assert live is not None
        assert SHAPED_TOKEN in live["litellm_params"]["api_base"]  # the edits took
        assert SHAPED_RANDOM in live["model_info"]["description"]

        outputs, stdout = {}, {}
        for fmt in ("text", "markdown", "json"):
            run = fleet_sync(["plan", "-f", str(fleet), "--format", fmt], env)
            assert run.code == 0, run.out + run.err
            outputs[fmt], stdout[fmt] = run.out + run.err, run.out
        for fmt, text in outputs.items():
            assert SHAPED_TOKEN not in text and SHAPED_RANDOM not in text, (fmt, text)
        assert "litellm_params.api_base: (hidden: looks like a credential) -> " in outputs["text"]
        assert "model_info.description: (hidden: looks like a credential) -> " in outputs["text"]
        assert "api_base: (hidden: looks like a credential)" in outputs["markdown"]  # the prune
        changes = json.loads(stdout["json"])["changes"]  # stderr may carry notes
        assert [c["action"] for c in changes] == ["update", "delete"]
    finally:
        with proxy.http() as http:
            for rid_created in created:
                http.post("/model/delete", json={"id": rid_created})
