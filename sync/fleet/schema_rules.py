"""fleet.yaml against fleet.schema.json: the verdict (compiled by fastjsonschema, fast) and, for
a document that breaks it, every problem located and said for fleet.yaml's reader (jsonschema).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sync.fleet.plaintext import PROXY_ENVIRONMENT, holds_credential, misspelt_message, quote
from sync.fleet.plaintext import where as _where
from sync.fleet.problems import Problem
from sync.fleet.yamlmarks import JsonPath, Marks

if TYPE_CHECKING:
    import jsonschema

SCHEMA_PATH = Path(__file__).with_name("fleet.schema.json")


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def type_name(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}
    names.update({int: "an integer", float: "a number", type(None): "null"})
    return names.get(type(value), type(value).__name__)


def schema_problems(data: Any, marks: Marks, file: str) -> Iterator[Problem]:
    # JSON has no NaN or infinity, so neither schema path refuses them (NaN is neither below a
    # minimum nor above a maximum): said here, for both, at every position.
    yield from nonfinite_problems(data, marks, file)
    if passes_compiled_schema(data):
        return  # jsonschema would find nothing (tests/test_schema_fast_path.py)
    import jsonschema  # only for a document with a problem: its messages are jsonschema's

    validator = jsonschema.Draft202012Validator(schema())
    for error in validator.iter_errors(data):
        yield from _explain(error, marks, file)


def passes_compiled_schema(data: Any) -> bool:
    """Whether the schema holds, by fastjsonschema's code compiled from it: ~15x faster than
    jsonschema on a 10,000-host fleet.yaml. Only a pass is trusted; a failure, or any error of
    the compiled code, leaves the verdict and every message to jsonschema."""
    validate = _compiled_schema()
    try:
        validate(data)
    except Exception:  # not known valid: jsonschema decides, and locates each problem
        return False
    return True


def nonfinite_problems(data: Any, marks: Marks, file: str) -> Iterator[Problem]:
    """Every NaN and ±infinity of a document (YAML's .nan, .inf, -.inf, or a number too large
    to be one), located: no rail, limit or value of fleet.yaml is ever one."""
    if not _may_hold_nonfinite(data):
        return  # nearly every document: located below only when there may be one to say
    pending: list[tuple[JsonPath, Any]] = [((), data)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            written = ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
            message = (
                f"{_where(path)}: {written} is not a finite number (.nan, .inf, or a number too "
                "large for a float): JSON has no form for it, LiteLLM drops such a key, and no "
                "limit compared with it is ever crossed; write a finite number"
            )
            yield Problem(file, *marks.of_value(path), message)
        elif isinstance(value, str) and _nonfinite_text(value, path):
            message = (
                f"{_where(path)}: {value!r} is text LiteLLM reads as a number that is not finite "
                "(YAML reads 1e400, without a dot, as a string; LiteLLM turns it into infinity "
                "and every request of the route fails); write a finite number"
            )
            yield Problem(file, *marks.of_value(path), message)
        elif isinstance(value, dict):
            pending.extend(((*path, k), v) for k, v in value.items())
        elif isinstance(value, list):
            pending.extend(((*path, i), v) for i, v in enumerate(value))


def _may_hold_nonfinite(data: Any) -> bool:
    """Whether nonfinite_problems may find anything, without the paths its messages need: a
    non-finite float, a string _nonfinite_text takes anywhere (a word such as inf counted
    wherever it is) or a value of a type other than YAML's plain ones (left to the walk)."""
    pending = [data]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind is str:
            if _nonfinite_text(value, _ANYWHERE):
                return True
        elif kind is dict:
            pending += value.values()
        elif kind is list:
            pending += value
        elif kind is float:
            if not math.isfinite(value):
                return True
        elif isinstance(value, (float, str, dict, list)):
            return True
    return False


_ANYWHERE: JsonPath = ("litellm_params",)  # where _nonfinite_text counts every word
# A number as text: LiteLLM coerces such a string where it wants a number (timeout: "1e400").
_NUMBER_TEXT = re.compile(r"[+-]?(\d[\d_]*\.?\d*|\.\d+)([eE][+-]?\d+)?")
_NONFINITE_WORDS = frozenset({"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan"})


def _nonfinite_text(value: str, path: JsonPath) -> bool:
    """A string that reads as a number too large for a float (anywhere), or as infinity or NaN
    by name (inf, nan) where LiteLLM coerces values: under litellm_params."""
    text = value.strip()
    if text.lower() in _NONFINITE_WORDS:
        return "litellm_params" in path
    if not _NUMBER_TEXT.fullmatch(text):
        return False
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


def is_nonfinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


@cache
def _compiled_schema() -> Callable[[Any], Any]:
    import fastjsonschema

    # use_default=False: the compiled code would otherwise write each default into the data.
    # The schema refers only to itself; a reference elsewhere fails here, never fetches.
    refuse = {scheme: _no_fetch for scheme in ("http", "https", "file", "ftp")}
    validate: Callable[[Any], Any] = fastjsonschema.compile(
        schema(), handlers=refuse, use_default=False
    )
    return validate


def _no_fetch(uri: str) -> Any:
    raise ValueError(f"fleet.schema.json refers outside itself: {uri}")


