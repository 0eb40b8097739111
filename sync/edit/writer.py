"""set-host: change one host of fleet.yaml in place, every other byte left as it was.

ruamel.yaml's round-trip *dump* re-indents the whole file, respaces flow collections and turns
CRLF into LF, so it cannot promise "only this value changed". Instead ruamel.yaml's composer
gives every node with its exact character span, style (plain, '…', "…"), anchor and flow
style; the edit replaces exactly the span of one scalar (or inserts one key or one list item
laid out like its siblings), and the result is read back with the fleet's own parser: its data
must equal the old data with just that change, and it must pass every load_fleet rule, before
anything is written (atomically).
"""

from __future__ import annotations

import copy
import difflib
import io
import json
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.emitter import Emitter
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sync.fleet.model import address_problem, fleet_from_doc
from sync.fleet.plaintext import HIDDEN
from sync.fleet.problems import FleetError, Problem
from sync.fleet.yamlmarks import parse_yaml
from sync.secrets.credentials import looks_like_credential


@dataclass(frozen=True)
class HostEdit:
    """What set-host was asked: a new address and/or enabled state, maybe a new host."""

    model: str
    host: str
    api_base: str | None = None
    enabled: bool | None = None
    add: bool = False


@dataclass(frozen=True)
class Edited:
    text: str
    summary: tuple[str, ...]  # one line per change made; empty when nothing changed


@dataclass(frozen=True)
class _Splice:
    start: int
    end: int
    text: str


