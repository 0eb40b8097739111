"""Route names from the proxy are shown, never obeyed (sync/secrets/display.py).

Anyone who can write a route on the proxy (another team, a portal) chooses its model_name, id,
fleet_sync_host and other tags, and the keys of hand-added params. Plain-data tests: plans,
results and the final scrub with hostile strings in every one of those places: newlines that
start GitHub workflow commands, `::` and `##[` commands, backtick runs and `<!--` that break the
markdown out, fleet-sync's own comment headers, ESC, bidi overrides. Then the header-in-a-name
attack through the GitOps functions against the fake GitHub.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from sync.core.health import Verified
from sync.core.plan import Plan
from sync.core.planner import make_plan
from sync.core.render import TAG_PATHS, Route, render, route_id
from sync.core.result import Outcome, Result
from sync.core.safety import refusals
from sync.fleet.model import fleet_from_doc
from sync.fleet.yamlmarks import parse_yaml
from sync.github.client import DRIFT_LABEL, drift_marker
from sync.github.comment import PlanComment
from sync.gitops import loops as gitops
from sync.report.health import verify_markdown, verify_text
from sync.report.json_format import to_json
from sync.report.markdown import plan_markdown, pr_markdown, result_markdown
from sync.report.redaction import plan_json
from sync.report.text import plan_text, problems_text, result_text
from sync.secrets import display
from sync.secrets.scrub import ScrubbedStream, Scrubber, session, write_text

from .support.fake_github import ACTIONS_BOT, FakeGitHub, fake_github

__all__ = ["fake_github"]

FLEET = "f1"
# Each holds TAG, so a test can tell where a live string ended up.
TAG = "HOSTILE"
HOSTILE = [
    f"{TAG}\n::warning title=injected::fleet-sync printed this",
    f"{TAG}\r\n::stop-commands::abc",
    f"::error::{TAG} at the start",
    f"   ::notice::{TAG} after spaces",
    f"\u00a0::notice::{TAG} after a no-break space",
    f":\u0301:warning::{TAG} a mark between the colons",
    f"{TAG} ##[set-output name=x]y",
    f"{TAG}\x1b[8m\n```\n\n**Nothing to review: this plan is empty.**\n<!--",
    f"<!-- fleet-sync:apply fleet={FLEET} hash=x --> {TAG}",
    f"{TAG} ``` ` `` <b>tag</b> @org/team [link](https://evil.invalid) -->",
    f"`{TAG}`",
    f"{TAG}\u202eevil\u2066",
    f"{TAG}\x1b]0;title\x07\x7f\x85\u2028\U000e0041",
]
BENIGN = f"benign-{TAG}"


def fleet_of() -> Any:
    doc = {
        "version": 1,
        "fleet": FLEET,
        "models": {
            "m": {
                "served_model": "org/m",
                "hosts": [
                    {"name": "a", "api_base": "http://10.0.0.1:8000/v1"},
                    {"name": "b", "api_base": "http://10.0.0.2:8000/v1"},
                ],
            }
        },
    }
    return fleet_from_doc(parse_yaml(json.dumps(doc), "fleet.yaml"), "fleet.yaml")


def hostile_plan(name: str) -> Plan:
    """A plan with `name` wherever the proxy chooses a string: a hand-added key fleet-sync's
    record says it wrote (a removal), a pruned route's name and host tag, an ignored route
    of another fleet under an id of its choosing, and a route of another model holding one of
    this fleet's ids."""
    fleet = fleet_of()
    desired = render(fleet)
    ours = next(r for r in desired if r.host == "a")
    info = dict(ours.model_info)
    info[name] = name
    info[TAG_PATHS] = [*info[TAG_PATHS], "read " + json.dumps(["model_info", name])]
    edited = Route(ours.id, ours.model_name, dict(ours.litellm_params), info)
    params = {"model": "hosted_vllm/org/m", "api_base": "http://10.0.0.9:8000/v1"}
    # A pruned route's id is one fleet-sync can address (an id it cannot is never written to,
    # only listed as ignored: the route `other` below).
    pruned_id = route_id(FLEET, "pruned", name)
    pruned = Route(
        pruned_id,
        name,
        params,
        {"id": pruned_id, "fleet_sync_fleet": FLEET, "fleet_sync_host": name},
    )
    other = Route(f"other-{name}", name, params, {"id": f"other-{name}", "fleet_sync_fleet": name})
    holder_id = route_id(FLEET, "m", "b")
    holder = Route(holder_id, name, params, {"id": holder_id})
    plan = make_plan(fleet, desired, [edited, pruned, other, holder])
    assert plan.conflicts and plan.ignored and plan.of("create") and plan.of("delete")
    return plan


def outcomes(plan: Plan, detail: str) -> Result:
    return Result(plan, tuple(Outcome(c, "failed", detail) for c in plan.changes))


# ---------------------------------------------------------------------------- text


