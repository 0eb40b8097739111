"""Only our own comments and issues (issue 15): the sticky plan comment, the apply result and the
drift issue are found by marker *and* author; the token's identity comes from GET /user, the
Actions token's 403 (github-actions[bot]) or FLEET_SYNC_GITHUB_AUTHOR; when it cannot be known,
nothing existing is edited, closed, commented on or copied.

The GitOps functions run for real (sync/gitops/loops.py) on plans built from plain data, against the
fake GitHub, which keeps every comment's and issue's author as GitHub does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import render
from sync.core.result import Outcome, Result
from sync.fleet.model import fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.github.actions import GitHubConfig, GitHubError
from sync.github.client import DRIFT_LABEL, GitHubClient, drift_marker
from sync.github.comment import PlanComment
from sync.github.pulls import PullRequestClient
from sync.gitops import loops as gitops

from .support.fake_github import ACTIONS_BOT, FakeGitHub, fake_github

__all__ = ["fake_github"]

FLEET = "authors"
EVIL_HASH = "sha256:" + "e" * 64
MALLORY = "mallory"
PAT = "ghp_alice_token_0123456789abcdef"


def fleet_plan(empty: bool = False) -> Plan:
    doc = {
        "version": 1,
        "fleet": FLEET,
        "models": {
            "m": {
                "served_model": "org/m",
                "hosts": [{"name": "a", "api_base": "http://10.0.0.1:8000/v1"}],
            }
        },
    }
    fleet = fleet_from_doc(parse_yaml(json.dumps(doc), "fleet.yaml"), "fleet.yaml")
    routes = render(fleet)
    return make_plan(fleet, routes, routes if empty else [])


def applied(plan: Plan) -> Result:
    return Result(plan, tuple(Outcome(change, "done") for change in plan.changes))


@pytest.fixture
def env(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[dict[str, str]]:
    summary = tmp_path / "summary.md"
    summary.touch()
    yield fake_github.env(GITHUB_STEP_SUMMARY=str(summary), GITHUB_SHA="abc123")


def comment_plan(plan: Plan, env: dict[str, str], pr: int, tmp_path: Path) -> str:
    return gitops.comment_plan(
        tmp_path / "fleet.yaml", plan, lambda _: plan, [], None, env, pr_number=pr
    )


def writes_to(fake: FakeGitHub, pattern: str) -> list[Any]:
    return [c for c in fake.writes() if pattern in c.path]


def posted_text(fake: FakeGitHub) -> str:
    return json.dumps([c.json for c in fake.writes()])


# ---------------------------------------------------------------------------- the three attacks


def test_someone_elses_plan_comment_is_never_edited_nor_trusted(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    pr = fake_github.add_pull_request(state="closed", merged=True)
    fake_comment = PlanComment(FLEET, EVIL_HASH, "plan", "looks reviewed").render()
    foreign = fake_github.add_comment(pr, fake_comment, user=MALLORY)
    plan = fleet_plan()

    first = comment_plan(plan, env, pr, tmp_path)
    second = comment_plan(fleet_plan(), env, pr, tmp_path)  # the next push: edits ours

    assert fake_github.comments[foreign]["body"] == fake_comment
    assert writes_to(fake_github, f"/comments/{foreign}") == []
    ours = [c for c in fake_github.comments_on(pr) if c["id"] != foreign]
    assert len(ours) == 1 and ours[0]["user"] == {"login": ACTIONS_BOT, "type": "Bot"}
    parsed = PlanComment.parse(ours[0]["body"])
    assert parsed is not None and parsed.plan_hash == plan.hash
    assert "created" in first and "unchanged" in second
    # Apply trusts our plan comment only: the foreign hash is neither "the review" nor shown.
    fake_github.set_commit_pulls("abc123", [pr])
    gitops.comment_result(applied(plan), env)
    assert EVIL_HASH[:19] not in posted_text(fake_github)
    (result,) = [c for c in fake_github.comments_on(pr) if "fleet-sync:apply" in c["body"]]
    assert "differs from the plan reviewed" not in result["body"]
    assert fake_github.comments[foreign]["body"] == fake_comment


def test_review_check_reads_our_plan_comment_not_an_older_foreign_one(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    # Mallory's comment comes first and carries the hash apply will use; ours showed another.
    plan = fleet_plan()
    pr = fake_github.add_pull_request(state="closed", merged=True)
    fake_github.add_comment(pr, PlanComment(FLEET, plan.hash, "plan", "x").render(), user=MALLORY)
    fake_github.add_comment(
        pr, PlanComment(FLEET, EVIL_HASH, "plan", "y").render(), user=ACTIONS_BOT
    )
    fake_github.set_commit_pulls("abc123", [pr])
    gitops.comment_result(applied(plan), env)
    (result,) = [c for c in fake_github.comments_on(pr) if "fleet-sync:apply" in c["body"]]
    assert "differs from the plan reviewed" in result["body"]


def test_someone_elses_apply_result_is_never_edited_nor_copied(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    plan = fleet_plan()
    pr = fake_github.add_pull_request(state="closed", merged=True)
    fake_run = "### fleet-sync apply: 99 done, 0 failed\n[details](https://evil.invalid/run)\n"
    fake_result = PlanComment(FLEET, plan.hash, "apply", fake_run).render()
    foreign = fake_github.add_comment(pr, fake_result, user=MALLORY)
    fake_github.set_commit_pulls("abc123", [pr])

    first = gitops.comment_result(applied(plan), env)
    second = gitops.comment_result(applied(fleet_plan(empty=True)), env)  # a re-run

    assert fake_github.comments[foreign]["body"] == fake_result
    assert writes_to(fake_github, f"/comments/{foreign}") == []
    assert "99 done" not in posted_text(fake_github)
    assert "evil.invalid" not in posted_text(fake_github)
    ours = [c for c in fake_github.comments_on(pr) if c["id"] != foreign]
    assert len(ours) == 1 and ours[0]["user"]["login"] == ACTIONS_BOT
    assert "1 done, 0 failed" in ours[0]["body"]  # our first run, kept under the re-run's
    assert "nothing to do" in ours[0]["body"]
    assert "created" in first and "updated" in second


def test_someone_elses_drift_issue_is_never_rewritten_commented_nor_closed(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    fake_body = drift_marker(FLEET) + "\nplanted"
    foreign = fake_github.add_issue("Drift", fake_body, labels=[DRIFT_LABEL], user=MALLORY)

    opened = gitops.report_drift(fleet_plan(), env)
    updated = gitops.report_drift(fleet_plan(), env)
    closed = gitops.report_drift(fleet_plan(empty=True), env)

    assert fake_github.issues[foreign]["body"] == fake_body
    assert fake_github.issues[foreign]["state"] == "open"
    assert writes_to(fake_github, f"/issues/{foreign}") == []
    assert fake_github.comments_on(foreign) == []
    (ours,) = [i for n, i in fake_github.issues.items() if n != foreign]
    assert ours["user"] == {"login": ACTIONS_BOT, "type": "Bot"} and ours["state"] == "closed"
    number = ours["number"]
    assert (opened, updated) == (f"drift issue #{number} opened", f"drift issue #{number} updated")
    assert closed == f"drift issue #{number} closed"


# ---------------------------------------------------------------------------- the identity


def sticky(gh: GitHubClient, pr: int, text: str) -> None:
    comment = PlanComment(FLEET, "sha256:" + "1" * 64, "plan", text)
    gh.upsert_sticky_comment(pr, comment.marker, comment.render())


def seed(fake: FakeGitHub, pr: int, user: str, user_type: str | None = None) -> int:
    body = PlanComment(FLEET, "sha256:" + "0" * 64, "plan", f"by {user}").render()
    return fake.add_comment(pr, body, user=user, user_type=user_type)


def test_a_users_token_is_who_get_user_names(fake_github: FakeGitHub) -> None:
    fake_github.add_token(PAT, "alice")
    pr = fake_github.add_pull_request()
    bot = seed(fake_github, pr, ACTIONS_BOT)  # another workflow's, not this token's
    not_a_bot = seed(fake_github, pr, "Alice", "Bot")  # same login, other account type
    alices = seed(fake_github, pr, "ALICE")  # logins compare without case
    config = GitHubConfig.from_env(fake_github.env(GITHUB_TOKEN=PAT))
    with GitHubClient(config) as gh:
        sticky(gh, pr, "edited")
        assert (gh.identity().login, gh.identity().kind) == ("alice", "User")
    assert [c.path for c in fake_github.writes()] == [
        f"/repos/{fake_github.repo}/issues/comments/{alices}"
    ]
    assert "by" in fake_github.comments[bot]["body"]
    assert "by" in fake_github.comments[not_a_bot]["body"]
    assert len(fake_github.calls_to("GET", "^/user$")) == 1


def test_the_actions_token_is_github_actions_bot(fake_github: FakeGitHub) -> None:
    pr = fake_github.add_pull_request()
    user_named_alike = seed(fake_github, pr, ACTIONS_BOT, "User")  # not the bot's account type
    ours = seed(fake_github, pr, ACTIONS_BOT)
    with GitHubClient(GitHubConfig.from_env(fake_github.env())) as gh:
        sticky(gh, pr, "edited")
        assert gh.identity().login == ACTIONS_BOT
        assert "Resource not accessible by integration" in gh.identity().source
    assert [c.path for c in fake_github.writes()] == [
        f"/repos/{fake_github.repo}/issues/comments/{ours}"
    ]
    assert "by" in fake_github.comments[user_named_alike]["body"]


APP_TOKEN = "ghs_apptoken_0123456789abcdefABCDEF"
APP = "my-app[bot]"


def test_an_app_token_is_the_bot_graphql_names(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    # GET /user answers an app's installation token 403 as it does github.token: taking it for
    # github-actions[bot] edited and closed another workflow's issue and never found its own.
    fake_github.add_app_token(APP_TOKEN, APP)
    app_env = {**env, "GITHUB_TOKEN": APP_TOKEN}
    others = fake_github.add_issue(
        "Drift",
        drift_marker(FLEET) + "\nanother workflow's",
        labels=[DRIFT_LABEL],
        user=ACTIONS_BOT,
    )
    opened = gitops.report_drift(fleet_plan(), app_env)
    updated = gitops.report_drift(fleet_plan(), app_env)
    closed = gitops.report_drift(fleet_plan(empty=True), app_env)
    (ours,) = [i for n, i in fake_github.issues.items() if n != others]
    assert ours["user"] == {"login": APP, "type": "Bot"} and ours["state"] == "closed"
    number = ours["number"]
    assert (opened, updated, closed) == (
        f"drift issue #{number} opened",
        f"drift issue #{number} updated",
        f"drift issue #{number} closed",
    )
    assert writes_to(fake_github, f"/issues/{others}") == []
    assert fake_github.issues[others]["state"] == "open"
    assert len(fake_github.calls_to("POST", "^/graphql$")) == 3  # once per run (client)


def test_the_actions_token_is_asked_too_never_assumed(fake_github: FakeGitHub) -> None:
    with GitHubClient(GitHubConfig.from_env(fake_github.env())) as gh:
        assert gh.identity().login == ACTIONS_BOT
    assert [c.path for c in fake_github.calls] == ["/user", "/graphql"]


def test_an_app_token_graphql_will_not_name_is_unknown(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    fake_github.add_app_token(APP_TOKEN, APP, viewer=False)
    pr = fake_github.add_pull_request()
    bots = seed(fake_github, pr, ACTIONS_BOT)
    line = comment_plan(fleet_plan(), {**env, "GITHUB_TOKEN": APP_TOKEN}, pr, tmp_path)
    assert "identity is unknown" in line and "GraphQL's viewer named no login" in line
    assert "set FLEET_SYNC_GITHUB_AUTHOR (the action's github-author input)" in line
    assert writes_to(fake_github, f"/comments/{bots}") == []  # never guessed to be ours
    assert len(fake_github.calls_to("POST", f"/issues/{pr}/comments$")) == 1


@pytest.mark.parametrize("how", ["5xx", "404", "garbage"])
def test_graphql_failing_leaves_the_identity_unknown(fake_github: FakeGitHub, how: str) -> None:
    fake_github.add_app_token(APP_TOKEN, APP)
    extra = {"GITHUB_TOKEN": APP_TOKEN}
    if how == "5xx":
        fake_github.fail_next(3, 502, path="^/graphql$")
    elif how == "404":
        extra["GITHUB_GRAPHQL_URL"] = fake_github.url + "/elsewhere/graphql"
    else:
        fake_github.answer_next(b"<html>", path="^/graphql$")
    config = GitHubConfig.from_env(fake_github.env(**extra))
    with GitHubClient(config, sleep=lambda _: None) as gh:
        identity = gh.identity()
    assert identity.login is None and "GraphQL's viewer could not be read" in identity.source


def test_a_graphql_query_is_retried_like_a_read(fake_github: FakeGitHub) -> None:
    fake_github.add_app_token(APP_TOKEN, APP)
    fake_github.fail_next(2, 502, path="^/graphql$")
    config = GitHubConfig.from_env(fake_github.env(GITHUB_TOKEN=APP_TOKEN))
    with GitHubClient(config, sleep=lambda _: None) as gh:
        assert gh.identity().login == APP


@pytest.mark.parametrize(
    ("api", "graphql"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/graphql"),
    ],
)
def test_graphql_sits_beside_the_rest_api(api: str, graphql: str) -> None:
    env = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "a/b", "GITHUB_API_URL": api}
    assert GitHubConfig.from_env(env).graphql_endpoint == graphql
    given = GitHubConfig.from_env({**env, "GITHUB_GRAPHQL_URL": "https://x.example/q/"})
    assert given.graphql_endpoint == "https://x.example/q"
    with pytest.raises(GitHubError, match=r"^GITHUB_GRAPHQL_URL=.*carries credentials"):
        GitHubConfig.from_env({**env, "GITHUB_GRAPHQL_URL": "https://u:p@x.example/graphql"})


def test_the_author_can_be_named_for_an_app_token(fake_github: FakeGitHub) -> None:
    pr = fake_github.add_pull_request()
    bot = seed(fake_github, pr, ACTIONS_BOT)
    app = seed(fake_github, pr, "my-app[bot]")
    env = fake_github.env(FLEET_SYNC_GITHUB_AUTHOR="my-app[bot]")
    with GitHubClient(GitHubConfig.from_env(env)) as gh:
        sticky(gh, pr, "edited")
    assert [c.path for c in fake_github.writes()] == [
        f"/repos/{fake_github.repo}/issues/comments/{app}"
    ]
    assert "by" in fake_github.comments[bot]["body"]
    assert fake_github.calls_to("GET", "^/user$") == []  # named: GitHub is not asked


@pytest.mark.parametrize("value", ["my app", "../x", "a" * 120, "x[bot][bot]", "-x"])
def test_a_named_author_must_be_a_login(fake_github: FakeGitHub, value: str) -> None:
    with pytest.raises(GitHubError, match="FLEET_SYNC_GITHUB_AUTHOR"):
        GitHubConfig.from_env(fake_github.env(FLEET_SYNC_GITHUB_AUTHOR=value))


def unknown_user(fake: FakeGitHub, how: str) -> None:
    """GET /user fails the way ``how`` says, on every try."""
    if how == "5xx":
        fake.fail_next(3, 502, path="^/user$")
    elif how == "garbage":
        fake.answer_next(b"<html>proxy error</html>", path="^/user$")
    elif how == "no-login":
        fake.answer_next(b'{"login": "two words"}', path="^/user$")
    else:  # late: the answer drips past the deadline
        fake.answer_next(b'{"login": "x"}' + b" " * 10_000, 3, drip=0.01, path="^/user$")


@pytest.mark.parametrize("how", ["5xx", "garbage", "no-login", "late"])
def test_unknown_identity_posts_anew_and_edits_nothing(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path, how: str
) -> None:
    pr = fake_github.add_pull_request()
    ours = seed(fake_github, pr, ACTIONS_BOT)  # even our own: nothing proves it is
    unknown_user(fake_github, how)
    line = comment_plan(fleet_plan(), {**env, "FLEET_SYNC_GITHUB_TIMEOUT": "0.5"}, pr, tmp_path)
    assert "identity is unknown" in line and "edited none" in line, line
    assert "\n" not in line
    assert writes_to(fake_github, f"/comments/{ours}") == []
    assert len(fake_github.calls_to("POST", f"/issues/{pr}/comments$")) == 1
    assert "by github-actions" in fake_github.comments[ours]["body"]


def test_unknown_identity_closes_no_drift_issue_and_opens_a_new_one(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    ours = fake_github.add_issue(
        "Drift", drift_marker(FLEET) + "\nold", labels=[DRIFT_LABEL], user=ACTIONS_BOT
    )
    fake_github.fail_next(6, 503, path="^/user$")
    closed = gitops.report_drift(fleet_plan(empty=True), env)
    opened = gitops.report_drift(fleet_plan(), env)
    assert "identity is unknown" in closed and "closed none" in closed
    assert "opened" in opened and "identity is unknown" in opened
    assert writes_to(fake_github, f"/issues/{ours}") == []
    assert fake_github.issues[ours]["state"] == "open"


def test_unknown_identity_trusts_no_plan_comment_and_copies_no_result(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    plan = fleet_plan()
    pr = fake_github.add_pull_request(state="closed", merged=True)
    earlier = PlanComment(FLEET, plan.hash, "apply", "earlier: 7 done").render()
    result = fake_github.add_comment(pr, earlier, user=ACTIONS_BOT)
    fake_github.add_comment(
        pr, PlanComment(FLEET, plan.hash, "plan", "p").render(), user=ACTIONS_BOT
    )
    fake_github.set_commit_pulls("abc123", [pr])
    fake_github.fail_next(3, 500, path="^/user$")
    line = gitops.comment_result(applied(plan), env)
    assert "identity is unknown" in line
    assert writes_to(fake_github, f"/comments/{result}") == []
    assert "7 done" not in posted_text(fake_github)
    assert "could not be checked" in posted_text(fake_github)


def test_unknown_identity_does_not_post_twice_after_an_ambiguous_post(
    fake_github: FakeGitHub,
) -> None:
    pr = fake_github.add_pull_request()
    fake_github.fail_after_commit_next(1, 500, method="POST")  # stored, answered 500
    fake_github.fail_next(3, 502, path="^/user$")
    with (
        GitHubClient(GitHubConfig.from_env(fake_github.env()), sleep=lambda _: None) as gh,
        pytest.raises(GitHubError, match="500"),
    ):
        sticky(gh, pr, "once")
    assert len(fake_github.comments_on(pr)) == 1  # not recognisable as ours: not posted again


def test_a_refused_token_or_rate_limit_on_get_user_is_an_error(fake_github: FakeGitHub) -> None:
    pr = fake_github.add_pull_request()
    seed(fake_github, pr, ACTIONS_BOT)
    fake_github.rate_limit_next(1, path="^/user$")
    with (
        GitHubClient(GitHubConfig.from_env(fake_github.env())) as gh,
        pytest.raises(GitHubError, match="rate limit"),
    ):
        sticky(gh, pr, "x")
    assert fake_github.writes() == []


def test_a_pull_request_someone_else_opened_from_our_branch_is_left_alone(
    fake_github: FakeGitHub,
) -> None:
    fake_github.git.seed_commit("a" * 40, {"fleet.yaml": b"x"}, "main")
    fake_github.git.refs["fleet-sync/host-moved/m/a"] = "a" * 40
    number = fake_github.git.open_pull_by("fleet-sync/host-moved/m/a", "main", MALLORY)
    with PullRequestClient(GitHubConfig.from_env(fake_github.env())) as gh:
        with pytest.raises(GitHubError, match=f"#{number} .* opened by {MALLORY}"):
            gh.open_pull("fleet-sync/host-moved/m/a")
        mine = fake_github.git.open_pull_by("fleet-sync/host-moved/m/b", "main", ACTIONS_BOT)
        fake_github.git.refs["fleet-sync/host-moved/m/b"] = "a" * 40
        found = gh.open_pull("fleet-sync/host-moved/m/b")
        assert found is not None and found["number"] == mine
    assert fake_github.writes() == []
