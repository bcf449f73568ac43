"""MkDocs hook: the pages generated from the code at build time, so that they cannot drift.

A page holds a marker comment, `<!-- generated: NAME -->`, that this hook replaces with the
Markdown of the generator NAME:

- `settings`: every field of `maestrale.config.Settings`, grouped by the settings class it comes
  from (reference/settings.md);
- `api`: the operations of the app's OpenAPI document, grouped by tag (reference/api.md);
- `cli`: every command of the `maestrale` command line, from its argparse parser
  (reference/cli.md);
- `layers`: the layers and contracts of `[tool.importlinter]` in pyproject.toml, which
  `make lint` enforces (architecture.md).

A marker with no generator, or a generator whose input is incomplete (a setting without a
description), fails the build. The generators are plain functions of the code, tested without a
build by tests/docs/test_reference.py.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import tomllib
import types
import typing
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!--\s*generated:\s*([a-z_]+)\s*-->")
ENV_PREFIX = "MAESTRALE_"

# Settings whose default, when unset, is made at run time rather than written in the code.
GENERATED = {
    "secret_key": "generated once into `<data dir>/secret-key`",
    "bootstrap_api_key": "generated at first start, printed once, written to"
    " `<data dir>/bootstrap-keys`",
    "bootstrap_admin_key": "generated at first start, printed once, written to"
    " `<data dir>/bootstrap-keys`",
}
# Flags whose destination is not named after the setting they set (cli._settings maps them).
FLAG_SETTINGS = {"no_worker": "worker", "concurrency": "worker_concurrency"}


def cell(text: str) -> str:
    """Text made safe for one cell of a Markdown table."""
    return " ".join(text.replace("|", "\\|").split())


# --- settings -----------------------------------------------------------------------------


def settings_classes() -> list[type[BaseSettings]]:
    """`Settings` first, then each settings class it inherits fields from, in its own order."""
    from maestrale.config import Settings

    return [
        cls
        for cls in Settings.__mro__
        if isinstance(cls, type)
        and issubclass(cls, BaseSettings)
        and cls is not BaseSettings
        and inspect.get_annotations(cls)
    ]


def fields_by_class() -> list[tuple[type[BaseSettings], list[tuple[str, FieldInfo]]]]:
    """The fields of `Settings`, each under the class that declares it."""
    from maestrale.config import Settings

    fields = Settings.model_fields
    return [
        (cls, [(name, fields[name]) for name in inspect.get_annotations(cls) if name in fields])
        for cls in settings_classes()
    ]


def type_name(annotation: Any) -> str:
    """A reader's name of a setting's type."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(arg) for arg in args if arg is not type(None)]
        return " or ".join(names) + (", optional" if type(None) in args else "")
    if origin is typing.Literal:
        return " \\| ".join(f"`{arg}`" for arg in args)
    if origin in (list, tuple, set):
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"table of {type_name(args[1])}s"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
    if annotation is SecretStr:
        return "secret"
    name = simple.get(annotation) or getattr(annotation, "__name__", None)
    return name if isinstance(name, str) else str(annotation)


def _size(value: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size and value % size == 0:
            return f"{value // size} {unit}"
    return ""


def default_text(name: str, field: FieldInfo) -> str:
    """The default of a setting as the docs show it: never a secret, never this machine's path."""
    if name in GENERATED:
        return GENERATED[name]
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, SecretStr):
        return "secret"
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        if value.is_absolute():
            raise ValueError(f"setting {name}: an absolute default path ({value}) is a machine's")
        return f"`{value}`"
    if isinstance(value, int) and name.endswith("_bytes") and _size(value):
        return f"`{value}` ({_size(value)})"
    if isinstance(value, list):
        return "`" + repr([str(item) for item in value]).replace("'", '"') + "`"
    if value == "":
        return '`""`'
    return f"`{value}`"


def setting_flags() -> dict[str, dict[str, list[str]]]:
    """The command-line flags that set a setting: `{field: {"--port": ["serve"]}}`."""
    from maestrale.config import Settings

    flags: dict[str, dict[str, list[str]]] = {}
    for path, parser in commands():
        for action in parser._actions:
            field = FLAG_SETTINGS.get(action.dest, action.dest)
            if action.option_strings and field in Settings.model_fields:
                by_flag = flags.setdefault(field, {})
                by_flag.setdefault(action.option_strings[-1], []).append(" ".join(path))
    return flags


