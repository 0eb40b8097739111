"""One fleet.yaml, two real LiteLLM proxies (issue 17): staging is the suite's proxy, prod a
second one started once per session (or given by FLEET_SYNC_SECOND_PROXY_URL(S) and
FLEET_SYNC_SECOND_PROXY_API_KEY). Each is reached through a recording fault proxy, so what a
run sent to each target is counted, never guessed."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from sync.core.render import route_id
from sync.github.client import DRIFT_LABEL, drift_marker
from sync.github.comment import PlanComment
from sync.gitops.loops import DRIFT_PER_TARGET

from .support.fake_github import ACTIONS_BOT, FakeGitHub
from .support.faultproxy import Fault, FaultProxy
from .support.proxyharness import Proxy, Run, fleet_sync, remove_fleet

ONE_HOST = {"name": "a", "api_base": "http://127.0.0.1:9/v1"}
OUTPUTS: list[str] = []  # every stdout, stderr and file the tests read: no key may be in one


class Pair:
    """staging and prod behind recording proxies, and the fleet file of one test."""

    def __init__(self, staging: Proxy, prod: Proxy, fleet_file: Path) -> None:
        self.staging, self.prod = staging, prod
        self.staging_fp = FaultProxy(staging.url)
        self.prod_fp = FaultProxy(prod.url)
        self.fleet_file = fleet_file
        self.extra: dict[str, str] = {}  # GitHub's environment, when a test posts there

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_PROXY_")}
        return {
            **env,
            "NO_COLOR": "1",
            "T_STAGING_URL": self.staging_fp.url,
            "T_STAGING_KEY": self.staging.api_key,
            "T_PROD_URL": self.prod_fp.url,
            "T_PROD_KEY": self.prod.api_key,
            **self.extra,
        }

    def run(self, *args: str) -> Run:
        done = fleet_sync(
            [args[0], "-f", str(self.fleet_file), *args[1:]], self.env(), self.fleet_file.parent
        )
        OUTPUTS.extend([done.out, done.err])
        return done

    def writes(self, fp: FaultProxy) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in fp.log if r.is_write]

    def close(self) -> None:
        self.staging_fp.close()
        self.prod_fp.close()


@pytest.fixture
def pair(proxy: Proxy, prod_proxy: Proxy, tmp_path: Path, fleet_name: str) -> Iterator[Pair]:
    made = Pair(proxy, prod_proxy, tmp_path / "fleet.yaml")
    try:
        yield made
    finally:
        made.close()
        for side in (proxy, prod_proxy):  # a reused proxy keeps nothing of ours
            remove_fleet(side, fleet_name)
    for side in (proxy, prod_proxy):
        assert not any(side.api_key in text for text in OUTPUTS)


def write(path: Path, fleet: str, models: dict[str, Any]) -> None:
    doc = {
        "version": 1,
        "fleet": fleet,
        "targets": {
            "staging": {
                "proxy_url": "os.environ/T_STAGING_URL",
                "api_key": "os.environ/T_STAGING_KEY",
            },
            "prod": {
                "proxy_url": "os.environ/T_PROD_URL",
                "api_key": "os.environ/T_PROD_KEY",
                "after": ["staging"],
            },
        },
        "models": models,
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def hosts_on(proxy: Proxy, fleet: str) -> dict[str, dict[str, Any]]:
    """host -> litellm_params of the fleet's routes the proxy lists."""
    return {
        r["model_info"]["fleet_sync_host"]: r["litellm_params"]
        for r in proxy.routes()
        if r["model_info"].get("fleet_sync_fleet") == fleet
    }


