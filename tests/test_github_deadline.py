"""Every GitHub read has a total deadline and a bounded parse (issue 15): an answer that drips,
is huge (or a gzip bomb), is nested past 64 levels, is garbage or has no usable shape is a
one-line GitHubError, never a hang or a traceback; so is such an event payload file.

The fake GitHub answers with the hostile bytes; a dripping answer goes on until the client
leaves, which the fake reports (``gave_up``): the tests wait on that, never on the clock."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.github import http as github_http
from sync.github.actions import GitHubConfig, GitHubError
from sync.github.client import GitHubClient
from sync.github.pulls import PullRequestClient
from sync.untrusted.json_parser import MAX_JSON_BYTES as MAX_BODY_BYTES

from .support.fake_github import FakeGitHub, fake_github

__all__ = ["fake_github"]

MiB = 2**20


@pytest.fixture
def client(fake_github: FakeGitHub) -> Iterator[GitHubClient]:
    config = GitHubConfig.from_env(fake_github.env())
    with GitHubClient(config, timeout=0.5, sleep=lambda _: None) as gh:
        yield gh


def one_line(err: pytest.ExceptionInfo[GitHubError]) -> str:
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_an_answer_that_drips_ends_at_the_deadline_on_every_try(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request()
    # Far more bytes than the deadline lets through: the fake drips until the client leaves.
    fake_github.answer_next(b"[" + b" " * 100_000 + b"]", 3, drip=0.01, path="/comments$")
    with pytest.raises(GitHubError) as err:
        client.list_comments(pr)
    message = one_line(err)
    assert "no complete answer within 0.5 s" in message
    assert f"GET /repos/{fake_github.repo}/issues/{pr}/comments" in message
    assert "after 3 attempt(s)" in message  # each retry had its own deadline
    for _ in range(3):  # the client left each of the three answers
        assert fake_github.gave_up.acquire(timeout=60)


def test_a_write_whose_answer_drips_may_have_been_stored(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    pr = fake_github.add_pull_request()
    fake_github.answer_next(b"{" + b" " * 100_000 + b"}", drip=0.01, method="POST")
    with pytest.raises(GitHubError) as err:
        client.post_comment(pr, "hello")
    assert "no complete answer within 0.5 s" in one_line(err)
    assert err.value.maybe_committed  # a POST is not sent again blindly
    assert len(fake_github.calls_to("POST")) == 1
    assert fake_github.gave_up.acquire(timeout=60)


@pytest.mark.parametrize("depth", [100, 100_000])
def test_an_answer_nested_too_deep_is_refused(
    fake_github: FakeGitHub, client: GitHubClient, depth: int
) -> None:
    pr = fake_github.add_pull_request()
    fake_github.answer_next(b"[" * depth + b"]" * depth, path="/comments$")
    with pytest.raises(GitHubError) as err:
        client.list_comments(pr)
    assert "nested deeper than 64 levels" in one_line(err)


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_an_answer_past_16_mib_is_refused(
    fake_github: FakeGitHub, client: GitHubClient, encoding: str
) -> None:
    pr = fake_github.add_pull_request()
    body = b"[" + b" " * MAX_BODY_BYTES + b"]"
    headers = {}
    if encoding == "gzip":  # 16 MiB of spaces compress to a few KiB: capped after decoding
        body, headers = gzip.compress(body), {"Content-Encoding": "gzip"}
    fake_github.answer_next(body, path="/comments$", headers=headers)
    with pytest.raises(GitHubError) as err:
        client.list_comments(pr)
    assert "larger than 16 MiB" in one_line(err)
    assert len(fake_github.calls) == 1  # not asked again


@pytest.mark.parametrize(
    ("raw", "status", "says"),
    [
        (b"<html>502 Bad Gateway</html>", 200, "not JSON"),
        (b"\xff\xfe garbage", 200, "not JSON"),
        (b"{}", 201, "whole-number id"),  # a created comment without its id
        (b'{"id": "7"}', 201, "whole-number id"),
        (b"[1, 2]", 201, "something other than an object"),
    ],
)
def test_a_garbled_answer_to_a_post_is_one_line(
    fake_github: FakeGitHub, client: GitHubClient, raw: bytes, status: int, says: str
) -> None:
    pr = fake_github.add_pull_request()
    fake_github.answer_next(raw, status=status, method="POST")
    with pytest.raises(GitHubError) as err:
        client.post_comment(pr, "x")
    assert says in one_line(err)


def test_an_error_answer_nested_deep_still_says_what_to_do(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    fake_github.answer_next(b"[" * 100_000 + b"]" * 100_000, status=404, method="POST")
    with pytest.raises(GitHubError) as err:
        client.post_comment(1, "x")
    assert "404" in one_line(err) and "not found" in str(err.value)


def test_git_answers_without_a_sha_are_one_line(fake_github: FakeGitHub) -> None:
    fake_github.answer_next(b'{"tree": "not an object"}', path="/git/commits/")
    config = GitHubConfig.from_env(fake_github.env())
    with PullRequestClient(config) as gh, pytest.raises(GitHubError) as err:
        gh.commit_file("a" * 40, "fleet.yaml", b"x", "m")
    assert "no sha" in one_line(err)


def test_next_page_links_that_never_end_are_refused(
    fake_github: FakeGitHub, client: GitHubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(github_http, "MAX_PAGES", 4)
    pr = fake_github.add_pull_request()
    again = f'<{fake_github.url}/repos/{fake_github.repo}/issues/{pr}/comments?page=2>; rel="next"'
    fake_github.answer_next(b"[]", 4, headers={"Link": again}, path="/comments$")
    with pytest.raises(GitHubError) as err:
        client.list_comments(pr)
    assert "past 4 pages" in one_line(err)
    assert len(fake_github.calls) == 4


def test_a_next_link_that_is_no_url_is_refused(
    fake_github: FakeGitHub, client: GitHubClient
) -> None:
    fake_github.answer_next(b"[]", headers={"Link": '<http://[::1>; rel="next"'})
    with pytest.raises(GitHubError) as err:
        client.list_comments(1)
    assert "another host" in one_line(err)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
        (b'{"pull_request": ' * 70 + b"1" + b"}" * 70, "nested deeper than 64 levels"),
        (b"\x00\x01", "not JSON"),
        (b" " * (MAX_BODY_BYTES + 1), "larger than 16 MiB"),
    ],
)
def test_a_hostile_event_payload_is_one_line(
    fake_github: FakeGitHub, tmp_path: Path, content: bytes, says: str
) -> None:
    event = tmp_path / "event.json"
    event.write_bytes(content)
    config = GitHubConfig.from_env(fake_github.env(GITHUB_EVENT_PATH=str(event)))
    with GitHubClient(config) as gh, pytest.raises(GitHubError) as err:
        gh.pull_request_number()
    message = one_line(err)
    assert says in message and "GITHUB_EVENT_PATH" in message


def test_the_deadline_is_configurable(fake_github: FakeGitHub) -> None:
    assert GitHubConfig.from_env(fake_github.env()).timeout == 30
    env = fake_github.env(FLEET_SYNC_GITHUB_TIMEOUT="2.5")
    assert GitHubConfig.from_env(env).timeout == 2.5
    pr = fake_github.add_pull_request()
    fake_github.answer_next(b"[" + b" " * 100_000 + b"]", 3, drip=0.01, path="/comments$")
    env = fake_github.env(FLEET_SYNC_GITHUB_TIMEOUT="0.3")
    with (
        GitHubClient(GitHubConfig.from_env(env), sleep=lambda _: None) as gh,
        pytest.raises(GitHubError, match=r"within 0\.3 s"),
    ):
        gh.list_comments(pr)


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf", "1e9"])
def test_a_deadline_that_is_no_duration_is_refused(fake_github: FakeGitHub, value: str) -> None:
    with pytest.raises(GitHubError, match="FLEET_SYNC_GITHUB_TIMEOUT"):
        GitHubConfig.from_env(fake_github.env(FLEET_SYNC_GITHUB_TIMEOUT=value))


def test_all_of_a_commands_github_work_has_a_total_budget(fake_github: FakeGitHub) -> None:
    # Each page comes at once and links to another: no request is late, the listing never
    # ends. The clock moves 10 s with each request the fake answers (no wall clock).
    pr = fake_github.add_pull_request()
    again = f'<{fake_github.url}/repos/{fake_github.repo}/issues/{pr}/comments?page=2>; rel="next"'
    fake_github.answer_next(b"[]", 50, headers={"Link": again}, path="/comments$")
    config = GitHubConfig.from_env(fake_github.env())

    def clock() -> float:
        return 10.0 * len(fake_github.calls)

    with GitHubClient(config, budget=35, clock=clock) as gh, pytest.raises(GitHubError) as err:
        gh.list_comments(pr)
    message = one_line(err)
    assert "budget of 35 s" in message
    # The fake answered 4 (the clock moves only with those); the client counts its attempts,
    # and on a loaded machine a kept-alive connection the fake closed is one more.
    sent = re.search(r"\((\d+) request\(s\);", message)
    assert sent is not None and int(sent.group(1)) >= 4, message
    assert len(fake_github.calls) == 4


def test_the_budget_follows_the_request_deadline_within_bounds() -> None:
    assert github_http.total_budget(30) == 300  # the default: five minutes
    assert github_http.total_budget(1) == 60
    assert github_http.total_budget(3600) == 1800  # never past half an hour
    # Every real listing fits the page bound many times over.
    assert github_http.MAX_PAGES * github_http.PAGE_SIZE >= 10_000


def test_a_retry_pause_that_would_pass_the_budget_is_not_taken(fake_github: FakeGitHub) -> None:
    fake_github.fail_next(3, 502)
    config = GitHubConfig.from_env(fake_github.env())
    pauses: list[float] = []
    with (
        GitHubClient(config, budget=60, backoff=100, sleep=pauses.append) as gh,
        pytest.raises(GitHubError, match="budget of 60 s"),
    ):
        gh.list_comments(1)
    assert pauses == [] and len(fake_github.calls) == 1


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "9" * 20}, "retry later"),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "9" * 5000}, "retry later"),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "100000000000000000"}, "later"),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1e17"}, "retry later"),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "-5"}, "retry later"),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1700000000"}, "2023-11-14"),
        ({"retry-after": "\u00b2"}, "retry later"),
        ({"retry-after": "9" * 30}, "retry later"),
        ({"retry-after": "60"}, "retry after 60 s"),
    ],
)
def test_a_hostile_rate_limit_answer_is_one_line(
    fake_github: FakeGitHub, client: GitHubClient, headers: dict[str, str], says: str
) -> None:
    body = b'{"message":"API rate limit exceeded"}'
    fake_github.answer_next(body, status=403, headers=headers)
    with pytest.raises(GitHubError) as err:
        client.list_comments(7)
    message = one_line(err)
    assert "rate limit" in message and says in message


def test_header_seconds_are_ascii_digits_in_range() -> None:
    from sync.github.actions import header_seconds

    assert header_seconds(" 42 ", 100) == 42
    assert header_seconds("101", 100) is None
    assert header_seconds("\u0661\u0662", 100) is None  # digits, but not ASCII ones
    assert header_seconds("", 100) is None and header_seconds(None, 100) is None
