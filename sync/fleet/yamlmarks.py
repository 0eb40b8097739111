"""Read YAML into plain data plus the line and column of every key and value.

PyYAML's composer gives nodes with marks; we convert them ourselves instead of using its
constructor so that duplicate keys, alias bombs, custom tags and merge keys become located
problems rather than silent overwrites, memory blow-ups or tracebacks.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sync.fleet.problems import FleetError, Problem

# A 10,000-host fleet is ~1 MB (benchmarks/scale.py): 4 MiB leaves room for longer names.
MAX_BYTES = 4 * 1024 * 1024
# A 10,000-host fleet is ~50-110k nodes; 200k leaves room while stopping billion-laughs expansion.
MAX_NODES = 200_000
# Far beyond what validate accepts (32 levels of values, sync/litellm/convergence.py) and far below
# Python's recursion limit: a document nested deeper is refused here, located, never a
# RecursionError (the composer and this converter recurse once per level).
MAX_NESTING = 128

JsonPath = tuple[str | int, ...]
_PLAIN_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}
_STR_TAG = "tag:yaml.org,2002:str"
# A plain key resolves to one of these (a date, and YAML 1.1's "=", too: each kept as written).
_KEY_TAGS = _PLAIN_TAGS | {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}
_COLLECTION_TAGS = {"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"}
_FAST_LOADER = getattr(yaml, "CSafeLoader", None)  # absent when PyYAML was built without libyaml
_PURE_PATH_CHARACTERS = ("\t", "\ufeff", "!", "?")


@dataclass
class Marks:
    """1-based (line, col) of each value and of each mapping key, by JSON path."""

    values: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    keys: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)

    def of_value(self, path: JsonPath) -> tuple[int, int]:
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, (1, 1))

    def of_key(self, path: JsonPath) -> tuple[int, int]:
        return self.keys[path] if path in self.keys else self.of_value(path)


def _tag(tag: str) -> str:
    """The tag as it was written: !!python/object rather than tag:yaml.org,2002:python/object."""
    prefix = "tag:yaml.org,2002:"
    return "!!" + tag.removeprefix(prefix) if tag.startswith(prefix) else tag


def _pos(mark: yaml.Mark | None) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


class _PurePathNeeded(Exception):
    """libyaml's tree may differ from the pure-Python composer's here; that one decides."""


class _Converter:
    def __init__(self, file: str, fast: bool = False) -> None:
        self.file = file
        self.fast = fast
        self.marks = Marks()
        self.problems: list[Problem] = []
        self.nodes = 0
        self._loader = yaml.SafeLoader("")
        self._active: set[int] = set()

    def problem(self, at: tuple[int, int], message: str) -> None:
        self.problems.append(Problem(self.file, at[0], at[1], message))

    def convert(self, node: yaml.Node, path: JsonPath) -> Any:
        self.nodes += 1
        if len(path) > MAX_NESTING:
            raise FleetError([Problem(self.file, *_pos(node.start_mark), _TOO_DEEP)])
        if self.nodes > MAX_NODES:
            raise FleetError(
                [
                    Problem(
                        self.file,
                        *_pos(node.start_mark),
                        f"document expands to more than {MAX_NODES} nodes (alias bomb?); "
                        "write the values out instead of nesting aliases",
                    )
                ]
            )
        self.marks.values.setdefault(path, _pos(node.start_mark))
        if id(node) in self._active:
            raise FleetError(
                [
                    Problem(
                        self.file, *_pos(node.start_mark), "recursive alias: a node contains itself"
                    )
                ]
            )
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if node.tag not in _COLLECTION_TAGS:
            self.problem(
                _pos(node.start_mark),
                f"unsupported YAML tag {_tag(node.tag)!r}; use plain mappings and lists",
            )
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
            assert isinstance(node, yaml.MappingNode)
            return self._mapping(node, path)
        finally:
            self._active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if self.fast and (node.style in ("|", ">") or not (node.value or node.style)):
            # libyaml marks some empty plain scalars a column off and reads odd block scalar
            # headers (|#) that PyYAML refuses
            raise _PurePathNeeded
        if node.tag == "tag:yaml.org,2002:timestamp":
            return node.value  # keep dates as the text the user wrote
        if node.tag not in _PLAIN_TAGS:
            self.problem(
                _pos(node.start_mark),
                f"unsupported YAML tag {_tag(node.tag)!r}; use plain strings, numbers and booleans",
            )
            return node.value
        if node.tag == _STR_TAG:
            return node.value  # what the constructor returns for a str, without its bookkeeping
        try:
            return self._loader.construct_object(node)
        except ValueError:  # Python reads at most 4,300 decimal digits of an integer
            self.problem(
                _pos(node.start_mark),
                f"a number of {len(node.value):,} characters is too long to read; "
                "write a shorter one",
            )
            return 0  # a stand-in the other checks pass: the problem is said once, here

    def _mapping(self, node: yaml.MappingNode, path: JsonPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        seen: dict[str, tuple[int, int]] = {}
        for key_node, value_node in node.value:
            at = _pos(key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(at, "mapping keys must be plain strings")
                continue
            key = str(key_node.value)
            if key == "<<" and key_node.tag == "tag:yaml.org,2002:merge":
                self.problem(at, "merge keys (<<) are not supported; put shared values in defaults")
                continue
            if key_node.tag not in _KEY_TAGS:
                # Refused like a tag on a value: !!python/name:os.system x is never read as x.
                self.problem(
                    at, f"unsupported YAML tag {_tag(key_node.tag)!r}; use plain strings as keys"
                )
            if key in seen:
                self.problem(at, f"duplicate key {key!r} (first at line {seen[key][0]})")
                continue
            seen[key] = at
            self.marks.keys[(*path, key)] = at
            result[key] = self.convert(value_node, (*path, key))
        return result


def _decode(raw: bytes, file: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise FleetError(
            [
                Problem(
                    file,
                    line,
                    col,
                    f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); is this a YAML file?",
                )
            ]
        ) from None


@dataclass(frozen=True)
class YamlDoc:
    """A parsed document: data, where each part of it stands, and recoverable problems
    (duplicate keys, odd tags) to report together with the schema's."""

    data: Any
    marks: Marks
    problems: tuple[Problem, ...]