def flags_text(by_flag: dict[str, list[str]], every: int) -> str:
    """`--port` of serve, `--data-dir` of every command: the flags of one setting, in words."""
    return ", ".join(
        f"`{flag}` of " + ("every command" if len(paths) == every else ", ".join(paths))
        for flag, paths in by_flag.items()
    )


def description(cls: type[Any]) -> str:
    """What a settings class is about: its docstring, else its module's."""
    doc = cls.__dict__.get("__doc__") or sys.modules[cls.__module__].__doc__ or ""
    return " ".join(doc.split())


def settings_markdown() -> str:
    flags = setting_flags()
    every = len(list(commands()))
    out: list[str] = []
    for cls, fields in fields_by_class():
        out += [f"## `{cls.__name__}`", "", description(cls), ""]
        out += ["| Variable and TOML key | Type | Default | Description |", "|---|---|---|---|"]
        nested: list[tuple[str, type[BaseModel]]] = []
        for name, field in fields:
            if not field.description:
                raise ValueError(f"setting {name} has no description")
            env = ENV_PREFIX + name.upper()
            text = field.description.rstrip(".")
            if name in flags:
                text += "; flag: " + flags_text(flags[name], every)
            anchor = f'<span id="{env.lower()}"></span>'
            out.append(
                f"| {anchor}`{env}`<br>`{name}` | {type_name(field.annotation)} "
                f"| {cell(default_text(name, field))} | {cell(text)} |"
            )
            model = field.annotation
            if isinstance(model, type) and issubclass(model, BaseModel):
                nested.append((name, model))
        for name, model in nested:
            out += ["", *model_markdown(name, model)]
        out.append("")
    return "\n".join(out)


def model_markdown(key: str, model: type[BaseModel]) -> list[str]:
    """The fields of a setting that is a table (`[limits]`), and of the tables it holds."""
    doc = " ".join((model.__doc__ or "").split("```")[0].split())
    out = [f"### `[{key}]`", "", doc, ""]
    out += ["| TOML key | Type | Default | Description |", "|---|---|---|---|"]
    inner: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        if not field.description:
            raise ValueError(f"setting {key}.{name} has no description")
        out.append(
            f"| `{key}.{name}` | {type_name(field.annotation)} "
            f"| {cell(default_text(name, field))} | {cell(field.description)} |"
        )
        value = typing.get_args(field.annotation)[-1:] or (field.annotation,)
        if isinstance(value[0], type) and issubclass(value[0], BaseModel):
            inner.append((f'{key}.{name}."MODEL"', value[0]))
    for name, sub in inner:
        out += ["", *model_markdown(name, sub)]
    return out


# --- HTTP API -------------------------------------------------------------------------------


def openapi() -> dict[str, Any]:
    """The OpenAPI document of the app as `maestrale serve` builds it, with default settings
    (neither the environment nor a settings file changes the page). Nothing is started."""
    from maestrale.app import create_app
    from maestrale.config import Settings

    class Defaults(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings,)

    spec: dict[str, Any] = create_app(Defaults()).openapi()
    return spec


METHODS = ("get", "post", "put", "patch", "delete", "head", "options")


def operations_by_tag(spec: dict[str, Any]) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """`{tag: [(METHOD, path, operation)]}`, tags sorted, an operation under each of its tags."""
    tags: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in spec["paths"].items():
        for method in METHODS:
            if (operation := item.get(method)) is not None:
                for tag in operation.get("tags") or ["untagged"]:
                    tags.setdefault(tag, []).append((method.upper(), path, operation))
    return {tag: sorted(tags[tag], key=lambda op: (op[1], op[0])) for tag in sorted(tags)}


