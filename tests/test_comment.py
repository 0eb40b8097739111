"""sync.github.comment: the hidden header round-trips, markers separate fleets, fit stays under
65,536."""

from __future__ import annotations

import random
import re

import pytest

from sync.github.comment import (
    GITHUB_COMMENT_LIMIT,
    HEADER_RESERVE,
    MAX_FIELD_LEN,
    PlanComment,
    fit,
    marker_for,
)

HASH = "sha256:" + "0123456789abcdef" * 4

TRICKY_BODIES = [
    "",
    "\n",
    "\r\n",
    "\n\nleading blank lines",
    "no trailing newline",
    "--> closes nothing",
    "<!-- fleet-sync:plan fleet=other hash=sha256:x -->\nan inner header",
    "```diff\n- a\n+ b\n```\n",
    "unicode … ✓ 模型 \U0001f680",
    "\r\nwindows\r\nlines\r\n",
]


def random_body(rng: random.Random) -> str:
    alphabet = "ab -<>!`~\n\r\t…✓=:#/\\\"'"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 200)))


def random_token(rng: random.Random) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABC0123456789._:-=/+"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, MAX_FIELD_LEN + 1)))


def test_render_puts_the_hidden_header_first() -> None:
    comment = PlanComment(fleet="gpu-fleet", plan_hash=HASH, kind="plan", body="## Plan\n")
    assert comment.render() == f"<!-- fleet-sync:plan fleet=gpu-fleet hash={HASH} -->\n## Plan\n"
    applied = PlanComment(fleet="gpu-fleet", plan_hash=HASH, kind="apply", body="done")
    assert applied.render().startswith("<!-- fleet-sync:apply fleet=gpu-fleet hash=sha256:")


@pytest.mark.parametrize("body", TRICKY_BODIES)
@pytest.mark.parametrize("kind", ["plan", "apply"])
def test_round_trip_tricky_bodies(body: str, kind: str) -> None:
    comment = PlanComment(fleet="gpu-fleet", plan_hash=HASH, kind=kind, body=body)
    assert PlanComment.parse(comment.render()) == comment


def test_round_trip_property() -> None:
    rng = random.Random(20260)
    for _ in range(2000):
        comment = PlanComment(
            fleet=random_token(rng),
            plan_hash=random_token(rng),
            kind=rng.choice(["plan", "apply"]),
            body=random_body(rng),
        )
        rendered = comment.render()
        assert PlanComment.parse(rendered) == comment, rendered
        assert rendered.startswith(marker_for(comment.fleet, comment.kind))
        assert len(rendered) - len(comment.body) <= HEADER_RESERVE


@pytest.mark.parametrize(
    "text",
    [
        "",
        "just a comment",
        "<!-- fleet-sync:plan fleet=gpu-fleet hash=x -->",  # no newline after the header
        "<!-- fleet-sync:drift fleet=gpu-fleet -->\nbody",  # the drift issue, not a comment
        "<!-- fleet-sync:destroy fleet=a hash=b -->\nbody",
        " <!-- fleet-sync:plan fleet=a hash=b -->\nnot first",
        "> <!-- fleet-sync:plan fleet=a hash=b -->\nquoted",
    ],
)
def test_parse_rejects_what_is_not_a_comment(text: str) -> None:
    assert PlanComment.parse(text) is None


def test_marker_matches_same_fleet_any_hash_and_nothing_else() -> None:
    marker = marker_for("gpu", "plan")
    old = PlanComment("gpu", "sha256:" + "1" * 64, "plan", "old").render()
    new = PlanComment("gpu", "sha256:" + "2" * 64, "plan", "new").render()
    longer_name = PlanComment("gpu-2", HASH, "plan", "x").render()
    apply = PlanComment("gpu", HASH, "apply", "x").render()
    assert marker in old
    assert marker in new
    assert marker not in longer_name
    assert marker not in apply
    assert PlanComment("gpu", HASH, "plan", "x").marker == marker


