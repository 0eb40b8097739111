"""The generated reference pages of the docs site, made at build time from the code itself.

Nobody writes these pages: a new command, option, fleet.yaml key, exit code or action input
appears in them on the next build (tests/test_docs.py proves it). Each function returns one
MyST markdown page; `setup` is the Sphinx extension that writes them into the build's source
tree (`reference/generated/`, which scripts/docs copies from docs/ first, so nothing generated
lands in git) before Sphinx reads it.

- the CLI: every command, argument and option of fleet-sync's click group, from click itself;
- fleet.yaml: every key of schema/fleet.schema.json with its description (the one source of
  truth: validate reads the same schema, shipped as sync/fleet/fleet.schema.json);
- exit codes: the EXIT_* constants of the command line, with what each means;
- the JSON plan: a real plan of the example fleet, made by the planner and shown as `plan
  --format json` prints it;
- the action: every input and output of action.yml with its description and default.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import yaml

# The repository: scripts/docs builds from a copy of docs/ elsewhere and says where it is.
ROOT = Path(os.environ.get("FLEET_SYNC_ROOT") or Path(__file__).resolve().parents[2])
GENERATED = "reference/generated"
PAGES = ("cli", "fleet-yaml", "exit-codes", "plan-json", "action")

# Markdown punctuation that could change a page's structure when it comes from help text or a
# description: escaped with a backslash (CommonMark: every ASCII punctuation may be). Backticks
# stay: help and descriptions write `code` on purpose.
_SPECIAL = re.compile(r"([\\*_\[\]<>#|{}!~&^])")


def escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


def code(text: str) -> str:
    """`text` as a code span whose fence is longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def paragraphs(text: str) -> str:
    """Click help as markdown paragraphs: its \\b markers dropped, lines of a paragraph joined."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = [line.strip() for line in block.splitlines() if line.strip() != "\b"]
        if lines:
            out.append(escape(" ".join(lines)))
    return "\n\n".join(out)


# ------------------------------------------------------------------------------------ the CLI


def command_group() -> click.Group:
    """fleet-sync's click group: the one the console script runs."""
    module = importlib.import_module("sync.commands.main")
    groups = [v for v in vars(module).values() if isinstance(v, click.Group)]
    if len(groups) != 1:
        raise RuntimeError(f"sync.commands.main holds {len(groups)} click groups, not one")
    return groups[0]


def _default(param: click.Parameter) -> str | None:
    value = param.default
    if type(value).__name__ == "Sentinel":  # click 8.3's UNSET: no default
        return None
    if callable(value) or value is None or value == () or value is False:
        return None
    if isinstance(param, click.Option) and param.is_flag and not param.count:
        return None if value is False else "on"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _param(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Argument):
        name = param.make_metavar(ctx) if _takes_ctx(param) else param.human_readable_name
        head = f"- {code(name)} (argument"
        head += ", required)" if param.required else ", optional)"
        if param.nargs == -1:
            head = head[:-1] + ", any number)"
        return head
    assert isinstance(param, click.Option)
    record = param.get_help_record(ctx)
    names = record[0] if record else ", ".join(param.opts)
    line = f"- {code(names)}"
    if param.help:
        line += f": {paragraphs(param.help)}"
    extra = []
    if param.required:
        extra.append("required")
    if param.multiple:
        extra.append("repeatable")
    describe = getattr(param.type, "_describe_range", None)  # click's IntRange, FloatRange
    if describe is not None:
        extra.append(f"range {code(describe())}")
    default = _default(param)
    if default is not None:
        extra.append(f"default: {code(default)}")
    if param.envvar:
        envvars = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
        extra.append("environment: " + ", ".join(code(e) for e in envvars))
    if extra:
        line += f" ({'; '.join(extra)})"
    return line


def _takes_ctx(param: click.Argument) -> bool:
    """click 8.2 made make_metavar take the context; 8.1 takes none."""
    import inspect

    return "ctx" in inspect.signature(param.make_metavar).parameters