def read_yaml(path: Path, display: str | None = None) -> YamlDoc:
    """Parse one YAML document; raise FleetError for anything that stops parsing."""
    file = display or str(path)
    return parse_yaml(_decode(read_bytes(path, file), file), file)


def read_bytes(path: Path, file: str) -> bytes:
    """A fleet file's bytes, read at most to the limit, from a regular file only: a pull
    request's tree may make fleet.yaml a link to /dev/zero (read forever), a FIFO (wait
    forever) or a file of the runner outside the checkout (quoted back in validate's
    annotations on the pull request) — outside attack c, F3."""
    try:
        if _leaves_workspace(path):
            raise FleetError([Problem(file, 1, 1, LEAVES_WORKSPACE)])
        # O_NONBLOCK: opening a FIFO for reading does not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            status = os.fstat(fd)
            if stat.S_ISDIR(status.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(status.st_mode):
                raise FleetError([Problem(file, 1, 1, "is not a regular file")])
            size = status.st_size
            raw = b"" if size > MAX_BYTES else fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise FleetError([Problem(file, 1, 1, "file not found")]) from None
    except IsADirectoryError:
        raise FleetError([Problem(file, 1, 1, "is a directory, not a fleet file")]) from None
    except OSError as exc:
        raise FleetError([Problem(file, 1, 1, f"cannot read: {exc.strerror}")]) from None
    if size > MAX_BYTES or len(raw) > MAX_BYTES:
        size = max(size, len(raw))
        raise FleetError(
            [Problem(file, 1, 1, f"file is {size:,} bytes; the limit is {MAX_BYTES:,}")]
        )
    return raw


LEAVES_WORKSPACE = (
    "is a link to a file outside GITHUB_WORKSPACE; in GitHub Actions the fleet file must be "
    "in the checked-out repository"
)


def _leaves_workspace(path: Path) -> bool:
    """In GitHub Actions, whether `path` resolves outside the checkout (GITHUB_WORKSPACE)."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return False
    return not path.resolve().is_relative_to(Path(workspace).resolve())


def _reader_problem(text: str, exc: yaml.reader.ReaderError, file: str) -> Problem:
    """A character YAML forbids (NUL and other control characters): where, and which."""
    before = text[: exc.position]
    line = before.count("\n") + 1
    col = exc.position - (before.rfind("\n") + 1) + 1
    return Problem(
        file,
        line,
        col,
        f"invalid YAML: control character U+{exc.character:04X} is not allowed; "
        "is this a YAML file?",
    )


# PyYAML's wording for common mistakes, said plainly (its own words kept where they help).
_UNCLOSED = {
    "while scanning a quoted scalar": "this quoted string is never closed",
    "while parsing a flow sequence": "this [ is never closed with ]",
    "while parsing a flow mapping": "this { is never closed with }",
}


def _syntax_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    problem, context = exc.problem or "", exc.context or ""
    mark = exc.problem_mark or exc.context_mark
    if ("end of stream" in problem or "<stream end>" in problem) and exc.context_mark:
        # Something opened there and the file ended: point at the opening, not past the end.
        message = _UNCLOSED.get(context, f"{context} (started here): {problem}")
        return Problem(file, *_pos(exc.context_mark), f"invalid YAML: {message}")
    if problem.startswith("found character '\\t'"):
        message = "tab character; indent with spaces, not tabs"
    elif isinstance(exc, yaml.composer.ComposerError) and "another document" in problem:
        message = "a second YAML document starts here; a fleet file holds exactly one"
    elif problem.startswith("expected <block end>") and exc.context_mark:
        message = (
            "bad indentation: this line does not fit the block that starts at line "
            f"{exc.context_mark.line + 1}"
        )
    elif problem == "mapping values are not allowed here":
        message = f"{problem} (a key indented too far, or an unquoted value containing ': '?)"
    elif context and exc.context_mark:
        line, col = _pos(exc.context_mark)
        message = f"{problem} ({context} at line {line}, column {col})"
    else:
        message = " ".join(filter(None, [context, problem]))
    return Problem(file, *_pos(mark), f"invalid YAML: {message}")


def _compose_fast(text: str) -> yaml.Node | None:
    """The node tree from libyaml's composer, when PyYAML has it: ~7x faster than the
    pure-Python one. None when libyaml is missing, when the text holds what libyaml reads
    differently (tabs, a byte order mark, tags) or when it has a problem to word: the
    pure-Python path then reads it exactly as it always has (tests/test_yaml_fast_path.py)."""
    if _FAST_LOADER is None or any(c in text for c in _PURE_PATH_CHARACTERS):
        return None
    if yaml.reader.Reader.NON_PRINTABLE.search(text):
        return None
    loader = _FAST_LOADER(text)
    resolver = yaml.resolver.Resolver()
    if not loader.yaml_path_resolvers and _same_rules(loader, resolver):
        # The tag of every node resolved once per text (name, api_base, litellm_params... are
        # on every host): without path resolvers (SafeLoader has none) resolve reads its
        # arguments only. A resolver of its own: the cache holds no reference to the loader.
        loader.resolve = functools.lru_cache(maxsize=None)(resolver.resolve)
    try:
        node: yaml.Node | None = loader.get_single_node()
        return node
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def _same_rules(loader: Any, resolver: yaml.resolver.BaseResolver) -> bool:
    """Whether both resolve alike: the same implicit rules and the same method."""
    return (
        loader.yaml_implicit_resolvers is resolver.yaml_implicit_resolvers
        and type(loader).resolve is type(resolver).resolve
    )


_TOO_DEEP = (
    f"nested more than {MAX_NESTING} levels deep; fleet.yaml values may nest 32 levels at most"
)


def parse_yaml(text: str, file: str) -> YamlDoc:
    try:
        return _parse_yaml(text, file)
    except RecursionError:
        # PyYAML's composer recurses once per level before the converter can count them.
        raise FleetError([Problem(file, 1, 1, _TOO_DEEP)]) from None


def _parse_yaml(text: str, file: str) -> YamlDoc:
    with _collector_paused():
        node = _compose_fast(text)
        if node is not None:
            try:
                return _convert(node, file, fast=True)
            except (_PurePathNeeded, FleetError):
                pass
        return _convert(_compose(text, file), file)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Composing keeps every object it makes (nodes, marks), so the cyclic garbage collector
    re-scans a growing heap again and again: a 10,000-host file composes in 0.1 s without it
    and 0.45 s with it. Nothing here needs it; the few objects left over wait for the next run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _convert(node: yaml.Node, file: str, fast: bool = False) -> YamlDoc:
    converter = _Converter(file, fast)
    data = converter.convert(node, ())
    return YamlDoc(data, converter.marks, tuple(converter.problems))


def _compose(text: str, file: str) -> yaml.Node:
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:
        raise FleetError([_reader_problem(text, exc, file)]) from None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise FleetError([_syntax_problem(exc, file)]) from None
    except yaml.YAMLError as exc:
        raise FleetError([Problem(file, 1, 1, f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if node is None:
        raise FleetError([Problem(file, 1, 1, "file is empty; expected version, fleet and models")])
    return node