def test_limits_overlays_and_a_prune_stay_on_their_target(pair: Pair, fleet_name: str) -> None:
    model = f"{fleet_name}-m"
    write(pair.fleet_file, fleet_name, {
        model: {
            "served_model": "org/m",
            "targets": {"staging": {}, "prod": {"litellm_params": {"rpm": 600}}},
            "hosts": [
                {"name": "a", "api_base": "http://127.0.0.1:9/v1"},
                {"name": "b", "api_base": "http://127.0.0.1:10/v1", "targets": ["staging"]},
            ],
        }
    })  # fmt: skip
    # A dry run over targets whose plans are all safe previews and writes nothing anywhere.
    preview = pair.run("apply", "--dry-run")
    assert preview.code == 0, preview.out + preview.err
    assert preview.out.count("=== target") == 2 and "done" not in preview.out, preview.out
    assert pair.writes(pair.staging_fp) == pair.writes(pair.prod_fp) == []
    applied = pair.run("apply")
    assert applied.code == 0, applied.out + applied.err
    assert applied.out.index("=== target staging ===") < applied.out.index("=== target prod ===")
    staging, prod = hosts_on(pair.staging, fleet_name), hosts_on(pair.prod, fleet_name)
    assert sorted(staging) == ["a", "b"] and sorted(prod) == ["a"]  # b limited to staging
    assert prod["a"].get("rpm") == 600 and "rpm" not in staging["a"]  # prod's overlay only
    again = pair.run("plan", "--detailed-exitcode")
    assert again.code == 0 and again.out.count("No changes.") == 2, again.out + again.err

    # b leaves fleet.yaml: a prune on staging alone never reads nor writes prod.
    write(pair.fleet_file, fleet_name, {
        model: {
            "served_model": "org/m",
            "targets": {"staging": {}, "prod": {"litellm_params": {"rpm": 600}}},
            "hosts": [{"name": "a", "api_base": "http://127.0.0.1:9/v1"}],
        }
    })  # fmt: skip
    pair.prod_fp.clear_log()
    pruned = pair.run("apply", "--target", "staging")
    assert pruned.code == 0, pruned.out + pruned.err
    assert "=== target prod ===" not in pruned.out
    assert pair.prod_fp.log == []  # --target staging sent nothing to prod
    assert sorted(hosts_on(pair.staging, fleet_name)) == ["a"]
    assert sorted(hosts_on(pair.prod, fleet_name)) == ["a"]


def test_staging_that_cannot_converge_holds_prod_without_a_write(
    pair: Pair, fleet_name: str, tmp_path: Path
) -> None:
    model = f"{fleet_name}-m"
    write(pair.fleet_file, fleet_name, {
        model: {"served_model": "org/m", "hosts": [ONE_HOST]}
    })  # fmt: skip
    saved = tmp_path / "plan.json"
    planned = pair.run("plan", "--format", "json", "--out", str(saved))
    assert planned.code == 0, planned.err
    document = json.loads(planned.out)
    assert [t["target"] for t in document["targets"]] == ["staging", "prod"]
    assert all(t["hash"].startswith("sha256:") for t in document["targets"])
    OUTPUTS.append(saved.read_text(encoding="utf-8"))

    pair.staging_fp.add_rule("POST", r"/model/new", Fault.fail_500(), times=None)
    failed = pair.run("apply", "--plan", str(saved), "--format", "json")
    assert failed.code == 4, failed.out + failed.err
    result = {t["target"]: t for t in json.loads(failed.out)["targets"]}
    assert result["staging"]["exit"] == 4 and not result["staging"]["complete"]
    assert result["prod"] == {
        "target": "prod",
        "exit": 4,
        "held": "held: staging did not converge",
    }
    assert pair.writes(pair.prod_fp) == []  # not one write request reached prod's proxy
    assert pair.writes(pair.staging_fp)  # staging was tried
    assert hosts_on(pair.prod, fleet_name) == {}

    # --target prod alone: prod is applied (its job's needs: is the gate), staging sent nothing.
    pair.staging_fp.clear_log()
    prod_only = pair.run("apply", "--target", "prod")
    assert prod_only.code == 0, prod_only.out + prod_only.err
    assert pair.staging_fp.log == []
    assert sorted(hosts_on(pair.prod, fleet_name)) == ["a"]

    # The saved plan moved on prod: apply --plan refuses, naming it, before any write.
    pair.staging_fp.clear_rules()
    pair.staging_fp.clear_log()
    stale = pair.run("apply", "--plan", str(saved))
    assert stale.code == 3, stale.out + stale.err
    assert "stale for target prod" in stale.err
    assert pair.writes(pair.staging_fp) == []


