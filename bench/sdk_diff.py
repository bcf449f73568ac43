"""What changed between two releases of the official `mistralai` SDK, read from their sources.

    python bench/sdk_diff.py OLD NEW [--served]

OLD and NEW are versions (`2.8.0`, `3.7.0`: the wheels are fetched with `pip download` into a
cache folder) or folders holding an unpacked `mistralai` package. It prints, from the generated
sources alone (nothing of either SDK is imported):
- the wire operations (method and path) only in OLD, only in NEW, and those whose path changed;
- the response and request models: fields added, removed, made required or optional;
- the enums (`Literal` unions and `Enum` classes) whose values changed.

`--served` adds how many of NEW's operations this server routes (its OpenAPI, built in-process),
and lists the ones it does not: the next SDK bump is this one command and the list it prints.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path.home() / ".cache" / "maestrale" / "sdk-sources"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str
    call: str  # where the SDK exposes it: `connectors.list`


@dataclass
class Model:
    fields: dict[str, tuple[str, bool]] = field(default_factory=dict)  # wire name: (type, required)


@dataclass
class Sdk:
    version: str
    operations: dict[tuple[str, str], Operation]
    models: dict[str, Model]
    enums: dict[str, frozenset[str]]


def package_dir(spec: str) -> Path:
    """The `mistralai/client` folder of a version (downloaded once) or of an unpacked folder."""
    given = Path(spec)
    if given.is_dir():
        for candidate in (given / "mistralai" / "client", given / "client", given):
            if (candidate / "models").is_dir():
                return candidate
        raise SystemExit(f"{spec}: no mistralai/client/models folder in it")
    target = CACHE / spec
    if not (target / "mistralai").is_dir():
        wheels = CACHE / "wheels"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "-d",
                str(wheels),
                f"mistralai=={spec}",
            ],
            check=True,
        )
        wheel = next(wheels.glob(f"mistralai-{spec}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)
    return target / "mistralai" / "client"


def _keyword(call: ast.Call, name: str) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    return None


def read_operations(client: Path) -> dict[tuple[str, str], Operation]:
    operations: dict[tuple[str, str], Operation] = {}
    for source in sorted(client.glob("*.py")):
        tree = ast.parse(source.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef) or function.name.startswith("_"):
                continue
            method = path = operation_id = None
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    method = method or _keyword(node, "method")
                    path = path or _keyword(node, "path")
                    operation_id = operation_id or _keyword(node, "operation_id")
            if method and path and path.startswith("/"):
                path = path.split("#")[0]  # `/v1/chat/completions#stream`: the same wire route
                key = (method.upper(), path)
                operations.setdefault(
                    key,
                    Operation(key[0], path, operation_id or "", f"{source.stem}.{function.name}"),
                )
    return operations


def _literals(node: ast.AST) -> Iterator[str]:
    for child in ast.walk(node):
        if isinstance(child, ast.Subscript) and ast.unparse(child.value).endswith("Literal"):
            for value in ast.walk(child.slice):
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield value.value


def _wire_name(name: str, annotation: ast.AST) -> str:
    for node in ast.walk(annotation):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Field"):
            alias = _keyword(node, "alias") or _keyword(node, "serialization_alias")
            if alias:
                return alias
    return name


def _type_name(annotation: ast.AST) -> str:
    text = ast.unparse(annotation)
    text = re.sub(
        r"pydantic\.Field\([^)]*\)|AfterValidator\([^)]*\)|FieldMetadata\([^)]*\)", "", text
    )
    return re.sub(r"\s+", "", text)


def read_models(client: Path) -> tuple[dict[str, Model], dict[str, frozenset[str]]]:
    models: dict[str, Model] = {}
    enums: dict[str, frozenset[str]] = {}
    for source in sorted((client / "models").glob("*.py")):
        tree = ast.parse(source.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base) for base in node.bases}
                if "BaseModel" in bases:
                    model = models.setdefault(node.name, Model())
                    for item in node.body:
                        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                            name = _wire_name(item.target.id, item.annotation)
                            model.fields[name] = (_type_name(item.annotation), item.value is None)
                elif any(base.endswith("Enum") for base in bases):
                    enums[node.name] = frozenset(
                        str(item.value.value)
                        for item in node.body
                        if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)
                    )
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                values = frozenset(_literals(node.value))
                if isinstance(target, ast.Name) and values and not target.id.endswith("TypedDict"):
                    enums[target.id] = values
    return models, enums


def read_sdk(spec: str) -> Sdk:
    client = package_dir(spec)
    version = re.search(r'__version__: str = "([^"]+)"', (client / "_version.py").read_text())
    models, enums = read_models(client)
    return Sdk(version.group(1) if version else spec, read_operations(client), models, enums)


def _template(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def served_operations() -> set[tuple[str, str]]:
    """(method, path template) of every route of this server, from its OpenAPI document."""
    from maestrale.app import create_app

    document = create_app().openapi()
    return {
        (method.upper(), _template(path))
        for path, item in document.get("paths", {}).items()
        for method in item
        if method.lower() in {"get", "post", "put", "patch", "delete"}
    }


def diff(old: Sdk, new: Sdk) -> list[str]:
    lines = [f"mistralai {old.version} -> {new.version}"]
    by_template = {(m, _template(p)): op for (m, p), op in old.operations.items()}
    added = [
        op for key, op in new.operations.items() if (key[0], _template(key[1])) not in by_template
    ]
    kept = {(m, _template(p)) for m, p in new.operations}
    removed = [op for key, op in by_template.items() if key not in kept]
    old_ids = {op.operation_id: op for op in old.operations.values() if op.operation_id}
    moved = [
        (old_ids[op.operation_id], op)
        for op in added
        if op.operation_id in old_ids and old_ids[op.operation_id].path != op.path
    ]
    lines.append(
        f"operations: {len(old.operations)} -> {len(new.operations)}"
        f" ({len(added)} new, {len(removed)} gone, {len(moved)} moved)"
    )
    lines += [f"  moved  {b.method} {a.path} -> {b.path}  ({b.call})" for a, b in moved]
    moved_new = {id(b) for _, b in moved}
    lines += [
        f"  new    {op.method} {op.path}  ({op.call})" for op in added if id(op) not in moved_new
    ]
    lines += [f"  gone   {op.method} {op.path}  ({op.call})" for op in removed]
    lines.append("models (fields by wire name; * = required):")
    for name in sorted(set(old.models) & set(new.models)):
        before, after = old.models[name].fields, new.models[name].fields
        changes = [f"+{f}{'*' if after[f][1] else ''}" for f in after if f not in before]
        changes += [f"-{f}" for f in before if f not in after]
        changes += [
            f"{f}: {'required' if after[f][1] else 'optional'}"
            for f in after
            if f in before and after[f][1] != before[f][1]
        ]
        changes += [
            f"{f}: {before[f][0]} -> {after[f][0]}"
            for f in after
            if f in before and after[f][0] != before[f][0]
        ]
        if changes:
            lines.append(f"  {name}: {', '.join(changes)}")
    lines.append(f"  {len(set(new.models) - set(old.models))} models only in {new.version}")
    lines.append("enums:")
    for name in sorted(set(old.enums) & set(new.enums)):
        gained, lost = new.enums[name] - old.enums[name], old.enums[name] - new.enums[name]
        if gained or lost:
            parts = [f"+{v}" for v in sorted(gained)] + [f"-{v}" for v in sorted(lost)]
            lines.append(f"  {name}: {' '.join(parts)}")
    return lines


def coverage(sdk: Sdk, served: set[tuple[str, str]]) -> list[str]:
    missing = sorted(
        (op for (m, p), op in sdk.operations.items() if (m, _template(p)) not in served),
        key=lambda op: (op.path, op.method),
    )
    lines = [f"served: {len(sdk.operations) - len(missing)} of {len(sdk.operations)} operations"]
    lines += [f"  not served  {op.method} {op.path}  ({op.call})" for op in missing]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="a version (2.8.0) or a folder with mistralai/client in it")
    parser.add_argument("new", help="the same for the newer SDK")
    parser.add_argument("--served", action="store_true", help="compare NEW with this server")
    args = parser.parse_args(argv)
    old, new = read_sdk(args.old), read_sdk(args.new)
    lines = diff(old, new)
    if args.served:
        lines += coverage(new, served_operations())
    print("\n".join(lines))


if __name__ == "__main__":
    main()
