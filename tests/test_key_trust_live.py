"""Keys follow trust, through the real commands (issue 15): `propose` (the host-moved dispatch) and
`plan --probe` in a pull request's run send a host's upstream key only to an address fleet.yaml
at the trusted ref gives that host; the payload's or the pull request's new address is asked
without it, and automerge trusts only that keyless answer. Against the real LiteLLM, the fake
GitHub, and upstreams on 127.0.0.1 that record every Authorization header they receive. And a
probed host answering garbage or trickling is that host's verdict; the plan is still made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from sync.core.render import route_id
from sync.gitops.host_moved import NEEDS_KEY

from .support.fake_github import FakeGitHub
from .support.proxyharness import Proxy, Run, fleet_sync
from .support.upstream import Upstream, hostile, silent_address

SECRET = "sk-upstream-trust-live-0123456789"
KEY_VAR = "TEST_UPSTREAM_KEY"
BEARER = f"Bearer {SECRET}"


def fleet_doc(fleet: str, model: str, hosts: dict[str, str], **top: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "fleet": fleet,
        "defaults": {"api_key": f"os.environ/{KEY_VAR}"},
        **top,
        "models": {
            model: {
                "served_model": f"org/{model}",
                "hosts": [{"name": h, "api_base": a} for h, a in hosts.items()],
            }
        },
    }


class Repo:
    """A checkout of main with fleet.yaml committed (and known to the fake GitHub)."""

    def __init__(self, tmp: Path, data: dict[str, Any]) -> None:
        self.git = git.Repo.init(tmp / "repo", initial_branch="main")
        with self.git.config_writer() as config:
            config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
        self.fleet = Path(self.git.working_tree_dir or "") / "fleet.yaml"
        self.head = self.commit(data)

    def write(self, data: dict[str, Any]) -> None:
        self.fleet.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    def commit(self, data: dict[str, Any]) -> str:
        self.write(data)
        self.git.index.add(["fleet.yaml"])
        return str(self.git.index.commit("fleet").hexsha)


def environment(proxy: Proxy, **extra: str) -> dict[str, str]:
    """A run outside any pull request, holding the upstream key; extra sets GitHub's."""
    env = {k: v for k, v in proxy.env().items() if not k.startswith("GITHUB_")}
    return {**env, KEY_VAR: SECRET, **extra}


def applied(proxy: Proxy, repo: Repo, github: FakeGitHub | None = None) -> None:
    """apply on main; with GitHub, tagged with the repository as apply.yml tags them."""
    source = {"GITHUB_REPOSITORY": github.repo} if github else {}
    done = fleet_sync(["apply", "-f", str(repo.fleet)], environment(proxy, **source))
    assert done.code == 0, done.out + done.err


def propose(proxy: Proxy, github: FakeGitHub, repo: Repo, model: str, new: str, *flags: str) -> Run:
    """What the host-moved job runs: set-host on the checkout, then propose --probe."""
    github.git.seed_commit(repo.head, {"fleet.yaml": repo.fleet.read_bytes()}, "main")
    set_host = ["set-host", "-f", str(repo.fleet), "--api-base", new, model, "a"]
    moved = fleet_sync(set_host, {"NO_COLOR": "1"})
    assert moved.code == 0, moved.err
    env = environment(proxy, **github.env(GITHUB_REF_NAME="main"))
    run = fleet_sync(["propose", "--probe", *flags, "-f", str(repo.fleet), model, "a"], env)
    assert run.code == 0, run.out + run.err
    assert SECRET not in run.out + run.err
    return run