def test_a_saved_plan_binds_its_target_endpoint_and_rails(
    pair: Pair, fleet_name: str, tmp_path: Path
) -> None:
    """Issue 23 (Deliver 7): staging and prod with identical changes hash apart; a plan made for
    staging handed to prod's apply, or made at another endpoint or under other rails, is
    refused (exit 3) saying what differs, before any write."""
    write(pair.fleet_file, fleet_name, {
        f"{fleet_name}-m": {"served_model": "org/m", "hosts": [ONE_HOST]}
    })  # fmt: skip
    saved = tmp_path / "plan.json"
    planned = pair.run("plan", "--out", str(saved))
    assert planned.code == 0, planned.out + planned.err
    document = json.loads(saved.read_text(encoding="utf-8"))
    OUTPUTS.append(saved.read_text(encoding="utf-8"))
    staging, prod = document["targets"]
    assert staging["changes"] == prod["changes"] and staging["hash"] != prod["hash"]
    assert staging["binds"]["target"] == "staging" and prod["binds"]["after"] == ["staging"]
    assert pair.staging_fp.url not in saved.read_text(encoding="utf-8")

    def refused(plan: dict[str, Any], *args: str) -> str:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(plan), encoding="utf-8")
        done = pair.run("apply", "--plan", str(bad), *args)
        assert done.code == 3, done.out + done.err
        assert pair.writes(pair.staging_fp) == pair.writes(pair.prod_fp) == []
        return done.err

    # staging's plan passed off as prod's (the target renamed in the file).
    swapped = {**document, "targets": [staging, {**staging, "target": "prod"}]}
    err = refused(swapped, "--target", "prod")
    assert "it was made for target staging, not target prod" in err, err
    # The same proxy behind another URL: another endpoint.
    other = FaultProxy(pair.prod.url)
    try:
        pair.extra = {"T_PROD_URL": other.url}
        err = refused(document, "--target", "prod")
        assert "it was made for another endpoint (other proxy URLs)" in err, err
        assert not other.log or all(not r.is_write for r in other.log)
    finally:
        other.close()
        pair.extra = {}
    # Other rails: safety, then the promotion order.
    doc = yaml.safe_load(pair.fleet_file.read_text(encoding="utf-8"))
    pair.fleet_file.write_text(
        yaml.safe_dump({**doc, "safety": {"max_prune_percent": 50}}, sort_keys=False)
    )
    err = refused(document, "--target", "prod")
    assert 'made under safety {"max_prune_percent":30.0}, not {"max_prune_percent":50.0}' in err
    doc["targets"]["prod"].pop("after")
    pair.fleet_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    err = refused(document, "--target", "prod")
    assert 'it was made under after ["staging"], not []' in err, err
    # The plan as made, for what it was made for: applied.
    doc["targets"]["prod"]["after"] = ["staging"]
    pair.fleet_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    applied = pair.run("apply", "--plan", str(saved))
    assert applied.code == 0, applied.out + applied.err
    assert sorted(hosts_on(pair.prod, fleet_name)) == ["a"]


def test_an_unreachable_target_is_exit_1_and_the_others_are_still_read(
    pair: Pair, fleet_name: str
) -> None:
    write(pair.fleet_file, fleet_name, {
        f"{fleet_name}-m": {"served_model": "org/m", "hosts": [ONE_HOST]}
    })  # fmt: skip
    pair.staging_fp.close()
    read = pair.run("plan", "--format", "json", "--detailed-exitcode")
    assert read.code == 1, read.out + read.err
    assert read.out, read.err
    targets = {t["target"]: t for t in json.loads(read.out)["targets"]}
    assert targets["staging"]["exit"] == 1 and "error" in targets["staging"]
    assert targets["prod"]["summary"]["create"] == 1
    assert "[staging] error:" in read.err
    drift = pair.run("drift", "--target", "prod")
    assert drift.code == 2 and "=== target prod ===" in drift.out, drift.out + drift.err