class _Doc:
    """The composed document, with how often each node is reached (aliases reach it again)."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        try:
            root = YAML(typ="rt").compose(text)
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
            raise FleetError([Problem(file, line, col, f"invalid YAML: {exc.problem}")]) from None
        except YAMLError as exc:
            raise FleetError([Problem(file, 1, 1, f"invalid YAML: {exc}")]) from None
        self.root: Node = root
        self.uses: dict[int, int] = {}
        self._count(root, set())
        self.eol = "\r\n" if "\r\n" in text else "\n"

    def _count(self, node: Node, active: set[int]) -> None:
        self.uses[id(node)] = self.uses.get(id(node), 0) + 1
        if id(node) in active or self.uses[id(node)] > 1:
            return  # an alias: its children were counted at the anchor
        active.add(id(node))
        for child in _children(node):
            self._count(child, active)
        active.discard(id(node))

    def problem(self, node: Node, message: str) -> FleetError:
        mark = node.start_mark
        return FleetError([Problem(self.file, mark.line + 1, mark.column + 1, message)])

    def unshared(self, node: Node, where: str, at: Node | None = None) -> None:
        """Refuse to edit a node an alias also reaches: the edit would change every use."""
        uses = self.uses.get(id(node), 1)
        if uses > 1:
            anchor = f"&{node.anchor}" if node.anchor else "an anchor"
            raise self.problem(
                at or node,
                f"{where} is shared through {anchor} (line {node.start_mark.line + 1}) by "
                f"{uses} places; set-host would change all of them. Write this host's value "
                "out on its own, then run set-host again",
            )


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _get(mapping: MappingNode, key: str) -> tuple[ScalarNode, Node] | None:
    for key_node, value_node in mapping.value:
        if isinstance(key_node, ScalarNode) and str(key_node.value) == key:
            return key_node, value_node
    return None


def _shown(value: Any) -> str:
    """An address as the summary line shows it: as written when it is plain printable text,
    escaped otherwise (a control character in the file's old value must not reach the
    terminal or the pull request's title), hidden when it looks like a credential."""
    if isinstance(value, str) and looks_like_credential(value):
        return HIDDEN
    if isinstance(value, str) and value.isprintable():
        return value
    return repr(value)


def _names(items: list[str]) -> str:
    return ", ".join(repr(i) for i in items) or "none"


def edit_host(text: str, edit: HostEdit, file: str) -> Edited:
    """The new text of fleet.yaml, or a FleetError with located problems (nothing changed).
    ValueError for an edit that makes no sense whatever the file says (a bad --api-base)."""
    if edit.api_base is not None and (error := address_problem(edit.api_base)):
        raise ValueError(f"--api-base: {error}")
    before = parse_yaml(text, file).data  # syntax errors come out located, as validate says
    doc = _Doc(text, file)
    if not isinstance(doc.root, MappingNode) or not isinstance(before, dict):
        raise doc.problem(doc.root, "top level must be a mapping with version, fleet and models")
    hosts, hosts_key = _hosts_of(doc, edit.model)
    where = f"models.{edit.model}"
    index, host = _find_host(hosts, edit.host)
    expected = copy.deepcopy(before)
    hosts_data: list[Any] = expected["models"][edit.model]["hosts"]
    if host is None:
        splices, summary = _add_host(doc, hosts, hosts_key, hosts_data, edit, where)
    else:
        here = f"{where}.hosts[{index}]"
        splices, summary = _change_host(doc, host, hosts_data[index], edit, here)
    new_text = _apply(text, splices)
    if new_text != text:
        _check(new_text, expected, file)
    return Edited(new_text, tuple(summary))


def _hosts_of(doc: _Doc, model_name: str) -> tuple[SequenceNode, Node]:
    """The hosts list of one model (and its key), each mapping on the way unshared (no anchor
    another place reads), or a located problem."""
    root = doc.root
    assert isinstance(root, MappingNode)
    models_entry = _get(root, "models")
    models = models_entry[1] if models_entry else None
    if models_entry is None or not isinstance(models, MappingNode):
        raise doc.problem(root, "no models mapping to edit")
    models_key = models_entry[0]
    model_entry = _get(models, model_name)
    if model_entry is None:
        known = sorted(str(k.value) for k, _ in models.value if isinstance(k, ScalarNode))
        hint = difflib.get_close_matches(model_name, known, n=1)
        close = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise doc.problem(
            models_key, f"model {model_name!r} not found in models{close}; models: {_names(known)}"
        )
    model_key, model = model_entry
    where = f"models.{model_name}"
    hosts_entry = _get(model, "hosts") if isinstance(model, MappingNode) else None
    hosts = hosts_entry[1] if hosts_entry else None
    if hosts_entry is None or not isinstance(hosts, SequenceNode):
        raise doc.problem(model_key, f"{where}: no hosts list to edit")
    hosts_key = hosts_entry[0]
    doc.unshared(models, "models", models_key)
    doc.unshared(model, where, model_key)
    doc.unshared(hosts, f"{where}.hosts", hosts_key)
    return hosts, hosts_key


def _add_host(
    doc: _Doc,
    hosts: SequenceNode,
    hosts_key: Node,
    hosts_data: list[Any],
    edit: HostEdit,
    where: str,
) -> tuple[list[_Splice], list[str]]:
    if not edit.add:
        known = [n for n in (_host_name(h) for h in hosts.value) if n is not None]
        raise doc.problem(
            hosts_key,
            f"{where}: host {edit.host!r} not found (hosts: {_names(known)}); pass --add to add it",
        )
    if edit.api_base is None:
        raise ValueError("--add needs --api-base for the new host")
    doc.unshared(hosts, f"{where}.hosts")
    new: dict[str, Any] = {"name": edit.host, "api_base": edit.api_base}
    if edit.enabled is False:
        new["enabled"] = False
    hosts_data.append(new)
    summary = [f"{where}: added host {edit.host!r} at {_shown(edit.api_base)}"]
    return [_append_host(doc, hosts, new)], summary


def _change_host(
    doc: _Doc, host: MappingNode, host_data: dict[str, Any], edit: HostEdit, here: str
) -> tuple[list[_Splice], list[str]]:
    splices: list[_Splice] = []
    summary: list[str] = []
    if edit.api_base is not None and host_data.get("api_base") != edit.api_base:
        splices.append(_set_scalar(doc, host, "api_base", edit.api_base, here))
        old = _shown(host_data.get("api_base"))
        summary.append(f"{here}.api_base: {old} -> {_shown(edit.api_base)}")
        host_data["api_base"] = edit.api_base
    if edit.enabled is not None and host_data.get("enabled", True) is not edit.enabled:
        word = "true" if edit.enabled else "false"
        if _get(host, "enabled") is not None:
            splices.append(_set_scalar(doc, host, "enabled", word, here))
        else:
            doc.unshared(host, here)
            splices.append(_add_key(doc, host, "enabled", word))
        summary.append(f"{here}.enabled: {word}")
        host_data["enabled"] = edit.enabled
    return splices, summary


def _host_name(node: Node) -> str | None:
    if isinstance(node, MappingNode) and (entry := _get(node, "name")) is not None:
        return str(entry[1].value) if isinstance(entry[1], ScalarNode) else None
    return None


def _find_host(hosts: SequenceNode, name: str) -> tuple[int, MappingNode | None]:
    for index, item in enumerate(hosts.value):
        if isinstance(item, MappingNode) and _host_name(item) == name:
            return index, item
    return len(hosts.value), None


def _set_scalar(doc: _Doc, host: MappingNode, key: str, value: str, here: str) -> _Splice:
    """Replace one scalar's characters, written in the style it had."""
    doc.unshared(host, here)
    entry = _get(host, key)
    assert entry is not None
    key_node, node = entry
    doc.unshared(node, f"{here}.{key}", key_node)
    if not isinstance(node, ScalarNode) or node.style in ("|", ">"):
        raise doc.problem(
            node, f"{here}.{key}: write it as a one-line value to let set-host edit it"
        )
    start = _skip_properties(doc.text, node.start_mark.index)
    in_flow = bool(host.flow_style) or _inside_flow(doc, host)
    return _Splice(start, node.end_mark.index, _scalar(value, node.style, in_flow))


def _skip_properties(text: str, start: int) -> int:
    """Past an anchor (&a) or tag (!!str) written before a scalar: only the value is replaced."""
    while start < len(text) and text[start] in "&!":
        while start < len(text) and not text[start].isspace():
            start += 1
        while start < len(text) and text[start] in " \t":
            start += 1
    return start


def _inside_flow(doc: _Doc, target: Node) -> bool:
    """Whether target sits inside a flow collection ([...] or {...}) anywhere above it."""

    def search(node: Node, flow: bool) -> bool | None:
        if node is target:
            return flow
        for child in _children(node):
            found = search(child, flow or bool(getattr(node, "flow_style", False)))
            if found is not None:
                return found
        return None

    return bool(search(doc.root, False))


def _scalar(value: str, style: str | None, in_flow: bool) -> str:
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style is None:
        analysis = Emitter(io.StringIO()).analyze_scalar(value)
        if analysis.allow_flow_plain if in_flow else analysis.allow_block_plain:
            return value
    return json.dumps(value)  # JSON's escapes are a subset of YAML's double-quoted ones


def _content_end(text: str, node: Node) -> int:
    """Where the last character of a node's own content stands (past trailing comments no)."""
    if isinstance(node, ScalarNode):
        end = int(node.end_mark.index)
        while end > 0 and text[end - 1] in " \t\r\n":
            end -= 1
        return end
    assert isinstance(node, MappingNode | SequenceNode)
    if node.flow_style or not node.value:
        return int(node.end_mark.index)
    last = node.value[-1]
    return _content_end(text, last[1] if isinstance(node, MappingNode) else last)


def _line_end(text: str, index: int) -> int:
    newline = text.find("\n", index)
    if newline == -1:
        return len(text)
    return newline - 1 if newline > 0 and text[newline - 1] == "\r" else newline


def _add_key(doc: _Doc, host: MappingNode, key: str, word: str) -> _Splice:
    """A new key after the host's last one, at its keys' indentation (or `, key: v` in flow)."""
    end = _content_end(doc.text, host.value[-1][1])
    if host.flow_style:
        return _Splice(end, end, f", {key}: {word}")
    column = host.value[0][0].start_mark.column
    at = _line_end(doc.text, end)
    return _Splice(at, at, f"{doc.eol}{' ' * column}{key}: {word}")


def _append_host(doc: _Doc, hosts: SequenceNode, new: dict[str, Any]) -> _Splice:
    """A new list item laid out like the last one: same dash column, same key column, same
    quoting of api_base; inside [...] when the list is written in flow style."""
    last = hosts.value[-1] if hosts.value else None
    style = None
    if isinstance(last, MappingNode) and (entry := _get(last, "api_base")) is not None:
        value = entry[1]
        style = value.style if isinstance(value, ScalarNode) and value.style in ("'", '"') else None
    in_flow = bool(hosts.flow_style) or _inside_flow(doc, hosts)
    pairs = [
        f"{k}: {_scalar(_word(v), style if k == 'api_base' else None, True)}"
        for k, v in new.items()
    ]
    flow_item = "{" + ", ".join(pairs) + "}"
    if hosts.flow_style or in_flow:
        if last is None:
            at = hosts.end_mark.index - 1  # just before the closing ]
            return _Splice(at, at, flow_item)
        end = _content_end(doc.text, last)
        return _Splice(end, end, f", {flow_item}")
    assert last is not None  # a block sequence has at least one item
    block = isinstance(last, MappingNode) and not last.flow_style and last.value
    first_key = last.value[0][0] if block else last
    item_column = first_key.start_mark.column
    dash = doc.text.rfind("-", 0, last.start_mark.index)
    dash_column = dash - (doc.text.rfind("\n", 0, dash) + 1)
    lead = " " * dash_column + "-" + " " * max(item_column - dash_column - 1, 1)
    if isinstance(last, MappingNode) and last.flow_style:
        body = lead + flow_item
    else:
        pad = doc.eol + " " * item_column
        body = lead + pad.join(
            f"{k}: {_scalar(_word(v), style if k == 'api_base' else None, False)}"
            for k, v in new.items()
        )
    at = _line_end(doc.text, _content_end(doc.text, last))
    return _Splice(at, at, doc.eol + body)


def _word(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _apply(text: str, splices: list[_Splice]) -> str:
    for splice in sorted(splices, key=lambda s: s.start, reverse=True):
        text = text[: splice.start] + splice.text + text[splice.end :]
    return text


def _check(new_text: str, expected: Any, file: str) -> None:
    """The edited file must read back as exactly the intended data and pass load_fleet."""
    doc = parse_yaml(new_text, file)
    if doc.data != expected:
        raise FleetError(
            [
                Problem(
                    file,
                    1,
                    1,
                    "set-host could not make this edit without changing other values "
                    "(unusual layout); edit fleet.yaml by hand",
                )
            ]
        )
    try:
        fleet_from_doc(doc, file)
    except FleetError as exc:
        # Located in the edited text (not written): the lines are the file's, plus any added.
        raise FleetError(
            Problem(p.file, p.line, p.col, f"after the edit: {p.message}") for p in exc.problems
        ) from None