def api_markdown() -> str:
    spec = openapi()
    groups = operations_by_tag(spec)
    count = sum(len(item) for item in spec["paths"].values())
    out = [
        f"{spec['info']['title']} {spec['info']['version']}: {len(spec['paths'])} paths,"
        f" {count} operations, in {len(groups)} tags.",
        "",
        "Tags: " + ", ".join(f"[{tag}](#{tag_anchor(tag)})" for tag in groups) + ".",
        "",
    ]
    for tag, ops in groups.items():
        out += [f"## {tag} {{ #{tag_anchor(tag)} }}", ""]
        out += ["| Method | Path | Operation id | Summary |", "|---|---|---|---|"]
        for method, path, operation in ops:
            summary = operation.get("summary") or ""
            if operation.get("deprecated"):
                summary += " (deprecated)"
            out.append(
                f"| {method} | `{cell(path)}` | `{operation.get('operationId', '')}` "
                f"| {cell(summary)} |"
            )
        out.append("")
    return "\n".join(out)


def tag_anchor(tag: str) -> str:
    return "tag-" + re.sub(r"[^a-z0-9]+", "-", tag.lower()).strip("-")


# --- command line ---------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    from maestrale.cli import _parser

    return _parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def commands(
    root: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command that runs something (`("keys", "create")`, ...), with its parser."""
    root = root if root is not None else parser()
    subs = _subcommands(root)
    if not subs:
        yield path, root
    for name, sub in subs.items():
        yield from commands(sub, (*path, name))


def _metavar(action: argparse.Action) -> str:
    metavar = action.metavar
    return metavar if isinstance(metavar, str) else action.dest.upper()


def _option(action: argparse.Action) -> tuple[str, str, str]:
    """(name, value, default) of one option or argument as the page shows them."""
    metavar = _metavar(action)
    if not action.option_strings:
        return f"`{metavar}`", "argument", "required"
    names = ", ".join(f"`{name}`" for name in action.option_strings)
    kind = getattr(action.type, "__name__", None)
    if action.nargs == 0:
        value = "flag"
    elif action.choices:
        value = " \\| ".join(f"`{choice}`" for choice in action.choices)
    elif kind == "_days":
        value = f"`{metavar}` (days)"
    else:
        readable = {"int": "integer", "float": "number", "Path": "path"}
        value = f"`{metavar}`" + (f" ({readable[kind]})" if kind in readable else "")
    if isinstance(action, argparse._AppendAction):
        value += ", repeatable"
    default = action.default
    if action.required:
        shown = "required"
    elif default in (None, False, [], argparse.SUPPRESS):
        shown = ""
    else:
        shown = f"`{default}`"
    return names, value, shown


def _sentence(text: str) -> str:
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def cli_markdown() -> str:
    return "\n".join(_command_markdown(parser(), (), ""))


def _command_markdown(
    command: argparse.ArgumentParser, path: tuple[str, ...], help_text: str
) -> list[str]:
    """A command's section: a group lists its subcommands, then gives each a section of its own;
    a command that runs something gets a table of its arguments and options."""
    level = "#" * min(len(path) + 1, 4)
    name = " ".join(("maestrale", *path))
    out = [f"{level} `{name}`", "", _sentence(help_text), ""] if path else []
    subs = _subcommands(command)
    helps = _helps(command)
    args = [a for a in command._actions if not isinstance(a, argparse._HelpAction)]
    if subs:
        out += ["| Command | What it does |", "|---|---|"]
        out += [f"| `{name} {sub}` | {cell(_sentence(helps.get(sub, '')))} |" for sub in subs]
        out.append("")
        for sub, sub_parser in subs.items():
            out += _command_markdown(sub_parser, (*path, sub), helps.get(sub, ""))
        return out
    positional = " ".join(_metavar(a) for a in args if not a.option_strings)
    out += [f"`{name} [OPTIONS]{' ' + positional if positional else ''}`", ""]
    out += ["| Option | Value | Default | Help |", "|---|---|---|---|"]
    for action in args:
        names, value, default = _option(action)
        out.append(f"| {names} | {value} | {default} | {cell(action.help or '')} |")
    out.append("")
    return out


# --- layers ---------------------------------------------------------------------------------


def importlinter() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        config: dict[str, Any] = tomllib.load(file)["tool"]["importlinter"]
    return config


def layer_labels(layers: list[str]) -> dict[str, str]:
    """The comment written above a layer in pyproject.toml, by layer: the picture's notes. Empty
    when the file's text and its parsed layers disagree."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index("layers = [")
    block = text[start : text.index("\n]", start)]
    labels: dict[str, str] = {}
    comment: list[str] = []
    seen: list[str] = []
    for line in block.splitlines()[1:]:
        line = line.strip()
        if line.startswith("#"):
            comment.append(line.lstrip("# "))
        elif line.startswith('"'):
            layer = line.strip('",')
            seen.append(layer)
            if comment:
                labels[layer] = " ".join(comment)
            comment = []
    return labels if seen == layers else {}


def top_level_modules() -> set[str]:
    package = ROOT / "src" / "maestrale"
    names = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    return names | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}


