"""A bad value in the environment is one line naming the variable and the fix, exit 1: never a
traceback from httpx (a key it cannot put in a header, an address it cannot parse) or from a
file that is a directory (issue 15, attack a3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sync.github.actions import GitHubConfig, GitHubError, write_step_summary

from .support.fake_github import FakeGitHub, fake_github
from .support.proxyharness import crashed, fleet_sync

__all__ = ["fake_github"]

FLEET = """version: 1
fleet: env-check
models:
  m:
    served_model: org/m
    hosts:
      - name: a
        api_base: http://127.0.0.1:9/v1
"""


def config_error(fake: FakeGitHub, **env: str) -> str:
    with pytest.raises(GitHubError) as err:
        GitHubConfig.from_env(fake.env(**env))
    message = str(err.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "token", ["ghs_\u00e9_0123456789SECRET", "ghs_0123\n456789SECRET", "ghs_\u202e0123SECRET"]
)
def test_a_token_http_cannot_send_is_named(fake_github: FakeGitHub, token: str) -> None:
    message = config_error(fake_github, GITHUB_TOKEN=token)
    assert message.startswith("GITHUB_TOKEN cannot be sent to GitHub")
    assert "SECRET" not in message


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[::1", "is not a valid address"),
        ("http://xn--/", "is not a valid address"),
        ("http://\u00e9\u0301x.\u2488/", "is not a valid address"),
        ("ftp://127.0.0.1:9", "must start with https://"),
        ("http://a b/", "has no valid host"),
        ("http://127.0.0.1:99999", "has no valid host and port"),
        ("http:///api", "has no valid host"),
        ("https://user:pw@api.github.com", "carries credentials"),
    ],
)
def test_an_api_address_httpx_cannot_use_is_named(
    fake_github: FakeGitHub, url: str, why: str
) -> None:
    message = config_error(fake_github, GITHUB_API_URL=url)
    assert message.startswith("GITHUB_API_URL=") and why in message
    assert "pw@" not in message


@pytest.mark.parametrize("repository", ["a/b?x=1#", "a/b/c", "a/../b", "a", "a/b c"])
def test_a_repository_that_would_change_the_request_path_is_refused(
    fake_github: FakeGitHub, repository: str
) -> None:
    assert "GITHUB_REPOSITORY must be 'owner/name'" in config_error(
        fake_github, GITHUB_REPOSITORY=repository
    )


def test_a_step_summary_that_is_a_directory_is_named(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    message = config_error(fake_github, GITHUB_STEP_SUMMARY=str(tmp_path))
    assert message.startswith(f"GITHUB_STEP_SUMMARY={tmp_path} is a directory")
    config = GitHubConfig.from_env(fake_github.env(GITHUB_STEP_SUMMARY=str(tmp_path / "x" / "y")))
    with pytest.raises(GitHubError, match=r"^GITHUB_STEP_SUMMARY=.* cannot be written"):
        write_step_summary(config, "# plan\n")


@pytest.mark.parametrize(
    ("command", "variable"),
    [
        (["plan"], "LITELLM_PROXY_READ_API_KEY"),
        (["apply"], "LITELLM_PROXY_API_KEY"),
        (["drift", "--fix"], "LITELLM_PROXY_API_KEY"),
    ],
)
@pytest.mark.parametrize("key", ["sk-\u00e9-SECRETVALUE123456", "sk-abc\nSECRETVALUE123456"])
def test_a_proxy_key_http_cannot_send_is_named(
    tmp_path: Path, command: list[str], variable: str, key: str
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    # Nothing is asked: the key is refused before any request (no proxy listens on port 9).
    env = {"LITELLM_PROXY_URL": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
    env["LITELLM_PROXY_READ_API_KEY"] = "sk-read-0123456789" if command[0] == "drift" else key
    env["LITELLM_PROXY_API_KEY"] = key
    run = fleet_sync([*command, "-f", str(fleet)], env)
    assert run.code == 1
    why = "not ASCII" if "\u00e9" in key else "a control character"
    assert run.err.count("\n") == 1 and why in run.err
    assert run.err.startswith(f"error: {variable} cannot be sent to the proxy: ")
    assert "SECRETVALUE" not in run.out + run.err and not crashed(run.err)


def test_drift_fix_never_writes_with_the_read_key(tmp_path: Path) -> None:
    """drift --fix holding only LITELLM_PROXY_READ_API_KEY says which key it writes with (a new
    user's finding: it sent the read key, and LiteLLM's refusal named the read variable)."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    env = {"LITELLM_PROXY_URL": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
    env["LITELLM_PROXY_READ_API_KEY"] = "sk-read-0123456789"
    run = fleet_sync(["drift", "--fix", "-f", str(fleet)], env)
    assert run.code == 1 and run.out == ""
    assert run.err == (
        "error: no write key given: drift --fix writes with LITELLM_PROXY_API_KEY (a "
        "proxy_admin key) or --api-key, never LITELLM_PROXY_READ_API_KEY\n"
    )


def test_an_unused_proxy_key_in_the_environment_does_not_stop_a_run_over_targets(
    tmp_path: Path,
) -> None:
    # With targets: LITELLM_PROXY_* is not used; what it holds is judged only where it is sent.
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        FLEET.replace(
            "version: 1\n",
            "version: 1\ntargets:\n  prod:\n    proxy_url: http://127.0.0.1:9\n"
            "    api_key: os.environ/T_PROD_KEY\n",
        )
    )
    env = {"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "T_PROD_KEY": "sk-prod-0123456789"}
    for variable in ("LITELLM_PROXY_API_KEY", "LITELLM_PROXY_READ_API_KEY"):
        run = fleet_sync(["plan", "-f", str(fleet)], {**env, variable: "sk-bad\x01SECRETVALUE"})
        assert run.code == 1 and "cannot be sent to the proxy" not in run.err, run.err
        assert "[prod] error: proxy unreachable" in run.err, run.err
        assert f"note: {variable} not used" in run.err and not crashed(run.err)
