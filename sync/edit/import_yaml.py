"""The text `fleet-sync import` writes: YAML that PyYAML, which `validate` and `plan` read it
with, reads back as exactly the values import meant, with a header and, above each model, a
comment naming what stays on its live routes unmanaged.

ruamel.yaml writes YAML 1.2, PyYAML reads YAML 1.1: left alone, ruamel writes the float 1e-06
as `1e-06` (a string to PyYAML: YAML 1.1 wants a dot in the mantissa) and the strings `on`,
`yes` and `1:20` plain (true, true and 80 to PyYAML). So floats get a dot, a string PyYAML
would not read as a string is quoted, and one holding a character YAML 1.1 reads as a line break
is written with escapes.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter

# Where editors find the schema from a config repository (a relative path would name a file no
# config repository has): the published file at the release tag the action is pinned by, which
# is also the schema's $id. fleet-sync-dev is the placeholder owner (docs: "Editor support").
SCHEMA_URL = (
    "https://raw.githubusercontent.com/fleet-sync-dev/fleet-sync/v1/schema/fleet.schema.json"
)
SCHEMA_LINE = f"# yaml-language-server: $schema={SCHEMA_URL}"
HEADER = (
    "Written by `fleet-sync import` from the proxy's database routes. owns: model_groups claims "
    "these groups: `fleet-sync plan` adopts each route in place: it adds fleet-sync's tags by "
    "PATCH, keeping the route's id, api_key and everything fleet.yaml does not set. api_key "
    "stays on each route as it is (LiteLLM never lists it); to manage it, add api_key: "
    "os.environ/NAME (under defaults, a model or a host)."
)
_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_PYYAML = (
    yaml.resolver.Resolver()
)  # the resolver of yaml.SafeLoader, which sync.fleet.yamlmarks uses
_WIDTH = 100
COMMENT_WIDTH = _WIDTH - 4  # a comment above a model, after its "  # "
# Characters written escaped in double quotes: what YAML 1.1 reads as a line break (NEL, the
# Unicode separators) or refuses in a stream, and the byte-order mark.
_ESCAPED = re.compile(
    "[^\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029]"
)


def float_text(value: float) -> str:
    """A float as YAML 1.1 and 1.2 both read it back: 1e-06 → 1.0e-06, 600.0 → 600.0."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    mantissa, e, exponent = repr(value).partition("e")
    return f"{mantissa if '.' in mantissa else mantissa + '.0'}{e}{exponent}"


class _Representer(RoundTripRepresenter):
    """ruamel's round-trip representer, writing what PyYAML reads back as written."""

    def represent_float(self, data: Any) -> ScalarNode:
        return self.represent_scalar(_FLOAT, float_text(float(data)))

    def represent_plain_str(self, data: Any) -> ScalarNode:
        if _ESCAPED.search(data):
            return self.represent_scalar(_STR, data, style='"')
        tag = _PYYAML.resolve(yaml.ScalarNode, data, (True, False))  # type: ignore[no-untyped-call]
        if tag != _STR:
            return self.represent_scalar(_STR, data, style="'")
        node: ScalarNode = self.represent_str(data)
        return node


_Representer.add_representer(float, _Representer.represent_float)
_Representer.add_representer(str, _Representer.represent_plain_str)


def fleet_text(document: Mapping[str, Any], comments: Mapping[str, Sequence[str]]) -> str:
    """The file: the schema line, the header, the document, and above each model named in
    `comments` its lines."""
    doc = CommentedMap(document)
    models = CommentedMap(document["models"])
    for name, lines in comments.items():
        models.yaml_set_comment_before_after_key(name, before="\n".join(lines), indent=2)
    doc["models"] = models
    writer = YAML()
    writer.Representer = _Representer
    writer.indent(mapping=2, sequence=4, offset=2)
    writer.width = 4096  # never fold an address
    out = io.StringIO()
    writer.dump(doc, out)
    head = [SCHEMA_LINE, *(f"# {line}" for line in wrap(HEADER))]
    return "\n".join(head) + "\n" + out.getvalue()


def wrap(text: str, indent: str = "", width: int = _WIDTH - 2) -> list[str]:
    """Lines of a comment, each short enough to read beside the YAML."""
    return textwrap.wrap(
        text, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )
