"""Typed reads of one key of a JSON object column, for SQLite and Postgres: the key's value when
it has that JSON type, else NULL (a key holding a string never fails a numeric comparison, and
no cast can raise). The key is a bound parameter; on SQLite it becomes a quoted path
(`$."gen_ai.request.model"`: a dotted OpenTelemetry key is one key, not a path), so keys may not
hold a double quote or a backslash (`check_key`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Boolean, Float, String, Text, literal
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from maestrale.core.db import JSONDoc

MAX_KEY_LENGTH = 256


def check_key(key: str) -> str | None:
    """Why a map key cannot be read (None when it can)."""
    if not key or len(key) > MAX_KEY_LENGTH:
        return f"a map key has 1 to {MAX_KEY_LENGTH} characters"
    if any(c in '"\\' or ord(c) < 0x20 for c in key):
        return "a map key may not hold a double quote, a backslash or a control character"
    return None


class _JsonKey(FunctionElement[Any]):
    inherit_cache = True

    def __init__(self, column: Any, key: str) -> None:
        super().__init__(column, literal(key, String()))


def _read(name: str, type_: Any, doc: str) -> type[_JsonKey]:
    attributes = {"type": type_, "name": name, "inherit_cache": True, "__doc__": doc}
    return type(name, (_JsonKey,), attributes)


json_text = _read("json_text", Text(), "The key's string value.")
json_number = _read("json_number", Float(), "The key's numeric value (integer or real).")
json_bool = _read("json_bool", Boolean(), "The key's boolean value.")
json_present = _read("json_present", Boolean(), "Whether the key is there (and not null).")
json_scalar = _read(
    "json_scalar",
    Text(),
    "The key's value as text whatever its type (a string as is, a number or a boolean as JSON "
    "writes it, an array or object as JSON text): what a MAP's values read as.",
)
json_array = _read(
    "json_array", JSONDoc, "The key's array (JSON text on SQLite, jsonb on Postgres), or NULL."
)


# The SQL of each read: {c} is the JSON column, {p} the key's path on SQLite, {k} the key.
_SQLITE = {
    json_text: "CASE WHEN json_type({c}, {p}) = 'text' THEN json_extract({c}, {p}) END",
    json_number: (
        "CASE WHEN json_type({c}, {p}) IN ('integer', 'real') THEN json_extract({c}, {p}) END"
    ),
    json_bool: "CASE json_type({c}, {p}) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END",
    json_present: "coalesce(json_type({c}, {p}) NOT IN ('null'), 0)",
    json_scalar: (
        "CASE json_type({c}, {p}) WHEN 'null' THEN NULL WHEN 'text' THEN json_extract({c}, {p}) "
        "WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
        "ELSE CAST(json_extract({c}, {p}) AS TEXT) END"
    ),
    json_array: "CASE WHEN json_type({c}, {p}) = 'array' THEN json_extract({c}, {p}) END",
}
_POSTGRES = {
    json_text: "CASE WHEN jsonb_typeof(({c}) -> {k}) = 'string' THEN ({c}) ->> {k} END",
    json_number: (
        "CASE WHEN jsonb_typeof(({c}) -> {k}) = 'number' "
        "THEN CAST(({c}) ->> {k} AS DOUBLE PRECISION) END"
    ),
    json_bool: (
        "CASE WHEN jsonb_typeof(({c}) -> {k}) = 'boolean' THEN CAST(({c}) ->> {k} AS BOOLEAN) END"
    ),
    json_present: "coalesce(jsonb_typeof(({c}) -> {k}) <> 'null', false)",
    json_scalar: "CASE WHEN jsonb_typeof(({c}) -> {k}) = 'null' THEN NULL ELSE ({c}) ->> {k} END",
    json_array: "CASE WHEN jsonb_typeof(({c}) -> {k}) = 'array' THEN ({c}) -> {k} END",
}


def _compiler(template: str) -> Callable[..., str]:
    def render(element: _JsonKey, compiler: Any, **kw: Any) -> str:
        column, key = (compiler.process(clause, **kw) for clause in element.clauses)
        path = f"""('$."' || {key} || '"')"""
        return template.format(c=column, p=path, k=key)

    return render


for _kind, _template in _SQLITE.items():
    compiles(_kind, "sqlite")(_compiler(_template))
for _kind, _template in _POSTGRES.items():
    compiles(_kind, "postgresql")(_compiler(_template))