def _explain(error: jsonschema.ValidationError, marks: Marks, file: str) -> Iterator[Problem]:
    if is_nonfinite(error.instance):
        return  # said once, by nonfinite_problems
    path: JsonPath = tuple(error.absolute_path)
    where = _where(path)
    kind = error.validator
    instance: Any = error.instance
    rule: Any = error.schema
    expected: Any = error.validator_value
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(rule.get("properties", {}))
        for key in sorted(set(instance) - set(allowed)):
            hint = difflib.get_close_matches(key, allowed, n=1)
            fix = f" (did you mean {hint[0]!r}?)" if hint else f" (allowed: {', '.join(allowed)})"
            message = f"{where}: unknown key {quote(key)}{fix}"
            yield Problem(file, *marks.of_key((*path, key)), message)
        return
    if kind == "required":
        # At the key that names the incomplete mapping (models.x:), else where it starts.
        missing = [k for k in expected if k not in instance]
        for key in missing:
            yield Problem(file, *marks.of_key(path), f"{where}: missing required key {key!r}")
        return
    if "propertyNames" in error.absolute_schema_path:
        # jsonschema reports a bad name with the name as instance and the mapping as path.
        name: Any = instance
        rule_text = (
            "invalid target name {} (lowercase letters, digits and -, starting with a letter "
            "or digit, at most 63)"
            if path == ("targets",)
            else "invalid model name {} (letters, digits and ._:/@+- only, starting with a "
            "letter or digit, at most 128)"
        )
        yield Problem(
            file, *marks.of_key((*path, name)), f"{where}: {rule_text.format(quote(name))}"
        )
        return
    yield Problem(file, *marks.of_value(path), _value_message(error, path, where))


def _value_message(error: jsonschema.ValidationError, path: JsonPath, where: str) -> str:
    """What is wrong with one value, said for fleet.yaml's reader (never echoing a secret)."""
    kind = error.validator
    instance: Any = error.instance
    expected: Any = error.validator_value
    last = path[-1] if path else ""
    if kind == "const" and last == "version" and isinstance(instance, str):
        return f"version: expected the number 1, got the string {quote(instance)}"
    if kind == "const" and last == "version":
        return f"unsupported version {json.dumps(instance)}; this fleet-sync reads version 1"
    if kind == "type" and instance is None and _is_overlay(path):
        return f"{where}: expected a mapping, got null (write {{}} for a target with no overlay)"
    if kind == "type":
        return f"{where}: expected {_expected(expected)}, got {type_name(instance)}"
    if kind == "pattern" and last in {"api_key", "read_api_key"}:
        # Never echo the value: it may be the secret itself. A target's key is read where
        # fleet-sync runs; every other one by LiteLLM, in the proxy's environment.
        target = path[:1] == ("targets",)
        place = "where fleet-sync runs" if target else PROXY_ENVIRONMENT
        if misspelt := misspelt_message(instance, place):
            return f"{where}: {misspelt}"
        return (
            f"{where}: plaintext api keys are refused; write a reference os.environ/NAME "
            f"and set NAME {place}"
        )
    if kind in {"minItems", "minProperties"} and last == "targets":
        if len(path) == 1:
            return (
                "targets: declares no target; remove it to sync one proxy (LITELLM_PROXY_URL) "
                "or declare at least one"
            )
        return f"{where}: names no target; name at least one, or leave targets: out"
    if kind == "minItems" and last == "proxy_url":
        return f"{where}: lists no URL; list the pods' URLs, or write one URL or a reference"
    if kind == "pattern" and last == "fleet":
        return f"fleet: {quote(instance)} must be 1-63 lowercase letters, digits or dashes"
    if kind == "pattern" and last == "source" and len(path) == 1:
        return (
            f"source: {quote(instance)} must name a repository like my-org/llm-fleet "
            "(letters, digits and ._:/@-, at most 200)"
        )
    if kind == "pattern" and last == "name":
        return f"{where}: host name {quote(instance)} must be letters, digits, '.', '_' or '-'"
    if kind == "pattern" and last == "provider":
        return (
            f"{where}: provider {quote(instance)} must be lowercase letters, digits, '_' and '-' "
            "like hosted_vllm or text-completion-openai"
        )
    if kind == "enum":
        options = ", ".join(str(v) for v in expected)
        return f"{where}: {quote(instance)} is not one of: {options}"
    if kind in {"minimum", "maximum"}:
        return f"{where}: {error.instance!r} must be between 0 and 100"
    if kind == "minLength":
        return f"{where}: must not be empty"
    if kind in {"maxProperties", "maxItems"}:
        # jsonschema's message repeats the whole mapping or list: say the count instead.
        return f"{where}: {len(instance)} entries, at most {expected}"
    if holds_credential(instance):
        return f"{where}: breaks the schema's {kind!r} rule"
    return f"{where}: {error.message}"


def _is_overlay(path: JsonPath) -> bool:
    """defaults.targets.T, models.M.targets.T or models.M.hosts[i].targets.T."""
    if path[:1] == ("defaults",):
        return len(path) == 3 and path[1] == "targets"
    if path[:1] != ("models",):
        return False
    return (len(path) == 4 and path[2] == "targets") or (len(path) == 6 and path[4] == "targets")


def _expected(value: Any) -> str:
    names = {"object": "a mapping", "array": "a list", "string": "a string"}
    names.update({"boolean": "true or false", "number": "a number", "integer": "an integer"})
    if isinstance(value, list):
        return " or ".join(names.get(v, str(v)) for v in value)
    return names.get(value, str(value))