def _command(name: str, command: click.Command, parent: click.Context) -> Iterator[str]:
    ctx = click.Context(command, info_name=name, parent=parent)
    yield f"## `{parent.command_path} {name}`"
    yield ""
    yield "```text"
    yield f"{ctx.command_path} {' '.join(command.collect_usage_pieces(ctx))}"
    yield "```"
    yield ""
    if command.help:
        yield paragraphs(command.help)
        yield ""
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    if params:
        yield from (_param(p, ctx) for p in params)
        yield ""


def cli_page(group: click.Group | None = None) -> str:
    group = group or command_group()
    root = click.Context(group, info_name="fleet-sync")
    lines = [
        "# Command line",
        "",
        "Generated from fleet-sync's click commands at build time: every command, argument and",
        "option, with its help, default and environment variable. `fleet-sync COMMAND --help`",
        "prints the same.",
        "",
        "```text",
        f"fleet-sync {' '.join(group.collect_usage_pieces(root))}",
        "```",
        "",
    ]
    if group.help:
        lines += [paragraphs(group.help), ""]
    lines += [_param(p, root) for p in group.get_params(root)] + [""]
    for name in group.list_commands(root):
        command = group.get_command(root, name)
        if command is not None and not command.hidden:
            lines += list(_command(name, command, root))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- fleet.yaml


def load_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "schema" / "fleet.schema.json").read_text("utf-8"))
    return data


def _resolve(node: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A node with its $ref followed (local refs only); its own keys win over the target's."""
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        return node
    target = _resolve(schema["$defs"][ref.removeprefix("#/$defs/")], schema)
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _kind(node: Mapping[str, Any]) -> str:
    if "const" in node:
        return f"always {code(json.dumps(node['const']))}"
    if "enum" in node:
        return "one of " + ", ".join(code(json.dumps(v)) for v in node["enum"])
    kinds = node.get("type")
    if isinstance(kinds, list):
        return " or ".join(kinds)
    return str(kinds) if kinds else "any"


def _limits(node: Mapping[str, Any]) -> list[str]:
    out = []
    for key, say in (
        ("default", "default"),
        ("minimum", "at least"),
        ("maximum", "at most"),
        ("minLength", "at least this many characters:"),
        ("maxLength", "at most this many characters:"),
        ("minItems", "at least this many items:"),
        ("maxProperties", "at most this many keys:"),
    ):
        if key in node:
            out.append(f"{say} {code(json.dumps(node[key]))}")
    return out


def schema_keys(schema: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every key path of fleet.yaml the schema declares, with its (resolved) node, depth first.
    `<model>` stands for a key the user names, `[]` for an item of a list."""

    def walk(path: str, node: Mapping[str, Any], seen: tuple[str, ...]) -> Iterator[Any]:
        node = _resolve(node, schema)
        for key, child in node.get("properties", {}).items():
            child_path = f"{path}.{key}" if path else key
            ref = child.get("$ref", "")
            if ref and ref in seen:
                continue
            yield child_path, _resolve(child, schema)
            yield from walk(child_path, child, (*seen, ref) if ref else seen)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and path:
            ref = extra.get("$ref", "")
            name = "<" + (ref.rsplit("/", 1)[-1] if ref else "name") + ">"
            resolved = _resolve(extra, schema)
            if resolved.get("properties") or resolved.get("additionalProperties"):
                yield from walk(f"{path}.{name}", extra, (*seen, ref) if ref else seen)
        items = node.get("items")
        if isinstance(items, dict) and path:
            yield from walk(f"{path}[]", items, seen)

    yield from walk("", schema, ())


def fleet_yaml_page(schema: Mapping[str, Any] | None = None) -> str:
    schema = schema or load_schema()
    lines = [
        "# fleet.yaml keys",
        "",
        "Generated from `schema/fleet.schema.json` at build time: every key with its type and",
        "description. The same schema is what `fleet-sync validate` checks and what editors use",
        f"(its `$id`: {code(str(schema.get('$id', '')))}). `<model>`, `<target>` and `<overlay>`",
        "stand for names you choose; `[]` for an item of a list. The guide",
        "[fleet.yaml](../../guides/fleet-yaml.md) explains the rules behind them.",
        "",
        escape(str(schema.get("description", ""))),
        "",
    ]
    for path, node in schema_keys(schema):
        heading = "##" if "." not in path and "[]" not in path else "###"  # a key, its keys
        lines += [f"{heading} `{path}`", ""]
        facts = [_kind(node), *_limits(node)]
        lines += ["Type: " + "; ".join(facts), ""]
        if node.get("description"):
            lines += [escape(str(node["description"])), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- exit codes

# What each exit code means (the names and numbers come from the code; a new EXIT_* constant
# without a meaning here fails the build).
EXIT_MEANINGS = {
    "EXIT_OK": "success; no changes (plan), no drift (drift), everything applied and confirmed.",
    "EXIT_ERROR": (
        "error: invalid fleet.yaml (nothing is sent to the proxy), proxy unreachable, key "
        "refused, proxy without a database, a bad option or environment value, output that "
        "cannot be written, an internal error (one line; FLEET_SYNC_DEBUG=1 adds the traceback)."
    ),
    "EXIT_CHANGES": (
        "changes or drift present: `plan --detailed-exitcode` when apply would run changes; "
        "`drift` while the proxy differs from fleet.yaml."
    ),
    "EXIT_REFUSED": (
        "refused: an unsafe plan or a conflict without `--force`, a saved plan that went stale "
        "or was made for another target, endpoint or rails. `plan` exits 3 too (since issue 24) "
        "whenever apply would refuse the plan it prints, with or without `--detailed-exitcode`, "
        "after printing it and posting its comment."
    ),
    "EXIT_INCOMPLETE": (
        "apply incomplete: a change failed or was not confirmed by reading back, or a conflict "
        "left a host without a route."
    ),
    "EXIT_SIGINT": (
        "interrupted by SIGINT (Ctrl-C, GitHub's cancel): before any write nothing was sent; "
        "during an apply no new write started, the writes in flight settled and the result was "
        "printed (changes `not started` named). A second signal ends it at once."
    ),
    "EXIT_SIGTERM": "interrupted by SIGTERM (GitHub's second cancel signal): as 130.",
}


def exit_codes() -> list[tuple[str, int]]:
    module = importlib.import_module("sync.run.console")
    found = [(k, v) for k, v in vars(module).items() if k.startswith("EXIT_") and type(v) is int]
    return sorted(found, key=lambda item: item[1])


def exit_codes_page() -> str:
    lines = [
        "# Exit codes",
        "",
        "Generated from the command line's `EXIT_*` constants at build time. Over several",
        "targets a run's code is the worst of theirs (1 > 4 > 3 > 2 > 0), or 130/143 when it was",
        "interrupted. Usage errors are 1.",
        "",
        "| exit | name | meaning |",
        "|---:|---|---|",
    ]
    for name, value in exit_codes():
        if name not in EXIT_MEANINGS:
            raise RuntimeError(f"exit code {name} = {value} has no meaning in the docs generator")
        lines.append(f"| {value} | `{name}` | {EXIT_MEANINGS[name]} |")
    return "\n".join([*lines, ""])


# ------------------------------------------------------------------------------ the JSON plan


def example_plan_json() -> dict[str, Any]:
    """A real plan of examples/config-repo/fleet.yaml against a proxy holding its routes with
    one host at an old address, one route paused by hand and one orphan of the fleet: what
    `plan --format json` prints for it (live values redacted as every output shows them)."""
    from sync.core.planner import make_plan
    from sync.core.render import render
    from sync.fleet.model import load_fleet
    from sync.report.redaction import plan_json

    fleet = load_fleet(ROOT / "examples" / "config-repo" / "fleet.yaml")
    desired = list(render(fleet))

    def listed(route: Any, **params: Any) -> Any:  # as LiteLLM lists it: api_key never listed
        kept = {k: v for k, v in route.litellm_params.items() if k != "api_key"}
        return replace(route, litellm_params={**kept, **params})

    moved, last = desired[0], desired[-1]
    info = {**last.model_info, "fleet_sync_host": "retired", "id": last.id + "-retired"}
    orphan = replace(last, id=last.id + "-retired", model_info=info)
    live = [
        listed(moved, api_base="http://10.0.0.99:8000/v1"),
        *(listed(r) for r in desired[1:]),
        listed(orphan, api_base="http://10.0.0.50:8000/v1"),
    ]
    plan = make_plan(fleet, desired, live, litellm_version="1.108.7")
    return plan_json(plan)


def plan_json_page() -> str:
    document = json.dumps(example_plan_json(), indent=2, ensure_ascii=False)
    return "\n".join(
        [
            "# The JSON plan",
            "",
            "`fleet-sync plan --format json` and `plan --out plan.json` write one JSON document;",
            "`apply --plan plan.json` applies exactly it (refused, exit 3, when live state moved",
            "or the plan was made for another target, endpoint or rails). Generated at build time",
            "by the planner itself: the plan of `examples/config-repo/fleet.yaml` against a proxy",
            "where one host still has an old address and the fleet owns a route of a retired host.",
            "",
            "- `version`: the format's version (1); `fleet`: the fleet's name;",
            "- `hash`: `sha256:…` over the changes and what the plan binds; `binds` (only in a",
            "  plan read from a proxy): the target, a digest of the endpoint's pod URLs and the",
            "  rails (`safety`, `after`) apply obeys;",
            "- `litellm_version`: the release the proxy reported;",
            "- `summary`: how many creates, updates and deletes;",
            "- `changes`: each change with its `action`, `id`, `model_name`, `host`, the route",
            "  written and, for an update, the keys before and after (live values hidden by",
            "  provenance, as in every output), and `health` when hosts were probed;",
            "- `conflicts`, `ignored` (routes not owned, each with the reason), `withheld`",
            "  (changes `health: require` holds back), `health`, and `notes` when there are any.",
            "",
            "`apply --format json` prints the result: `version`, `fleet`, `hash`,",
            "`litellm_version`, `complete`, `conflicts`, `outcomes` (each change's `status`:",
            "done, failed, unconfirmed or skipped, with `detail` and `lagging` pods), `withheld`",
            "and `health`. `validate --format json` prints `valid` and `problems` (each located).",
            "",
            "```json",
            document,
            "```",
            "",
        ]
    )


# ---------------------------------------------------------------------------------- the action


def load_action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    return data


def action_page(action: Mapping[str, Any] | None = None) -> str:
    action = action or load_action()
    lines = [
        "# The GitHub Action",
        "",
        "Generated from `action.yml` at build time: every input and output. How the jobs use",
        "them: [the GitHub loop](../../guides/github.md).",
        "",
        escape(str(action.get("description", ""))),
        "",
        "## Inputs",
        "",
    ]
    for name, spec in action.get("inputs", {}).items():
        facts = ["required" if spec.get("required") else "optional"]
        if spec.get("default") not in (None, ""):
            facts.append(f"default {code(str(spec['default']))}")
        lines += [f"### `{name}`", "", "; ".join(facts).capitalize() + ".", ""]
        lines += [paragraphs(str(spec.get("description", ""))), ""]
    lines += ["## Outputs", ""]
    for name, spec in action.get("outputs", {}).items():
        lines += [f"### `{name}`", "", paragraphs(str(spec.get("description", ""))), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- Sphinx


def pages() -> dict[str, str]:
    return {
        "cli": cli_page(),
        "fleet-yaml": fleet_yaml_page(),
        "exit-codes": exit_codes_page(),
        "plan-json": plan_json_page(),
        "action": action_page(),
    }


def write_pages(srcdir: Path) -> None:
    where = srcdir / GENERATED
    where.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        path = where / f"{name}.md"
        if not path.exists() or path.read_text("utf-8") != text:  # unchanged: no rebuild
            path.write_text(text, encoding="utf-8")


def publish_schema(app: Any, exception: BaseException | None) -> None:
    """The site serves the schema too: <site>/schema/fleet.schema.json."""
    if exception is None and app.builder.format == "html":
        where = Path(app.outdir) / "schema"
        where.mkdir(exist_ok=True)
        shutil.copyfile(ROOT / "schema" / "fleet.schema.json", where / "fleet.schema.json")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", lambda app: write_pages(Path(app.srcdir)))
    app.connect("build-finished", publish_schema)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