def test_target_flags_are_errors_where_they_do_not_fit(pair: Pair, fleet_name: str) -> None:
    write(pair.fleet_file, fleet_name, {
        f"{fleet_name}-m": {"served_model": "org/m", "hosts": [ONE_HOST]}
    })  # fmt: skip
    unknown = pair.run("plan", "--target", "prd")
    assert unknown.code == 1 and "fleet.yaml declares: staging, prod" in unknown.err
    override = pair.run("plan", "--api-key", "sk-" + secrets.token_hex(8))
    assert override.code == 1 and "exactly one --target" in override.err
    importing = pair.run("import", "--fleet", "x")
    assert importing.code == 1 and "import reads exactly one target" in importing.err
    missing = fleet_sync(
        ["plan", "-f", str(pair.fleet_file), "--target", "prod"],
        {k: v for k, v in pair.env().items() if k != "T_PROD_KEY"},
    )
    assert missing.code == 1 and "the variable T_PROD_KEY is not set" in missing.err
    wrong = fleet_sync(
        ["plan", "-f", str(pair.fleet_file)], {**pair.env(), "T_PROD_KEY": "sk-" + "0" * 24}
    )
    assert wrong.code == 1, wrong.out + wrong.err
    assert "[prod] error: the proxy at" in wrong.err
    assert "check T_PROD_KEY (target prod's api_key)" in wrong.err
    assert "=== target staging ===" in wrong.out and "LITELLM_PROXY" not in wrong.err
    # A proxy variable of a run without targets never stands in for a target's.
    pair.prod_fp.clear_log()
    ambient = fleet_sync(
        ["plan", "-f", str(pair.fleet_file), "--target", "prod"],
        {**pair.env(), "LITELLM_PROXY_URL": "http://127.0.0.1:9", "LITELLM_PROXY_API_KEY": "x"},
    )
    assert ambient.code == 0, ambient.out + ambient.err
    assert "note: LITELLM_PROXY_URL, LITELLM_PROXY_API_KEY not used" in ambient.err
    assert pair.prod_fp.log  # prod was read through its own proxy_url


