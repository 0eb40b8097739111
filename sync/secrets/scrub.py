"""The last line of defence: every text fleet-sync emits passes through one scrub.

Redaction by provenance (sync/report/redaction.py) decides which live values a plan may show. This
module does not reason about values at all: it knows the secrets of this run — the proxy's
admin key, the GitHub token, the values of the environment variables fleet.yaml references —
and removes them, the user:password@ of any address, and tokens of an unmistakable shape, from
whatever is about to leave the process: stdout, stderr (both wrapped for the whole command,
tracebacks and usage errors included), files written, the PR comment, the drift issue, the job
summary, every body sent to GitHub. It also holds the last of the display rule
(sync/secrets/display.py) for what is shown — stdout, stderr, the comment, the issue, the job
summary: every non-printable character but a newline is escaped there, and on stdout and stderr no
line is a GitHub workflow command (validate's annotations excepted). Files written as data (a saved
plan, a rendered config, an imported fleet.yaml) keep their characters: only secrets go.

Which shapes (sync/secrets/credentials.py mask_tokens): issuers' tokens (ghp_, github_pat_, glpat-,
xoxb-, hf_, ya29., AKIA/ASIA, AIza, RunPod's rpa_, Groq's gsk_ and the other LLM providers' of
that list), JWTs, PEM and PGP private keys, and the value of a secret in a query
(?api_key=***, ?key=***). Sound here because nothing fleet-sync writes itself has those shapes: a
plan hash is sha256: and hex, digests and route ids are hex and names joined by "-" (validate
refuses these shapes in names), commit ids are hex, and the base64 of a git blob cannot hold one
(each has a character base64 lacks, or is bounded by one). Not masked here, though validate
refuses them and redaction hides them in live values: sk-/pk-/rk- keys, whose tail is whatever a
person chose, so a fleet named sk-prod would lose its route ids (sk-prod-...); and long random or
hex runs, which every plan hash, commit id and git blob is. The keys of this run (sk-... too)
are masked by value above.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import stat
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from sync.secrets import display
from sync.secrets.credentials import MASK as MASK  # what every scrubbed secret shows
from sync.secrets.credentials import mask_tokens, referenced_names, strip_userinfo

# Shorter values are not worth the name of a secret and would mangle every output (a port
# "8000" or a flag "true" in an environment variable); redaction by provenance still hides
# them in plans.
MIN_SECRET_LENGTH = 6
# Environment variables that hold this run's credentials whatever fleet.yaml says.
CREDENTIAL_VARIABLES = (
    "LITELLM_PROXY_API_KEY",
    "LITELLM_PROXY_READ_API_KEY",
    "LITELLM_MASTER_KEY",
    "GITHUB_TOKEN",
)
# fleet.yaml larger than this is refused by the loader anyway (yamlmarks.MAX_BYTES; not imported:
# this module is loaded by every command, `--version` included, and yamlmarks loads PyYAML).
FLEET_READ_LIMIT = 4 * 1024 * 1024


class Scrubber:
    """The secrets of one run, and the scrub that removes them from text."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._lock = threading.Lock()
        self._forms: tuple[str, ...] = ()
        self._secrets: set[str] = set()
        self.remember(*secrets)

    def remember(self, *values: str | None) -> None:
        """Add secrets; short or blank values are ignored (see MIN_SECRET_LENGTH)."""
        fresh = {v for v in values if v and len(v.strip()) >= MIN_SECRET_LENGTH}
        with self._lock:
            if fresh <= self._secrets:
                return
            self._secrets |= fresh
            forms = set(self._secrets)
            # JSON output escapes quotes, backslashes and non-ASCII: mask that form too.
            forms |= {json.dumps(s)[1:-1] for s in self._secrets}
            forms |= {json.dumps(s, ensure_ascii=False)[1:-1] for s in self._secrets}
            forms |= {form for s in self._secrets for form in _abbreviations(s)}
            self._forms = tuple(sorted(forms, key=len, reverse=True))  # longest first

    def remember_references(self, text: str, environ: Mapping[str, str]) -> None:
        """The values (in this process's environment) of every os.environ/NAME in a text."""
        self.remember(*(environ.get(name) for name in sorted(referenced_names(text))))

    def remember_fleet(self, path: Path, environ: Mapping[str, str]) -> None:
        """As remember_references, for fleet.yaml read as text (valid or not)."""
        try:  # a regular file only, without waiting on a FIFO (the reader refuses the rest)
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    return
                raw = fh.read(FLEET_READ_LIMIT)
        except OSError:
            return
        self.remember_references(raw.decode("utf-8", errors="replace"), environ)

    def __call__(self, text: str, keep: re.Pattern[str] | None = None) -> str:
        """Text to show (a stream, a comment, the job summary): `masked`, and with every
        non-printable character but a newline escaped (sync/secrets/display.py), except the matches
        of `keep`."""
        return display.controls(self.masked(text), keep)

    def masked(self, text: str) -> str:
        """The text without this run's secrets, user:password@ of addresses and tokens of an
        unmistakable shape; nothing else changed (a file's data stays exact)."""
        text = strip_userinfo(text)
        for form in self._forms:
            if form in text:
                text = text.replace(form, MASK)
        return mask_tokens(text, MASK)

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string in it scrubbed."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def _abbreviations(secret: str) -> tuple[str, ...]:
    """How LiteLLM quotes a key it received, by its last four characters: a refused key's
    `Received=ghp_****abcd` (user_api_key_auth.py) and a key's name `sk-...abcd`
    (auth_utils.abbreviate_api_key). Masked whole, so no output carries a piece of a key this
    run sent. LiteLLM abbreviates keys of more than 8 characters only."""
    if len(secret) <= 8:
        return ()
    tail = secret[-4:]
    return (f"{secret[:4]}****{tail}", f"****{tail}", f"sk-...{tail}")