@pytest.mark.parametrize("automerge", [False, True], ids=["propose", "automerge"])
def test_propose_never_sends_the_key_to_the_payloads_address(
    automerge: bool, proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    stays = Upstream("stays", [f"org/{model}"], key=SECRET).start()
    new = Upstream("new", [f"org/{model}"]).start()  # serves without a key
    try:
        data = fleet_doc(fleet_name, model, {"a": silent_address(), "b": stays.url})
        repo = Repo(tmp_path, data)
        applied(proxy, repo, fake_github)
        run = propose(proxy, fake_github, repo, model, new.url, *(["--automerge"] * automerge))
    finally:
        stays.stop()
        new.stop()
    assert new.authorizations == [None]  # the payload's address: asked, never given the key
    assert stays.authorizations == [BEARER]  # b is where HEAD puts it: its key goes there
    assert "probe: serves org/" in run.out and "(answered without a key); key not sent: " in run.out
    assert f"fleet.yaml at HEAD ({repo.head[:12]}) does not give host a this address" in run.out
    (pull,) = fake_github.git.pulls()
    # Serving the declared model without a key is what automerge may trust: merged.
    assert bool(pull["merged_at"]) is automerge, run.out
    (comment,) = fake_github.comments_on(pull["number"])
    assert "✅ serves" in comment["body"] and "answered without a key" in comment["body"]


def test_automerge_leaves_a_new_address_that_needs_a_key_for_review(
    proxy: Proxy, fake_github: FakeGitHub, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    keyed = Upstream("keyed", [f"org/{model}"], key=SECRET).start()
    try:
        repo = Repo(tmp_path, fleet_doc(fleet_name, model, {"a": silent_address()}))
        applied(proxy, repo, fake_github)
        run = propose(proxy, fake_github, repo, model, keyed.url, "--automerge")
    finally:
        keyed.stop()
    assert keyed.authorizations == [None]
    assert f"not merged automatically: {NEEDS_KEY}; it waits for a review" in run.out
    assert "probe: 1 host(s): 1 need a key (1 asked without their key)" in run.out
    (pull,) = fake_github.git.pulls()
    assert pull["state"] == "open" and not pull["merged_at"]
    assert fake_github.git.dispatches == []
    (comment,) = fake_github.comments_on(pull["number"])
    assert "🔑 needs a key (GET /models answered 401 without a key)" in comment["body"]
    live = proxy.route(route_id(fleet_name, model, "a"))
    assert live is not None and live["litellm_params"]["api_base"] != keyed.url


def pull_request_env(proxy: Proxy, tmp: Path, base: str) -> dict[str, str]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "base": {"sha": base}}}))
    return environment(proxy, GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event))


def probed(proxy: Proxy, repo: Repo, env: dict[str, str], *extra: str) -> dict[str, Any]:
    run = fleet_sync(["plan", "--probe", "-f", str(repo.fleet), "--format", "json", *extra], env)
    assert run.code == 0, run.out + run.err
    assert SECRET not in run.out + run.err
    return {h["host"]: h for h in json.loads(run.out)["health"]}


