"""Messages that name the fix (issue 24, Deliver 5): a proxy URL ending in /v1 is refused with
the base URL to give, before any request; an unknown provider is located where the file that
was read (-f) writes it; `--target` given a model says what --target selects and that no run is
limited to one model. (A misspelt os.environ/ reference: tests/cases/invalid/100-*.yaml; the
read key's refusal naming LITELLM_PROXY_READ_API_KEY: tests/test_variable_names.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.core.render import render
from sync.fleet.model import load_fleet
from sync.fleet.targets import for_target
from sync.live import state

from .test_variable_names import Refusing, run

FLEET = {"version": 1, "fleet": "f", "models": {"qwen3": {"served_model": "org/q", "hosts": []}}}


@pytest.fixture
def refusing() -> Iterator[Refusing]:
    server = Refusing()
    yield server
    server.close()


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/V1", "/gateway/v1"])
@pytest.mark.parametrize("given", ["option", "variable"])
def test_a_proxy_url_ending_in_v1_is_refused_with_the_base_url(
    tmp_path: Path, refusing: Refusing, suffix: str, given: str
) -> None:
    url = refusing.url + suffix
    env = {"LITELLM_PROXY_API_KEY": "sk-write", "LITELLM_PROXY_READ_API_KEY": "sk-read"}
    if given == "option":
        done = run(tmp_path, FLEET, env, "plan", "--proxy-url", url)
    else:
        done = run(tmp_path, FLEET, {**env, "LITELLM_PROXY_URL": url}, "plan")
    assert done.code == 1, done.out
    expected = refusing.url + ("/gateway" if suffix == "/gateway/v1" else "")
    origin = "--proxy-url" if given == "option" else "LITELLM_PROXY_URL"  # the one read
    assert f"error: proxy URL (from {origin}): {url!r} ends in /v1" in done.out, done.out
    assert f"give {expected} (without /v1)" in done.out, done.out
    assert refusing.seen == []  # refused before any request


def test_a_targets_proxy_url_ending_in_v1_is_refused_by_validate(tmp_path: Path) -> None:
    doc = {
        **FLEET,
        "targets": {"prod": {"proxy_url": "https://proxy.example/v1", "api_key": "os.environ/K"}},
    }
    done = run(tmp_path, doc, {}, "validate")
    assert done.code == 1, done.out
    assert (
        "targets.prod.proxy_url: 'https://proxy.example/v1' ends in /v1, the path of LiteLLM's "
        "OpenAI-compatible API; fleet-sync uses its admin API at the proxy's base URL: give "
        "https://proxy.example (without /v1)"
    ) in done.out, done.out


class Listing:
    """A client of a proxy that lists these providers (what check_providers asks)."""

    urls = ("http://127.0.0.1:9",)

    def read_providers(self, url: str) -> frozenset[str]:
        return frozenset({"hosted_vllm", "openai"})


OTHER = """\
version: 1
fleet: f
defaults:
  provider: hosted_vllm
models:
  m:
    served_model: org/m
    provider: hosted_vlm
    hosts:
      - name: a
        api_base: http://10.0.0.1:8000/v1
      - name: b
        api_base: http://10.0.0.2:8000/v1
        provider: opnai
targets:
  prod:
    proxy_url: http://127.0.0.1:9
    api_key: os.environ/K
"""


def test_an_unknown_provider_is_located_in_the_file_read(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text(OTHER, encoding="utf-8")
    fleet = for_target(load_fleet(path, "other.yaml"), "prod")  # a target's projection too
    with pytest.raises(state.UnknownProviders) as raised:
        state.check_providers(Listing(), fleet, ())  # type: ignore[arg-type]
    assert [str(p) for p in raised.value.problems] == [
        "other.yaml:8:15: m host a: provider 'hosted_vlm' is unknown; did you mean 'hosted_vllm'?",
        "other.yaml:14:19: m host b: provider 'opnai' is unknown; did you mean 'openai'?",
    ]
    assert str(raised.value).startswith("2 route(s) of other.yaml name a provider")
    assert "fleet.yaml" not in str(raised.value)
    assert len(render(fleet)) == 2


def test_an_unknown_default_provider_is_located_at_defaults(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(
        OTHER.replace("  provider: hosted_vllm", "  provider: vllm_hosted")
        .replace("    provider: hosted_vlm\n", "")
        .replace("        provider: opnai\n", ""),
        encoding="utf-8",
    )
    with pytest.raises(state.UnknownProviders) as raised:
        state.check_providers(Listing(), load_fleet(path, "x.yaml"), ())  # type: ignore[arg-type]
    assert [(p.file, p.line, p.col) for p in raised.value.problems] == [("x.yaml", 4, 13)] * 2


def test_target_given_a_model_says_what_target_selects(tmp_path: Path) -> None:
    env = {"LITELLM_PROXY_URL": "http://127.0.0.1:9", "LITELLM_PROXY_API_KEY": "sk-write"}
    done = run(tmp_path, FLEET, env, "plan", "--target", "qwen3")
    assert done.code == 1, done.out
    assert "declares no targets:" in done.out
    assert "--target selects a proxy of targets:, not a model, and 'qwen3' is a model of" in (
        done.out
    )
    assert "No run is limited to one model" in done.out
    assert 'docs/reference/commands.md "--target selects a proxy, not a model"' in done.out
    declared = {**FLEET, "targets": {"prod": {"proxy_url": "http://127.0.0.1:9"}}}
    done = run(tmp_path, declared, env, "plan", "--target", "qwen3")
    assert done.code == 1, done.out
    assert "unknown target(s) qwen3;" in done.out and "declares: prod;" in done.out
    assert "'qwen3' is a model of" in done.out
    # A name that is no model either: what --target selects, and nothing about models.
    done = run(tmp_path, declared, env, "plan", "--target", "stagin")
    assert "--target selects a proxy of targets:, not a model" in done.out
    assert "is a model of" not in done.out


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("LITELLM_PROXY_URL", "http://127.0.0.1:99999", "port 99999 is outside 1-65535"),
        ("LITELLM_PROXY_URLS", "http://127.0.0.1:4000,ftp://x", "must start with http://"),
    ],
)
def test_a_bad_proxy_url_names_the_variable_it_was_read_from(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    """An outside attack: a port out of range or another scheme was said without naming where
    the URL came from."""
    env = {"LITELLM_PROXY_API_KEY": "sk-write", variable: value}
    done = run(tmp_path, FLEET, env, "plan")
    assert done.code == 1, done.out
    assert f"proxy URL (from {variable})" in done.out and said in done.out, done.out