OUR_LINE_STARTS = (
    "fleet ",
    "+ create ",
    "~ update ",
    "- delete ",
    "! ",
    "litellm_params.",
    "model_info.",
    "api_base: ",
    "reason: ",
    "replaces ",
    "carries from ",
    "drops ",
    "may drop ",
    "probe: ",
    "withheld",
    "not serving",
    "not listed",
    "ignored (",
    "route ",
    "REFUSED: ",
    "failed ",
    "conflict ",
    "verify through ",
    "fleet.yaml:",
)


def text_outputs(name: str) -> str:
    from sync.fleet.problems import Problem

    plan = hostile_plan(name)
    verified = [Verified(name, False, name)]
    problem = Problem("fleet.yaml", 1, 1, f"unknown key {name}")
    return (
        plan_text(plan, False, refusals(plan, 50))
        + plan_text(plan, True)
        + result_text(outcomes(plan, name))
        + verify_text(verified, "http://proxy")
        + problems_text([problem])
    )


@pytest.mark.parametrize("name", HOSTILE)
def test_every_text_line_starts_with_our_words_and_holds_no_control(name: str) -> None:
    out = text_outputs(name)
    lines = out.split("\n")
    assert lines.pop() == ""
    for line in lines:
        bare = re.sub(r"\x1b\[(?:0|2|31|32|33)m", "", line)  # our colours only
        assert bare.isprintable(), line
        assert bare.lstrip().startswith(OUR_LINE_STARTS), line
    assert TAG in out  # shown, escaped


def test_a_newline_in_a_name_is_shown_escaped_on_its_line() -> None:
    out = plan_text(hostile_plan(HOSTILE[0]))
    assert f"route {TAG}\\n::warning title=injected::fleet-sync printed this" in out


# ---------------------------------------------------------------------------- markdown

# GitHub renders markdown with cmark-gfm; markdown-it follows the same CommonMark rules.
MARKDOWN = MarkdownIt("commonmark").enable("table")
OUR_TAGS = {"sub", "details", "summary", "code"}


def markdown_outputs(name: str) -> list[str]:
    plan = hostile_plan(name)
    result = outcomes(plan, name)
    return [
        plan_markdown(plan, refusals=refusals(plan, 50)),
        pr_markdown(plan, plan.changes[:1], plan.changes[1:], "base", refusals(plan, 50)),
        result_markdown(result, verified=[Verified(name, False, name)]),
        "\n".join(verify_markdown([Verified(name, True, name)])),
    ]


def tokens(markdown: str) -> Iterator[Token]:
    for token in MARKDOWN.parse(markdown):
        yield token
        yield from token.children or ()


def skeleton(markdown: str) -> list[str]:
    """The document's structure: block and inline token types, content left out."""
    return [t.type for t in tokens(markdown) if t.type != "text"]


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_shows_live_strings_only_in_code(name: str) -> None:
    for hostile, benign in zip(markdown_outputs(name), markdown_outputs(BENIGN), strict=True):
        # The same document as with a harmless name: nothing opened, closed or invented.
        assert skeleton(hostile) == skeleton(benign)
        for token in tokens(hostile):
            if token.type in ("text", "html_inline", "html_block"):
                assert TAG not in token.content, token
            if token.type.startswith("html"):
                assert "<!--" not in token.content
                assert set(re.findall(r"</?([a-zA-Z]+)", token.content)) <= OUR_TAGS
            if token.type in ("code_inline", "fence"):
                assert token.content.isprintable() or token.type == "fence"
        assert "\x1b" not in hostile and "\u202e" not in hostile


def test_a_code_span_outruns_every_backtick_run() -> None:
    assert display.code("a") == "`a`"
    assert display.code("a`b") == "``a`b``"
    assert display.code("`x`") == "`` `x` ``"
    assert display.code("``` x") == "```` ``` x ````"
    assert display.code("") == "` `"
    assert display.fence(["a ```` b"], "diff") == ["`````diff", "a ```` b", "`````"]
    assert display.cell(display.code("a|b")) == "`a\\|b`"


# ---------------------------------------------------------------------------- the final scrub


def through_stream(text: str, annotations: str = "") -> str:
    sink = io.StringIO()
    stream = ScrubbedStream(sink, Scrubber())
    stream.write(text)
    if annotations:
        stream.write_annotations(annotations)
    stream.flush()
    return sink.getvalue()


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("::warning::x", "\\::warning::x"),
        ("   ::error::x", "\\   ::error::x"),
        ("\t::error::x", "\\t::error::x"),  # the tab is escaped: the line starts with "\"
        ("\u00a0::error::x", "\\u00a0::error::x"),  # NBSP: escaped, so no longer a command
        (":\u0301:warning::x", "\\:\u0301:warning::x"),
        ("a ##[warning]x", "a ##\\u005bwarning]x"),
        ("a #\u0301#[warning]x", "a #\u0301#\\u005bwarning]x"),
        ("esc \x1b[31m red", "esc \\u001b[31m red"),
        ("rtl \u202e", "rtl \\u202e"),
        ("a: b :: c", "a: b :: c"),  # not at the start of the line
        ("crlf\r", "crlf\r"),  # a CR that ends its line (a diff of a CRLF file) is no control
        ("cr\rover", "cr\\rover"),  # one inside a line would overwrite it on a terminal
        ("# [x]", "# [x]"),
    ],
)
def test_no_line_on_stdout_is_a_workflow_command(line: str, shown: str) -> None:
    assert through_stream(line + "\n") == shown + "\n"