def test_github_gets_one_comment_result_and_drift_issue_per_target(
    pair: Pair, fleet_name: str, fake_github: FakeGitHub, tmp_path: Path
) -> None:
    model = f"{fleet_name}-m"
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    pair.fleet_file = Path(repo.working_tree_dir or "") / "fleet.yaml"
    host_b = {"name": "b", "api_base": "http://127.0.0.1:10/v1", "targets": ["prod"]}
    write(pair.fleet_file, fleet_name, {model: {"served_model": "org/m", "hosts": [ONE_HOST]}})
    repo.index.add(["fleet.yaml"])
    base_sha = repo.index.commit("base").hexsha
    write(pair.fleet_file, fleet_name, {
        model: {"served_model": "org/m", "hosts": [ONE_HOST, host_b]}
    })  # fmt: skip
    repo.index.add(["fleet.yaml"])
    head_sha = repo.index.commit("pr: b on prod").hexsha
    pr = fake_github.add_pull_request(21, state="closed", merged=True)
    fake_github.set_commit_pulls(head_sha, [pr])
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr, "base": {"sha": base_sha}}}))
    summary = tmp_path / "summary.md"
    summary.touch()
    extra = fake_github.env(
        GITHUB_EVENT_PATH=str(event), GITHUB_STEP_SUMMARY=str(summary), GITHUB_SHA=head_sha
    )
    pair.extra = extra

    assert pair.run("plan", "--github-comment").code == 0
    plans = comments(fake_github, pr, "plan")
    assert set(plans) == {"prod", "staging"}
    rid_b = route_id(fleet_name, model, "b")
    assert rid_b in plans["prod"] and rid_b not in plans["staging"]  # b goes to prod only
    this_pr = plans["prod"].split("#### This PR changes")[1].split("#### Drift already")[0]
    assert rid_b in this_pr
    assert route_id(fleet_name, model, "a") not in this_pr  # already wanted at the base

    # The drift issue from before the fleet had targets: ours is closed, a planted one is not.
    old_body = drift_marker(fleet_name, None) + "\nold drift"
    ours = fake_github.add_issue("Drift", old_body, labels=[DRIFT_LABEL], user=ACTIONS_BOT)
    planted = fake_github.add_issue("Drift", old_body, labels=[DRIFT_LABEL], user="mallory")
    drift = pair.run("drift", "--github-issue")
    assert drift.code == 2, drift.out + drift.err
    assert fake_github.issues[ours]["state"] == "closed"
    assert f"drift issue #{ours} of the fleet without targets closed" in drift.err
    assert [c["body"] for c in fake_github.comments_on(ours)] == [DRIFT_PER_TARGET]
    assert fake_github.issues[planted]["state"] == "open"
    assert fake_github.comments_on(planted) == []
    old = (ours, planted)
    issues = [
        i for i in fake_github.issues.values() if "pull_request" not in i and i["number"] not in old
    ]
    assert len(issues) == 2 and all(i["state"] == "open" for i in issues)
    assert sorted("prod" in i["title"] for i in issues) == [False, True]

    applied = pair.run("apply", "--github-comment")
    assert applied.code == 0, applied.out + applied.err
    assert set(comments(fake_github, pr, "apply")) == {"prod", "staging"}
    posted = [c["body"] for c in fake_github.comments_on(pr)] + [i["body"] for i in issues]
    OUTPUTS.extend([*posted, summary.read_text(encoding="utf-8")])


def comments(github: FakeGitHub, pr: int, kind: str) -> dict[str | None, str]:
    """target -> the whole body of fleet-sync's comments of one kind on the pull request."""
    bodies = [(PlanComment.parse(c["body"]), c["body"]) for c in github.comments_on(pr)]
    return {p.target: body for p, body in bodies if p is not None and p.kind == kind}