def test_plan_probe_on_a_pull_request_sends_keys_only_to_addresses_of_its_base(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    model = f"{fleet_name}-m"
    ups = {n: Upstream(n, [f"org/{model}"], key=SECRET).start() for n in ("a", "b", "c", "d")}
    try:
        base = fleet_doc(fleet_name, model, {"a": ups["a"].url, "b": ups["b"].url})
        repo = Repo(tmp_path, base)
        applied(proxy, repo)
        for upstream in ups.values():
            upstream.authorizations.clear()
        repo.git.git.checkout("-b", "pr")
        head = fleet_doc(fleet_name, model, {"a": ups["c"].url, "b": ups["b"].url})
        head["models"][model]["hosts"].append({"name": "d", "api_base": ups["d"].url})
        repo.commit(head)  # the pull request moves a and adds d

        health = probed(proxy, repo, pull_request_env(proxy, tmp_path, repo.head))
        assert ups["b"].authorizations == [BEARER]  # unchanged since the base
        assert ups["c"].authorizations == [None] and ups["d"].authorizations == [None]
        assert ups["a"].authorizations == []  # no longer in fleet.yaml: not asked
        assert (health["b"]["state"], health["b"]["key_sent"]) == ("serves", True)
        for host in ("a", "d"):
            assert (health[host]["state"], health[host]["key_sent"]) == ("needs_key", False)
            assert health[host]["key_note"] == (
                f"key not sent: fleet.yaml at the pull request's base ({repo.head[:12]}) does "
                f"not give host {host} this address and api_key (not reviewed)"
            )

        # --base-ref outside an event does the same; the same plan run locally trusts the file.
        probed(proxy, repo, environment(proxy), "--base-ref", "main")
        assert ups["c"].authorizations == [None, None]
        probed(proxy, repo, environment(proxy))
        assert ups["c"].authorizations == [None, None, BEARER]

        # A base the checkout does not have (a shallow clone): no address gets a key.
        unknown = probed(proxy, repo, pull_request_env(proxy, tmp_path, "f" * 40))
        assert ups["b"].authorizations[-1] is None
        assert unknown["b"]["state"] == "needs_key"
        assert "cannot be read" in unknown["b"]["key_note"]
        assert unknown["b"]["key_note"].endswith(": no address is trusted with a key")
    finally:
        for upstream in ups.values():
            upstream.stop()


def test_a_hostile_probe_answer_is_that_hosts_verdict_and_the_plan_goes_on(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """A recycled pod address answering garbage must not block every other change."""
    model = f"{fleet_name}-m"
    good = Upstream("good", [f"org/{model}"]).start()
    try:
        with (
            hostile(b"[" * 200_000) as deep,
            hostile(b"[" * 3_000_000) as huge,
            hostile(trickle="body") as dripping,
            hostile(trickle="headers") as slow,
        ):
            hosts = {"ok": good.url, "deep": deep.url, "huge": huge.url}
            hosts.update(drip=dripping.url, slow=slow.url)
            repo = Repo(tmp_path, fleet_doc(fleet_name, model, hosts, health="require"))
            env = environment(proxy)
            run = fleet_sync(
                ["plan", "-f", str(repo.fleet), "--format", "json", "--probe-timeout", "1"], env
            )
            assert run.code == 0, run.out + run.err
            text = fleet_sync(["plan", "-f", str(repo.fleet), "--probe-timeout", "1"], env)
            applied_run = fleet_sync(
                ["apply", "-f", str(repo.fleet), "--probe-timeout", "1"], environment(proxy)
            )
    finally:
        good.stop()
    plan = json.loads(run.out)
    [create] = plan["changes"]
    assert (create["action"], create["host"]) == ("create", "ok")
    verdicts = {w["host"]: w["health"]["detail"] for w in plan["withheld"]}
    assert verdicts == {
        "deep": "the answer is nested deeper than 64 levels",
        "huge": "the answer is larger than 1024 KiB",
        "drip": "no complete answer within 1s",
        "slow": "no complete answer within 1s",
    }
    assert text.code == 0 and "+1 create, ~0 update, -0 prune, 4 withheld" in text.out
    assert applied_run.code == 4, applied_run.out + applied_run.err  # the good host was created
    assert "1 done, 0 failed, 0 unconfirmed, 0 skipped, 4 withheld" in applied_run.out
    assert proxy.route(route_id(fleet_name, model, "ok")) is not None


def test_with_targets_a_key_goes_only_where_the_base_sends_it_on_that_target(
    proxy: Proxy, tmp_path: Path, fleet_name: str
) -> None:
    """Attack F3: planning prod in a pull request's run, an address the base reviewed for
    staging only gets no key, and the base's overlay key for prod is sent (it was reviewed)."""
    model = f"{fleet_name}-m"
    prod_key = "sk-upstream-prod-overlay-9876543210"
    a = Upstream("a", [f"org/{model}"], key=prod_key).start()
    x = Upstream("x", [f"org/{model}"], key=SECRET).start()
    try:
        targets = {
            "staging": {"proxy_url": "http://127.0.0.1:9", "api_key": "os.environ/T_STAGING"},
            "prod": {"proxy_url": "os.environ/T_PROD_URL", "api_key": "os.environ/T_PROD_KEY"},
        }
        base = fleet_doc(fleet_name, model, {"a": a.url, "x": x.url}, targets=targets)
        spec = base["models"][model]
        spec["hosts"][0]["targets"] = {"prod": {"api_key": "os.environ/T_PROD_UP_KEY"}}
        spec["hosts"][1]["targets"] = ["staging"]
        repo = Repo(tmp_path, base)
        repo.git.git.checkout("-b", "pr")
        del spec["hosts"][1]["targets"]  # the pull request sends x to prod too
        repo.commit(base)
        env = environment(
            proxy, T_PROD_URL=proxy.url, T_PROD_KEY=proxy.api_key, T_PROD_UP_KEY=prod_key
        )
        run = fleet_sync(
            ["plan", "--probe", "-f", str(repo.fleet), "--target", "prod", "--base-ref", "main",
             "--format", "json"],
            env,
        )  # fmt: skip
        assert run.code == 0, run.out + run.err
        assert SECRET not in run.out + run.err and prod_key not in run.out + run.err
        [planned] = json.loads(run.out)["targets"]
        health = {h["host"]: h for h in planned["health"]}
        assert a.authorizations == [f"Bearer {prod_key}"] and health["a"]["key_sent"]
        assert x.authorizations == [None] and not health["x"]["key_sent"]
        assert "(not reviewed)" in health["x"]["key_note"]
    finally:
        a.stop()
        x.stop()
