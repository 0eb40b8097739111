"""The one display rule for text fleet-sync did not write: a proxy's route names, ids, tags and
keys, a payload's values, GitHub's answers, an upstream's error.

Anyone who can write a route on the proxy (another team, a portal) chooses those strings. Shown
raw, a newline starts a line of their choosing: GitHub Actions runs a log line that begins
(after whitespace) with ``::`` as a workflow command, and one that holds ``##[`` anywhere; an
ESC drives the terminal; U+202E reverses what a reviewer reads; in markdown a backtick run, an
``<!--`` or a tag hides or invents the text around it. So:

- ``text``: every character that is not printable (control, format, separators, surrogates,
  private use, unassigned: ``str.isprintable``) is escaped, ``\\n`` and ``\\uXXXX`` style
  (JSON's own escapes, so JSON output escaped again still reads back the same);
- text reports start every line with fleet-sync's own words, never with such a string;
- ``code``: in markdown, such a string is shown only in a code span whose backtick fence is
  longer than any run in it (and ``fence`` for a fenced block): nothing in it opens a fence, an
  HTML comment, a tag, a link or a mention;
- ``stream_line``: the final scrub of stdout and stderr (sync/secrets/scrub.py) escapes what is left
and
  turns a line that GitHub Actions would run as a command into one it shows.

Pure and import-light: every command loads it.
"""

from __future__ import annotations

import re
import unicodedata

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BACKTICKS = re.compile(r"`+")


def _escape(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code > 0xFFFF:  # a pair of \u escapes, as JSON writes a character past the BMP
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def text(value: str) -> str:
    """`value` on one line with every non-printable character escaped (a space stays)."""
    if value.isprintable():  # the common case, at C speed
        return value
    return "".join(c if c.isprintable() else _escape(c) for c in value)


def controls(value: str, keep: re.Pattern[str] | None = None) -> str:
    """As `text`, but line ends stay (a text of several lines; a CR right before its LF, as
    in a diff of a CRLF file, is no control of the line), and so do the matches of `keep`
    (the terminal sequences fleet-sync writes itself)."""
    if value.replace("\n", "").isprintable():
        return value
    if keep is None:
        *whole, last = value.split("\n")
        ends = [text(line[:-1]) + "\r" if line.endswith("\r") else text(line) for line in whole]
        return "\n".join([*ends, text(last)])
    out: list[str] = []
    end = 0
    for match in keep.finditer(value):
        out += [controls(value[end : match.start()]), match.group()]
        end = match.end()
    return "".join([*out, controls(value[end:])])


# -- markdown ------------------------------------------------------------------------------


def code(value: str) -> str:
    """`value` as one inline code span, whatever it holds (GitHub renders nothing in it)."""
    shown = text(value)
    if not shown:
        return "` `"
    fence = "`" * (_longest_run(shown) + 1)
    # A span that starts or ends with a backtick needs a space to keep it off the fence;
    # CommonMark strips one space from each end when both ends have one.
    pad = " " if shown[0] in "` " or shown[-1] in "` " else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def cell(markdown: str) -> str:
    """Markdown (code spans included) made safe for a table cell: a pipe would end the cell
    (GitHub's table parser takes every backslash-pipe as a pipe, even in a code span)."""
    return markdown.replace("|", "\\|")


def fence(lines: list[str], info: str = "") -> list[str]:
    """`lines` as a fenced code block whose fence is longer than any backtick run in them, so
    no line can close it. Each line is shown by `text`."""
    shown = [text(line) for line in lines]
    ticks = "`" * max(3, max((_longest_run(line) for line in shown), default=0) + 1)
    return [f"{ticks}{info}", *shown, ticks]


def _longest_run(value: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(value)), default=0)


# -- the final scrub of stdout and stderr ----------------------------------------------------


def _ignored(char: str) -> bool:
    """Characters a comparison that follows the culture (the runner's .NET string search)
    may skip: combining marks and format characters."""
    return unicodedata.category(char)[0] == "M" or unicodedata.category(char) == "Cf"


def _command_start(line: str) -> bool:
    """Whether GitHub Actions would read `line` as a ``::command::``: it trims leading
    whitespace, then looks for ``::`` (marks skipped, to be safe)."""
    first = line.lstrip()[:1]
    if not first or (first != ":" and not _ignored(first)):
        return False  # the common case, without a loop over the line in Python
    colons = 0
    for char in line:
        if colons == 0 and char.isspace():
            continue
        if char == ":":
            colons += 1
            if colons == 2:
                return True
        elif not _ignored(char):
            return False
    return False


def _neutral_brackets(line: str) -> str:
    """Every ``##[`` (the runner's older command form, matched anywhere in a line) with its
    ``[`` written as ``\\u005b``: JSON reads it back as ``[``."""
    out: list[str] = []
    for index, char in enumerate(line):
        if char == "[" and _after_two_hashes(line, index):
            out.append("\\u005b")
        else:
            out.append(char)
    return "".join(out)


def _after_two_hashes(line: str, index: int) -> bool:
    hashes = 0
    for char in reversed(line[:index]):
        if char == "#":
            hashes += 1
            if hashes == 2:
                return True
        elif not _ignored(char):
            return False
    return False


# A superset of the lines stream_line changes in a text already through `controls` (whose
# only blanks left are spaces and a CR), found at C speed: a line that starts, after those,
# with ':' or a non-ASCII character (a mark may hide between the colons), and a '#', '#', '['
# with nothing but non-ASCII characters between.
# Written as complements ([^\x00-\x7f] is every non-ASCII character, [^\x00-9;-\x7f] those
# and ':'): the same classes as the ranges up to U+10FFFF, compiled in a hundredth of the time
# (16 ms of every command's start-up otherwise).
_FIRST_LINE = re.compile("[ \r]*[^\x00-9;-\x7f]")
_NEXT_LINE = re.compile("\n[ \r]*[^\x00-9;-\x7f]")
_HASHES = re.compile("#[^\x00-\x7f]*#[^\x00-\x7f]*\\[")


def stream_text(text: str, annotations_allowed: bool = False) -> str:
    """`stream_line` for every line of a text through `controls` (most texts have no line it
    would change: those pass at C speed)."""
    if not (
        _FIRST_LINE.match(text) or _NEXT_LINE.search(text) or ("#" in text and _HASHES.search(text))
    ):
        return text
    return "\n".join(stream_line(line, annotations_allowed) for line in text.split("\n"))


ANNOTATION = re.compile(r"::(?:error|warning|notice) file=[^,:\n]*,line=\d+,col=\d+::[^\n]*")


def stream_line(line: str, annotation_allowed: bool = False) -> str:
    """One line of stdout or stderr (already through `controls`) as GitHub Actions may see it:
    a line it would run as a workflow command starts with a backslash instead, unless it is
    an annotation ``validate --format github`` writes on purpose (`annotation_allowed`)."""
    if "[" in line and "#" in line:
        line = _neutral_brackets(line)
    command = ":" in line and _command_start(line)
    if command and not (annotation_allowed and ANNOTATION.fullmatch(line)):
        return "\\" + line
    return line


def printable(text: str) -> str:
    """Text without control characters (an answer is shown on a terminal)."""
    return "".join(c if c.isprintable() or c == " " else "?" for c in text)