def test_a_pull_request_never_chooses_where_a_targets_key_goes(
    pair: Pair, fleet_name: str, tmp_path: Path
) -> None:
    """Attack F1: in a pull request's run each target is read at the proxy_url and with the
    keys of fleet.yaml at the merge base; the pull request's fleet.yaml chooses neither."""
    models = {f"{fleet_name}-m": {"served_model": "org/m", "hosts": [ONE_HOST]}}
    repo = git.Repo.init(tmp_path, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@example.invalid")
    write(pair.fleet_file, fleet_name, models)
    repo.index.add(["fleet.yaml"])
    base = repo.index.commit("base").hexsha
    repo.git.checkout("-b", "pr")
    recorder = FaultProxy(pair.staging.url)  # the pull request's address, on loopback
    token = "ghp_" + secrets.token_hex(18)
    pair.extra = {"GITHUB_TOKEN": token, "GITHUB_EVENT_NAME": "pull_request"}
    try:
        doc = yaml.safe_load(pair.fleet_file.read_text(encoding="utf-8"))
        staging = doc["targets"]["staging"]
        staging |= {"proxy_url": recorder.url, "read_api_key": "os.environ/GITHUB_TOKEN"}
        pair.fleet_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        repo.index.add(["fleet.yaml"])
        repo.index.commit("the pull request")
        # GitHub's token is never a proxy's key: refused before any request.
        refused = pair.run("plan", "--base-ref", base)
        assert refused.code == 1 and "GitHub Actions sets itself" in refused.err, refused.err
        # Another variable (prod's key) at the pull request's address: staging is read where
        # the base says, with the base's key; the recorder gets nothing.
        staging["read_api_key"] = "os.environ/T_PROD_KEY"
        pair.fleet_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        repo.index.add(["fleet.yaml"])
        repo.index.commit("the pull request, again")
        pair.staging_fp.clear_log()
        read = pair.run("plan", "--base-ref", base, "--format", "json")
        assert read.code == 0, read.out + read.err
        assert (
            "[staging] note: target staging: proxy_url, read_api_key changed in this pull "
            "request; read with those of fleet.yaml at the pull request's base "
            f"({base[:12]}); the new ones are used once merged"
        ) in read.err
        assert [t["target"] for t in json.loads(read.out)["targets"]] == ["staging", "prod"]
        assert pair.staging_fp.log and not recorder.log
        sent = {r.headers.get("authorization") for r in pair.staging_fp.log}
        assert sent == {f"Bearer {pair.staging.api_key}"}
        # A target the base does not declare is not read; the others are.
        eu = recorder.url.rstrip("/") + "/eu"  # the recorder, under another written URL
        doc["targets"]["eu"] = {"proxy_url": eu, "api_key": "os.environ/T_PROD_KEY"}
        pair.fleet_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        repo.index.add(["fleet.yaml"])
        repo.index.commit("a new target")
        new = pair.run("plan", "--base-ref", base)
        assert new.code == 1 and "=== target prod ===" in new.out, new.out + new.err
        assert (
            "[eu] error: target eu: not read: fleet.yaml at the pull request's base "
            f"({base[:12]}) does not declare it"
        ) in new.err
        every = [*recorder.log, *pair.staging_fp.log, *pair.prod_fp.log]
        assert not recorder.log
        assert not any(token in str(r.headers) for r in every)
        assert not any(token in text for text in OUTPUTS)
    finally:
        recorder.close()


def test_two_targets_resolving_to_one_proxy_stop_before_any_request(
    pair: Pair, fleet_name: str
) -> None:
    """Attack F2: a prod variable holding staging's URL (another spelling of it) is found once
    the references are resolved; neither proxy is asked anything."""
    write(pair.fleet_file, fleet_name, {
        f"{fleet_name}-m": {"served_model": "org/m", "hosts": [ONE_HOST]}
    })  # fmt: skip
    pair.extra = {"T_PROD_URL": pair.staging_fp.url.upper().replace("HTTP://", "http://") + "/"}
    for command in (["plan"], ["apply"], ["drift", "--fix"]):
        done = pair.run(*command)
        assert done.code == 1, done.out + done.err
        assert (
            "one proxy given as two targets; each would prune the other's routes: nothing was "
            "sent to any target"
        ) in done.err
        assert "error: targets staging and prod (" in done.err
        assert "=== target" not in done.out
    assert not pair.staging_fp.log and not pair.prod_fp.log
    # The spellings of one pod only a resolver or an address's forms tell: localhost for
    # 127.0.0.1, the IPv4-mapped IPv6 address, a trailing dot, the default port spelt out.
    port = pair.staging_fp.port
    before = pair.staging.routes()
    for spelling in (
        f"http://localhost:{port}",
        f"http://LocalHost.:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}",
        f"https://127.0.0.1:{port}",
    ):
        pair.extra = {"T_PROD_URL": spelling}
        done = pair.run("apply")
        assert done.code == 1, spelling + done.out + done.err
        # The URLs come from variables fleet.yaml references: masked like every such value.
        assert (
            f"error: targets staging and prod (*** and *** both reach 127.0.0.1:{port}): one "
            "proxy given as two targets"
        ) in done.err, done.err
    assert not pair.staging_fp.log and not pair.prod_fp.log
    assert pair.staging.routes() == before  # no request reached the proxy: its routes unchanged
    pair.extra = {"T_PROD_URL": f"http://localhost:{port}", "T_PROD_KEY": pair.staging.api_key}
    alone = pair.run("plan", "--target", "prod")  # one selected target: nothing to compare
    assert alone.code == 0, alone.out + alone.err