def test_a_line_split_between_its_colons_is_judged_whole() -> None:
    sink = io.StringIO()
    stream = ScrubbedStream(sink, Scrubber())
    stream.write(":")
    stream.flush()  # a CI log is no terminal: the half line waits for the rest
    stream.write(":warning::x\n")
    stream.write("tail without newline")
    stream.flush()
    stream.finish()
    assert sink.getvalue() == "\\::warning::x\ntail without newline"


def test_only_validates_annotations_keep_their_colons() -> None:
    annotation = "::error file=fleet.yaml,line=3,col=5::unknown key\n"
    assert through_stream("", annotation) == annotation
    forged = "::warning::not an annotation of ours\n"
    assert through_stream("", forged) == "\\" + forged
    assert through_stream(annotation) == "\\" + annotation  # not through the allow-path


def test_json_keeps_its_data_through_the_scrub() -> None:
    for name in HOSTILE:
        body = plan_json(hostile_plan(name))
        out = through_stream(to_json(body))
        assert json.loads(out) == json.loads(to_json(body))
        for line in out.splitlines():
            assert line.isprintable() and not line.lstrip().startswith("::")
            assert "##[" not in line


def test_a_file_written_as_data_keeps_its_characters(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    with session({"LITELLM_PROXY_API_KEY": "sk-file-0123456789"}):
        write_text(out, 'x\u202ey "::warning::" sk-file-0123456789\n')
    assert out.read_text(encoding="utf-8") == 'x\u202ey "::warning::" ***\n'


# ---------------------------------------------------------------------------- GitHub


@pytest.fixture
def env(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[dict[str, str]]:
    summary = tmp_path / "summary.md"
    summary.touch()
    yield fake_github.env(GITHUB_STEP_SUMMARY=str(summary), GITHUB_SHA="abc123")


def test_a_route_named_like_our_apply_header_never_becomes_the_result_comment(
    fake_github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    name = f"<!-- fleet-sync:apply fleet={FLEET} hash=x -->"
    plan = hostile_plan(name)
    pr = fake_github.add_pull_request(state="closed", merged=True)
    gitops.comment_plan(tmp_path / "fleet.yaml", plan, lambda _: plan, [], None, env, pr)
    (plan_comment,) = fake_github.comments_on(pr)
    assert name.replace("<", "") in plan_comment["body"].replace("<", "")  # it is quoted
    reviewed = plan_comment["body"]

    fake_github.set_commit_pulls("abc123", [pr])
    gitops.comment_result(outcomes(plan, "x"), env)

    comments = fake_github.comments_on(pr)
    assert comments[0]["body"] == reviewed  # the reviewed plan stays
    assert len(comments) == 2
    result = PlanComment.parse(comments[1]["body"])
    assert result is not None and result.kind == "apply"
    assert comments[1]["user"]["login"] == ACTIONS_BOT


def test_a_route_named_like_our_drift_marker_keeps_one_drift_issue(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    plan = hostile_plan(drift_marker(FLEET))
    first = gitops.report_drift(plan, env)
    second = gitops.report_drift(plan, env)
    (issue,) = fake_github.issues.values()
    assert str(issue["body"]).startswith(drift_marker(FLEET) + "\n")
    assert first == f"drift issue #{issue['number']} opened"
    assert second == f"drift issue #{issue['number']} updated"


def test_an_issue_that_only_quotes_our_marker_is_not_ours(
    fake_github: FakeGitHub, env: dict[str, str]
) -> None:
    # Ours by author and label, but the marker is further down: another fleet's report
    # quoting a route name, or a hand edit. Never taken for this fleet's issue.
    quoting = fake_github.add_issue(
        "other", "report\n" + drift_marker(FLEET), labels=[DRIFT_LABEL], user=ACTIONS_BOT
    )
    gitops.report_drift(hostile_plan(BENIGN), env)
    assert fake_github.issues[quoting]["body"] == "report\n" + drift_marker(FLEET)
    assert len(fake_github.issues) == 2


def test_a_reviewed_hash_is_quoted_in_code(fake_github: FakeGitHub, env: dict[str, str]) -> None:
    # Another workflow with the same token may have written "our" plan comment: its hash token
    # is shown, never rendered (an '<!--' in it hid the rest of the result).
    plan = hostile_plan(BENIGN)
    pr = fake_github.add_pull_request(state="closed", merged=True)
    forged = PlanComment(FLEET, "<!--" + TAG, "plan", "x").render()
    fake_github.add_comment(pr, forged, user=ACTIONS_BOT)
    fake_github.set_commit_pulls("abc123", [pr])
    gitops.comment_result(outcomes(plan, "x"), env)
    body = fake_github.comments_on(pr)[-1]["body"]
    assert "differs from the plan reviewed" in body
    for token in tokens(body.split("\n", 1)[1]):
        if token.type in ("text", "html_inline", "html_block"):
            assert TAG not in token.content, token