@pytest.mark.parametrize(
    ("fleet", "plan_hash", "kind"),
    [
        ("has space", HASH, "plan"),
        ("a>b", HASH, "plan"),
        ("", HASH, "plan"),
        ("gpu", "", "plan"),
        ("gpu", "sha256:x -->", "plan"),
        ("gpu", HASH, "drift"),
        ("x" * (MAX_FIELD_LEN + 1), HASH, "plan"),
    ],
)
def test_invalid_fields_are_refused(fleet: str, plan_hash: str, kind: str) -> None:
    with pytest.raises(ValueError):
        PlanComment(fleet=fleet, plan_hash=plan_hash, kind=kind, body="")


# ---------------------------------------------------------------------------- fit


def big_plan(lines: int) -> str:
    out = ["## Plan for gpu-fleet", "", "<details><summary>Changes</summary>", "", "```diff"]
    out += [
        f"+ route qwen3.8-27b/runpod-{i:04d} api_base=http://103.196.86.105:{17000 + i}/v1"
        for i in range(lines - len(out) - 3)
    ]
    out += ["```", "", "</details>"]
    assert len(out) == lines
    return "\n".join(out) + "\n"


def fence_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"^ {0,3}(```|~~~)", line)]


def test_fit_keeps_a_3000_line_plan_under_the_limit_and_says_so() -> None:
    body = big_plan(3000)
    assert len(body) > GITHUB_COMMENT_LIMIT
    fitted = fit(body)
    rendered = PlanComment("gpu-fleet", HASH, "plan", fitted).render()

    assert len(rendered) < GITHUB_COMMENT_LIMIT
    match = re.search(r"… truncated: (\d+) of (\d+) lines shown; (.*)$", fitted.rstrip("\n"))
    assert match is not None, fitted[-300:]
    shown, total = int(match.group(1)), int(match.group(2))
    assert total == 3000
    assert 0 < shown < 3000
    assert "the full plan is in the job summary" in match.group(3)
    # The kept part is the body's first `shown` lines, cut at a line boundary.
    assert fitted.startswith("".join(body.splitlines(keepends=True)[:shown]))
    # It uses the room it has (not cut absurdly short).
    assert len(rendered) > GITHUB_COMMENT_LIMIT - 1000
    # Cut inside the diff fence and the <details>: both are closed before the note.
    assert len(fence_lines(fitted)) % 2 == 0
    assert fitted.count("<details>") == fitted.count("</details>") == 1
    assert fitted.index("</details>") < fitted.index("… truncated")
    assert PlanComment.parse(rendered) == PlanComment("gpu-fleet", HASH, "plan", fitted)


def test_fit_leaves_a_small_body_alone() -> None:
    body = big_plan(50)
    assert fit(body) == body


def test_fit_honours_a_custom_limit_and_note() -> None:
    body = "".join(f"line {i}\n" for i in range(1000))
    fitted = fit(body, limit=HEADER_RESERVE + 500, note="see the artifact")
    assert len(fitted) < 500
    assert fitted.rstrip("\n").endswith("lines shown; see the artifact")
    assert "of 1000 lines shown" in fitted
    assert len(fence_lines(fitted)) == 0
    assert "</details>" not in fitted


def test_fit_closes_a_longer_fence_with_the_same_run() -> None:
    body = "intro\n````markdown\n" + "".join(f"```inner {i}\n" for i in range(5000))
    fitted = fit(body, limit=HEADER_RESERVE + 2000)
    kept = fitted[: fitted.index("\n… truncated")]
    assert kept.rstrip("\n").endswith("\n````")


def test_fit_does_not_close_what_was_already_closed() -> None:
    head = "<details>\n\n```\ncode\n```\n\n</details>\n\n"
    body = head + "".join(f"- item {i}\n" for i in range(20000))
    fitted = fit(body)
    assert fitted.count("</details>") == 1
    assert len(fence_lines(fitted)) == 2


def test_fit_one_giant_line_shows_nothing_but_the_note() -> None:
    body = "x" * 100_000 + "\nshort\n"
    fitted = fit(body)
    assert fitted.startswith("\n… truncated: 0 of 2 lines shown")
    assert len(fitted) < GITHUB_COMMENT_LIMIT


def test_fit_refuses_a_limit_with_no_room() -> None:
    with pytest.raises(ValueError):
        fit("a\n" * 1000, limit=HEADER_RESERVE + 10)