MARKS = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"


def layers_markdown() -> str:
    config = importlinter()
    contracts: list[dict[str, Any]] = config["contracts"]
    layered = next(c for c in contracts if c["type"] == "layers")
    layers: list[str] = layered["layers"]
    labels = layer_labels(layers)
    marks = dict(zip(labels, MARKS, strict=False))
    rows = [[member.strip() for member in re.split(r"[|:]", layer)] for layer in layers]
    lines = [
        (" │ " if "|" in layer else " : ").join(row)
        for layer, row in zip(layers, rows, strict=True)
    ]
    width = max(map(len, lines)) + 4
    out = ["```text", "  ┌" + "─" * width + "┐"]
    for layer, line in zip(layers, lines, strict=True):
        out.append(f"  │{line:^{width}}│ {marks.get(layer, '')}".rstrip())
    out += ["  └" + "─" * width + "┘", "```", ""]
    out += [f"- {marks[layer]} {cell(labels[layer])}" for layer in marks]
    exempt = config.get("exclude_type_checking_imports")
    out += [
        "",
        f"Container: `{', '.join(layered['containers'])}`. Each line is a layer, the highest on"
        " top: a layer imports only the layers below it (function-level imports count"
        + ("; `if TYPE_CHECKING:` ones do not)" if exempt else ")")
        + "; the modules of one line joined by `│` do not import each other"
        + (", those joined by `:` may." if any(":" in layer for layer in layers) else "."),
        "",
    ]
    outside = sorted(top_level_modules() - {m for row in rows for m in row})
    if outside:
        out += ["Outside the layers: " + ", ".join(f"`{m}`" for m in outside) + ".", ""]
    out += ["| Contract | Kind | What it checks |", "|---|---|---|"]
    for contract in contracts:
        out.append(f"| {cell(contract['name'])} | {contract['type']} | {_checks(contract)} |")
    out.append("")
    return "\n".join(out)


def _short(module: str) -> str:
    return f"`{module.removeprefix('maestrale.')}`"


def _checks(contract: dict[str, Any]) -> str:
    kind = contract["type"]
    if kind == "layers":
        return f"the {len(contract['layers'])} layers drawn above"
    if kind == "forbidden":
        sources = ", ".join(_short(m) for m in contract["source_modules"])
        forbidden = ", ".join(_short(m) for m in contract["forbidden_modules"])
        return f"{sources} import none of {forbidden}"
    if kind == "independence":
        return ", ".join(_short(m) for m in contract["modules"]) + " import none of each other"
    return cell(str({k: v for k, v in contract.items() if k not in ("name", "type")}))


# --- the hook -------------------------------------------------------------------------------

GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_markdown,
    "api": api_markdown,
    "cli": cli_markdown,
    "layers": layers_markdown,
}


@cache
def generate(name: str) -> str:
    if name not in GENERATORS:
        raise ValueError(f"no generator named {name!r} (known: {', '.join(GENERATORS)})")
    return GENERATORS[name]()


def on_pre_build(**_: Any) -> None:
    """MkDocs event: each build (each rebuild of `mkdocs serve`) generates the pages afresh."""
    generate.cache_clear()


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs event: replace each marker of the page with its generated Markdown."""
    from mkdocs.exceptions import PluginError

    try:
        return MARKER.sub(lambda match: generate(match.group(1)), markdown)
    except ValueError as exc:  # an incomplete input: the build fails, saying what is missing
        raise PluginError(f"docs/hooks/reference.py: {exc}") from exc