_active = Scrubber()


def active() -> Scrubber:
    """The scrubber of the command running now."""
    return _active


def scrub(text: str) -> str:
    return _active(text)


def remember(*values: str | None) -> None:
    _active.remember(*values)


def write_text(path: Path, text: str) -> None:
    """Write an output file (a saved plan, a rendered config, an imported fleet.yaml), its
    secrets masked: data, written exactly otherwise (what it quotes from outside is made safe
    where it is shown, sync/secrets/display.py)."""
    path.write_text(_active.masked(text), encoding="utf-8")


# The terminal sequences fleet-sync writes itself (colours of a plan, the live progress line):
# kept on a terminal, escaped everywhere else like any other control character.
OWN_TERMINAL_SEQUENCES = re.compile(r"\x1b\[(?:0|2|31|32|33)m|\x1b\[K|\r")


# What a shell's completion reads besides lines: fish takes "value<TAB>help" (click's
# FishComplete). Kept on stdout while click answers a completion request (session(completion=)).
COMPLETION_SEPARATORS = re.compile("\t")


class ScrubbedStream(io.TextIOBase):
    """A text stream that scrubs what it passes on. Whole lines are scrubbed at once, so a
    secret split over two writes is still found; the rest goes out on flush. Every line also
    goes through display.stream_line: GitHub Actions reads stdout and stderr for workflow
    commands, and no line fleet-sync writes is one (validate's annotations excepted, written
    through write_annotations). Bytes written to its `buffer` (click writes a shell's
    completion script and answers as bytes) are decoded and go through the same scrub.
    `keep`: what passes unescaped besides the terminal sequences kept on a terminal."""

    def __init__(
        self, inner: TextIO, scrubber: Scrubber, keep: re.Pattern[str] | None = None
    ) -> None:
        super().__init__()
        self.inner = inner
        self._scrubber = scrubber
        self._pending = ""
        self._lock = threading.Lock()
        self._keep = OWN_TERMINAL_SEQUENCES if _isatty(inner) else None
        if keep is not None:
            self._keep = (
                keep if self._keep is None else re.compile(f"{self._keep.pattern}|{keep.pattern}")
            )
        self._buffer = ScrubbedBytes(self)

    @property
    def buffer(self) -> ScrubbedBytes:
        """The binary side of this stream: what is written there is scrubbed as text."""
        return self._buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]  # read-only on TextIOBase
        return getattr(self.inner, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.inner.isatty()

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            self._pending += text
            complete, newline, rest = self._pending.rpartition("\n")
            if newline:
                self._pending = rest
                self.inner.write(self._lines(complete + newline))
        return len(text)

    def write_annotations(self, text: str) -> None:
        """Lines that are GitHub annotations on purpose (validate --format github): those of
        exactly that form keep their `::`; anything else is scrubbed as usual."""
        with self._lock:
            self._flush_pending()
            self.inner.write(self._lines(text, annotations=True))

    def _lines(self, text: str, annotations: bool = False) -> str:
        return display.stream_text(self._scrubber(text, self._keep), annotations)

    def _flush_pending(self) -> None:
        if self._pending:
            self.inner.write(self._lines(self._pending))
            self._pending = ""

    def flush(self) -> None:
        """On a terminal, the partial line goes out (the live progress line); anywhere else
        (a CI log) it waits for its newline: a line is judged whole, so one split between its
        two colons cannot pass as two harmless halves."""
        with self._lock:
            if self._keep is not None:
                self._flush_pending()
        self.inner.flush()

    def finish(self) -> None:
        """The end of the session: whatever is left goes out."""
        if tail := self._buffer.rest():
            self.write(tail)
        with self._lock:
            self._flush_pending()
        self.inner.flush()


class ScrubbedBytes(io.RawIOBase):
    """The `buffer` of a ScrubbedStream: bytes decoded (in the stream's encoding, a character
    split over two writes kept whole, undecodable bytes replaced) and written as text, so they
    are scrubbed, escaped and judged by line like every other output."""

    def __init__(self, text: ScrubbedStream) -> None:
        super().__init__()
        self._text = text
        self._decoder = codecs.getincrementaldecoder(text.encoding)(errors="replace")

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raw = bytes(data)
        self._text.write(self._decoder.decode(raw))
        return len(raw)

    def flush(self) -> None:
        self._text.flush()

    def rest(self) -> str:
        """What an incomplete character at the end decodes to (the stream is ending)."""
        return self._decoder.decode(b"", final=True)


def _closed() -> TextIO:
    return io.StringIO()  # discarded with the session


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


def write_annotations(text: str) -> None:
    """Write GitHub annotations to stdout (validate --format github): the one place where a
    line fleet-sync writes may start with `::`."""
    stream = sys.stdout
    if isinstance(stream, ScrubbedStream):
        stream.write_annotations(text)
    else:  # outside a session (a library call): nothing is scrubbed there anyway
        stream.write(text)


@contextmanager
def session(
    environ: Mapping[str, str] | None = None, completion: bool = False
) -> Iterator[Scrubber]:
    """A fresh scrubber for one command, with stdout and stderr scrubbed until it ends.
    `completion`: the command answers a shell's completion request, whose stdout the shell
    reads (its separators kept: COMPLETION_SEPARATORS); secrets are masked there as anywhere."""
    global _active
    environ = os.environ if environ is None else environ
    scrubber = Scrubber(environ.get(name) for name in CREDENTIAL_VARIABLES)
    saved = _active, sys.stdout, sys.stderr
    _active = scrubber
    keep = COMPLETION_SEPARATORS if completion else None
    # A stream closed by the caller (`>&-`: Python makes it None) takes nothing, silently.
    sys.stdout = ScrubbedStream(saved[1] or _closed(), scrubber, keep)
    sys.stderr = ScrubbedStream(saved[2] or _closed(), scrubber)
    try:
        yield scrubber
    finally:
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, ScrubbedStream):
                stream.finish()
            else:  # replaced by someone inside the session
                stream.flush()
        _active, sys.stdout, sys.stderr = saved
