"""sync.github.client against the fake GitHub server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.github.actions import GitHubConfig, GitHubError, write_step_summary
from sync.github.client import DRIFT_LABEL, DRIFT_RESOLVED, GitHubClient, drift_marker
from sync.github.comment import PlanComment, marker_for

from .support.fake_github import FakeGitHub, fake_github

__all__ = ["fake_github"]  # the fixture, until tests/conftest.py imports it

HASH_A = "sha256:" + "a" * 64
HASH_B = "sha256:" + "b" * 64


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(fake_github: FakeGitHub, sleeps: list[float]) -> Iterator[GitHubClient]:
    config = GitHubConfig.from_env(fake_github.env())
    with GitHubClient(config, sleep=sleeps.append, timeout=5) as gh:
        yield gh


def plan_body(fleet: str, plan_hash: str, text: str) -> tuple[str, str]:
    comment = PlanComment(fleet=fleet, plan_hash=plan_hash, kind="plan", body=text)
    return comment.marker, comment.render()


# ---------------------------------------------------------------------------- config


def test_from_env_reads_all_variables(tmp_path: Path) -> None:
    config = GitHubConfig.from_env(
        {
            "GITHUB_TOKEN": "tok",
            "GITHUB_REPOSITORY": "acme/fleet",
            "GITHUB_API_URL": "http://127.0.0.1:9/api/v3/",
            "GITHUB_EVENT_PATH": "/tmp/event.json",
            "GITHUB_STEP_SUMMARY": "/tmp/summary.md",
            "GITHUB_SHA": "abc123",
        }
    )
    assert config.api_url == "http://127.0.0.1:9/api/v3"
    assert config.repository == "acme/fleet"
    assert (config.event_path, config.step_summary, config.sha) == (
        "/tmp/event.json",
        "/tmp/summary.md",
        "abc123",
    )
    assert "tok" not in repr(config)
    default = GitHubConfig.from_env({"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "a/b"})
    assert default.api_url == "https://api.github.com"


def test_from_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "from-env")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/fleet")
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    config = GitHubConfig.from_env()
    assert (config.token, config.repository) == ("from-env", "acme/fleet")


@pytest.mark.parametrize(
    ("environ", "names"),
    [
        ({}, ["GITHUB_TOKEN", "GITHUB_REPOSITORY"]),
        ({"GITHUB_REPOSITORY": "a/b"}, ["GITHUB_TOKEN"]),
        ({"GITHUB_TOKEN": "t"}, ["GITHUB_REPOSITORY"]),
    ],
)
def test_from_env_says_what_to_set(environ: dict[str, str], names: list[str]) -> None:
    with pytest.raises(GitHubError) as err:
        GitHubConfig.from_env(environ)
    message = str(err.value)
    assert all(name in message for name in names)
    assert "set" in message


def test_repository_must_be_owner_slash_name() -> None:
    with pytest.raises(GitHubError, match="owner/name"):
        GitHubConfig.from_env({"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "just-a-name"})


def test_api_url_with_path_prefix_is_honoured(fake_github: FakeGitHub) -> None:
    # A GHES-style prefix that the fake does not serve: the request must go under the prefix.
    env = fake_github.env(GITHUB_API_URL=fake_github.url + "/api/v3")
    config = GitHubConfig.from_env(env)
    with GitHubClient(config, sleep=lambda _: None) as gh, pytest.raises(GitHubError, match="404"):
        gh.post_comment(1, "hi")
    assert [c.path for c in fake_github.calls] == [
        f"/api/v3/repos/{fake_github.repo}/issues/1/comments"
    ]


# ---------------------------------------------------------------------------- event payload


def test_pull_request_number_from_event(fake_github: FakeGitHub, tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": 42}}))
    config = GitHubConfig.from_env(fake_github.env(GITHUB_EVENT_PATH=str(event)))
    no_event = GitHubConfig.from_env(fake_github.env())
    with GitHubClient(config) as gh, GitHubClient(no_event) as gh_no_event:
        assert gh.pull_request_number() == 42
        event.write_text(json.dumps({"ref": "refs/heads/main"}))  # a push event
        assert gh.pull_request_number() is None
        assert gh_no_event.pull_request_number() is None
        event.write_text("{not json")
        with pytest.raises(GitHubError, match="GITHUB_EVENT_PATH"):
            gh.pull_request_number()
    assert fake_github.calls == []  # reading the event is local


# ---------------------------------------------------------------------------- sticky comment


def test_second_upsert_edits_the_first_comment(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request()
    marker, first = plan_body("gpu-fleet", HASH_A, "1 to create")
    ref1 = client.upsert_sticky_comment(pr, marker, first)
    _, second = plan_body("gpu-fleet", HASH_B, "2 to create")
    ref2 = client.upsert_sticky_comment(pr, marker, second)

    comments = fake_github.comments_on(pr)
    assert len(comments) == 1
    assert comments[0]["body"] == second
    assert (ref1.action, ref2.action) == ("created", "updated")
    assert ref1.id == ref2.id == comments[0]["id"]
    assert len(fake_github.calls_to("POST", "/comments$")) == 1
    assert [c.path for c in fake_github.calls_to("PATCH")] == [
        f"/repos/{fake_github.repo}/issues/comments/{ref1.id}"
    ]


def test_upsert_finds_comment_on_second_page(fake_github: FakeGitHub, client: GitHubClient) -> None:
    pr = fake_github.add_pull_request()
    for i in range(130):  # more than one page of 100
        fake_github.add_comment(pr, f"review chatter {i}")
    marker, first = plan_body("gpu-fleet", HASH_A, "first plan")
    created = client.upsert_sticky_comment(pr, marker, first)
    _, second = plan_body("gpu-fleet", HASH_B, "second plan")
    updated = client.upsert_sticky_comment(pr, marker, second)

    comments = fake_github.comments_on(pr)
    assert len(comments) == 131
    assert comments[-1]["id"] == created.id == updated.id
    assert comments[-1]["body"] == second
    assert updated.action == "updated"
    listed_pages = {c.query.get("page", "1") for c in fake_github.calls_to("GET", "/comments$")}
    assert listed_pages == {"1", "2"}
    assert all(c.query.get("per_page") == "100" for c in fake_github.calls_to("GET", "/comments$"))


def test_upsert_finds_marker_on_page_two_when_first_pages_are_full(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    # Our comment is the 201st: on page 3. A client that reads only page 1 posts a duplicate.
    pr = fake_github.add_pull_request()
    for i in range(200):
        fake_github.add_comment(pr, f"chatter {i}")
    marker, first = plan_body("gpu-fleet", HASH_A, "old")
    ours = fake_github.add_comment(pr, first, user="github-actions[bot]")
    _, second = plan_body("gpu-fleet", HASH_B, "new")
    ref = client.upsert_sticky_comment(pr, marker, second)
    assert ref.id == ours
    assert len(fake_github.comments_on(pr)) == 201
    assert fake_github.comments[ours]["body"] == second


def test_unchanged_comment_is_not_rewritten(fake_github: FakeGitHub, client: GitHubClient) -> None:
    pr = fake_github.add_pull_request()
    marker, body = plan_body("gpu-fleet", HASH_A, "same")
    client.upsert_sticky_comment(pr, marker, body)
    ref = client.upsert_sticky_comment(pr, marker, body)
    assert ref.action == "unchanged"
    assert len(fake_github.writes()) == 1


def test_two_fleets_in_one_pr_keep_two_comments(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request()
    marker_a, a1 = plan_body("fleet-a", HASH_A, "a one")
    marker_b, b1 = plan_body("fleet-a2", HASH_A, "b one")  # a name that extends the other
    client.upsert_sticky_comment(pr, marker_a, a1)
    client.upsert_sticky_comment(pr, marker_b, b1)
    _, a2 = plan_body("fleet-a", HASH_B, "a two")
    _, b2 = plan_body("fleet-a2", HASH_B, "b two")
    client.upsert_sticky_comment(pr, marker_a, a2)
    client.upsert_sticky_comment(pr, marker_b, b2)

    bodies = [c["body"] for c in fake_github.comments_on(pr)]
    assert bodies == [a2, b2]


def test_plan_and_apply_comments_are_separate(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request(merged=True, state="closed")
    plan = PlanComment("gpu-fleet", HASH_A, "plan", "plan")
    apply = PlanComment("gpu-fleet", HASH_A, "apply", "applied")
    client.upsert_sticky_comment(pr, plan.marker, plan.render())
    client.upsert_sticky_comment(pr, apply.marker, apply.render())
    parsed = [PlanComment.parse(c["body"]) for c in fake_github.comments_on(pr)]
    assert parsed == [plan, apply]


def test_upsert_refuses_a_body_that_does_not_start_with_its_header(client: GitHubClient) -> None:
    marker = marker_for("gpu-fleet", "plan")
    with pytest.raises(GitHubError, match="header"):
        client.upsert_sticky_comment(1, marker, "no header")
    quoted = PlanComment("gpu-fleet", HASH_A, "plan", "x").render()
    with pytest.raises(GitHubError, match="header"):
        client.upsert_sticky_comment(1, marker, "a plan quoting a route name:\n" + quoted)


def test_upsert_after_a_500_that_stored_the_comment_does_not_duplicate(
    fake_github: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    pr = fake_github.add_pull_request()
    fake_github.add_comment(pr, "unrelated")
    marker, body = plan_body("gpu-fleet", HASH_A, "plan")
    fake_github.fail_after_commit_next(1, status=500, method="POST")  # stored, answered 500
    ref = client.upsert_sticky_comment(pr, marker, body)

    comments = fake_github.comments_on(pr)
    assert len(comments) == 2
    assert comments[-1]["body"] == body
    assert ref.id == comments[-1]["id"]
    assert (
        len(fake_github.calls_to("POST", "/comments$")) == 1
    )  # looked again instead of posting twice
    assert len(sleeps) == 1


def test_upsert_after_a_500_that_stored_nothing_posts_again(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request()
    marker, body = plan_body("gpu-fleet", HASH_A, "plan")
    fake_github.fail_next(1, status=503, method="POST")
    ref = client.upsert_sticky_comment(pr, marker, body)
    assert [c["id"] for c in fake_github.comments_on(pr)] == [ref.id]
    assert ref.action == "created"
    assert len(fake_github.calls_to("POST", "/comments$")) == 2


def test_drift_issue_after_a_500_that_stored_it_does_not_duplicate(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    fake_github.fail_after_commit_next(1, status=500, method="POST")
    action = client.sync_drift_issue("gpu-fleet", "drift")
    assert action.action == "updated"
    assert len(drift_issues(fake_github, "gpu-fleet")) == 1


def test_oversized_comment_is_refused_before_any_call(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request()
    marker, body = plan_body("gpu-fleet", HASH_A, "x" * 70_000)
    with pytest.raises(GitHubError, match="fit"):
        client.upsert_sticky_comment(pr, marker, body)
    assert fake_github.calls == []


def test_post_comment(fake_github: FakeGitHub, client: GitHubClient) -> None:
    pr = fake_github.add_pull_request()
    ref = client.post_comment(pr, "Applied: 3 changes")
    assert ref.action == "created"
    assert [c["body"] for c in fake_github.comments_on(pr)] == ["Applied: 3 changes"]
    assert fake_github.calls_to("POST", "/comments$")[0].json == {"body": "Applied: 3 changes"}


# ---------------------------------------------------------------------------- commit -> PRs


def test_pull_requests_for_commit(fake_github: FakeGitHub, client: GitHubClient) -> None:
    merged = fake_github.add_pull_request(state="closed", merged=True)
    open_pr = fake_github.add_pull_request()
    closed_unmerged = fake_github.add_pull_request(state="closed")
    fake_github.set_commit_pulls("deadbeef", [merged, open_pr, closed_unmerged])
    assert client.pull_requests_for_commit("deadbeef") == [merged, open_pr]
    assert client.pull_requests_for_commit("cafe") == []
    assert (
        fake_github.calls_to("GET")[0].path == f"/repos/{fake_github.repo}/commits/deadbeef/pulls"
    )


# ---------------------------------------------------------------------------- drift issue


def drift_issues(fake: FakeGitHub, fleet: str) -> list[dict[str, object]]:
    return [i for i in fake.issues.values() if drift_marker(fleet) in str(i["body"])]


def test_two_drift_runs_update_one_issue(fake_github: FakeGitHub, client: GitHubClient) -> None:
    first = client.sync_drift_issue("gpu-fleet", "2 routes differ")
    second = client.sync_drift_issue("gpu-fleet", "3 routes differ")

    issues = drift_issues(fake_github, "gpu-fleet")
    assert len(issues) == 1
    issue = issues[0]
    assert first.action == "opened"
    assert second.action == "updated"
    assert first.number == second.number == issue["number"]
    assert issue["state"] == "open"
    assert "3 routes differ" in str(issue["body"])
    assert str(issue["body"]).startswith(drift_marker("gpu-fleet"))
    assert issue["labels"] == [{"name": DRIFT_LABEL}]
    post = fake_github.calls_to("POST", r"/issues$")
    assert len(post) == 1
    assert post[0].json["labels"] == [DRIFT_LABEL]


def test_clean_run_closes_the_drift_issue_with_a_comment(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    opened = client.sync_drift_issue("gpu-fleet", "drift!")
    closed = client.sync_drift_issue("gpu-fleet", None)

    assert closed.action == "closed"
    assert closed.number == opened.number
    assert opened.number is not None
    issue = fake_github.issues[opened.number]
    assert issue["state"] == "closed"
    assert [c["body"] for c in fake_github.comments_on(opened.number)] == [DRIFT_RESOLVED]
    # Drift again later: a new issue, the closed one stays closed.
    again = client.sync_drift_issue("gpu-fleet", "drift again")
    assert again.action == "opened"
    assert again.number != opened.number


def test_clean_run_without_an_issue_does_nothing(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    action = client.sync_drift_issue("gpu-fleet", None)
    assert (action.action, action.number) == ("none", None)
    assert fake_github.writes() == []
    assert fake_github.issues == {}


def test_drift_issue_ignores_other_fleets_and_unlabelled_issues(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    other = fake_github.add_issue(
        "other", drift_marker("other-fleet") + "\nx", labels=[DRIFT_LABEL]
    )
    unlabelled = fake_github.add_issue("copy", drift_marker("gpu-fleet") + "\npasted")
    # The issues endpoint lists pull requests too: a labelled PR quoting the marker is no issue.
    pr = fake_github.add_pull_request(
        body=drift_marker("gpu-fleet") + "\nfixes drift", labels=[DRIFT_LABEL]
    )
    action = client.sync_drift_issue("gpu-fleet", "drift")
    assert action.action == "opened"
    assert action.number not in (other, unlabelled, pr)
    assert client.sync_drift_issue("gpu-fleet", None).action == "closed"
    assert fake_github.issues[other]["state"] == "open"
    assert fake_github.issues[unlabelled]["state"] == "open"
    assert fake_github.issues[pr]["state"] == "open"
    assert fake_github.comments_on(pr) == []


def test_drift_issue_found_among_many_open_issues(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    first = client.sync_drift_issue("gpu-fleet", "drift")
    for i in range(120):  # newer labelled issues push ours to page 2 (GitHub lists newest first)
        fake_github.add_issue(f"n{i}", "other", labels=[DRIFT_LABEL])
    second = client.sync_drift_issue("gpu-fleet", "more drift")
    assert second.action == "updated"
    assert second.number == first.number
    assert len(drift_issues(fake_github, "gpu-fleet")) == 1


# ---------------------------------------------------------------------------- errors


def test_5xx_is_retried_twice_then_succeeds(
    fake_github: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    pr = fake_github.add_pull_request()
    fake_github.fail_next(2, status=502)
    assert client.list_comments(pr) == []
    assert len(fake_github.calls) == 3
    assert len(sleeps) == 2
    assert all(0 < s <= 5 for s in sleeps)


def test_persistent_5xx_raises_a_clear_error(fake_github: FakeGitHub, client: GitHubClient) -> None:
    pr = fake_github.add_pull_request()
    fake_github.fail_next(3, status=500)
    with pytest.raises(GitHubError) as err:
        client.list_comments(pr)
    message = str(err.value)
    assert "500" in message
    assert f"GET /repos/{fake_github.repo}/issues/{pr}/comments" in message
    assert "GitHub's side" in message
    assert fake_github.token not in message
    assert err.value.status == 500
    assert len(fake_github.calls) == 3  # one try + two retries


def test_rate_limit_raises_without_retrying(fake_github: FakeGitHub, client: GitHubClient) -> None:
    pr = fake_github.add_pull_request()
    fake_github.rate_limit_next(5)
    marker, body = plan_body("gpu-fleet", HASH_A, "x")
    with pytest.raises(GitHubError) as err:
        client.upsert_sticky_comment(pr, marker, body)
    message = str(err.value)
    assert "rate limit" in message
    assert "403" in message
    assert "resets at" in message
    assert fake_github.token not in message
    assert len(fake_github.calls) == 1
    assert fake_github.comments_on(pr) == []


def test_secondary_rate_limit_says_when_to_retry(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    fake_github.rate_limit_next(1, retry_after=60)
    with pytest.raises(GitHubError) as err:
        client.sync_drift_issue("gpu-fleet", "drift")
    message = str(err.value)
    assert "rate limit" in message
    assert "429" in message
    assert "retry after 60 s" in message
    assert fake_github.token not in message


def test_token_echoed_by_github_is_redacted(fake_github: FakeGitHub, client: GitHubClient) -> None:
    fake_github.fail_next(1, status=422, message=f"token {fake_github.token} is odd")
    with pytest.raises(GitHubError) as err:
        client.post_comment(1, "x")
    assert fake_github.token not in str(err.value)
    assert "422" in str(err.value)


def test_bad_token_says_so(fake_github: FakeGitHub) -> None:
    env = fake_github.env(GITHUB_TOKEN="wrong-token-value")
    with GitHubClient(GitHubConfig.from_env(env)) as gh, pytest.raises(GitHubError) as err:
        gh.list_comments(1)
    assert "401" in str(err.value)
    assert "GITHUB_TOKEN" in str(err.value)
    assert "wrong-token-value" not in str(err.value)


def test_missing_permission_says_which(fake_github: FakeGitHub, client: GitHubClient) -> None:
    fake_github.fail_next(1, status=403, message="Resource not accessible by integration")
    with pytest.raises(GitHubError) as err:
        client.sync_drift_issue("gpu-fleet", None)
    assert "issues: write" in str(err.value)
    assert "rate limit" not in str(err.value)


def test_unreachable_server_raises_after_retries(sleeps: list[float]) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = "ghs_secret_never_shown"
    env = {
        "GITHUB_TOKEN": token,
        "GITHUB_REPOSITORY": "acme/fleet",
        "GITHUB_API_URL": f"http://127.0.0.1:{port}",
    }
    config = GitHubConfig.from_env(env)
    with (
        GitHubClient(config, sleep=sleeps.append, timeout=2) as gh,
        pytest.raises(GitHubError) as err,
    ):
        gh.post_comment(7, "hello")
    message = str(err.value)
    assert "could not reach GitHub" in message
    assert "POST /repos/acme/fleet/issues/7/comments" in message
    assert token not in message
    assert len(sleeps) == 2


def test_next_link_to_another_host_is_refused(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request()
    for i in range(101):
        fake_github.add_comment(pr, str(i))
    fake_github.link_base = "http://127.0.0.2:1"  # a next link elsewhere: must not be followed
    with pytest.raises(GitHubError, match="another host") as err:
        client.list_comments(pr)
    assert fake_github.token not in str(err.value)
    assert len(fake_github.calls) == 1


# ---------------------------------------------------------------------------- job summary


def test_write_step_summary_appends(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# before\n")
    config = GitHubConfig(token="t", repository="a/b", step_summary=str(summary))
    write_step_summary(config, "## plan")
    write_step_summary(config, "3 to create\n")
    assert summary.read_text() == "# before\n## plan\n3 to create\n"


def test_write_step_summary_without_file_is_a_noop(tmp_path: Path) -> None:
    config = GitHubConfig(token="t", repository="a/b")
    write_step_summary(config, "## plan")  # must not raise nor create anything
    assert list(tmp_path.iterdir()) == []
