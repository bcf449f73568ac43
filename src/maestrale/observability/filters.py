"""search_params → SQL: AND/OR groups of `{field, op, value}` conditions compiled to a WHERE
clause over chat_completion_events, for SQLite and Postgres. Values are bound parameters; an
unknown field, an unsupported operator or a value of the wrong type is a 400 naming them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import ColumnElement, Float, String, and_, case, cast, false, func, not_, or_, true
from sqlalchemy.sql.elements import ColumnElement as Col

from maestrale.observability.errors import bad_search
from maestrale.observability.events.tables import ChatCompletionEvent as E
from maestrale.observability.fields import FieldSpec, check_operator, resolve

MAX_DEPTH = 10
MAX_CONDITIONS = 200


class FilterPayload(BaseModel):
    """`{"filters": FilterGroup | FilterCondition | null}`; the tree is checked when compiled."""

    model_config = ConfigDict(extra="ignore")
    filters: dict[str, Any] | None = None


def compile_filters(payload: FilterPayload | None, dialect: str) -> ColumnElement[bool]:
    if payload is None or payload.filters is None:
        return true()
    return _Compiler(dialect).node(payload.filters, 0)


class _Compiler:
    def __init__(self, dialect: str) -> None:
        self.pg = dialect == "postgresql"
        self.count = 0

    def node(self, node: Any, depth: int) -> ColumnElement[bool]:
        if depth > MAX_DEPTH:
            raise bad_search(f"filters are nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict):
            raise bad_search("a filter must be an object: a condition or an AND/OR group")
        if "field" in node or "op" in node:
            return self.condition(node)
        unknown = set(node) - {"AND", "OR"}
        if unknown:
            raise bad_search(f"unknown keys in a filter group: {', '.join(sorted(unknown))}")
        parts: list[ColumnElement[bool]] = []
        for key, combine in (("AND", and_), ("OR", or_)):
            children = node.get(key)
            if children is None:
                continue
            if not isinstance(children, list):
                raise bad_search(f"{key} must be an array of filters")
            if children:
                parts.append(combine(*(self.node(c, depth + 1) for c in children)))
        return and_(*parts) if parts else true()

    def condition(self, node: dict[str, Any]) -> ColumnElement[bool]:
        self.count += 1
        if self.count > MAX_CONDITIONS:
            raise bad_search(f"at most {MAX_CONDITIONS} conditions per search")
        field, op = node.get("field"), node.get("op")
        if not isinstance(field, str) or not isinstance(op, str) or "value" not in node:
            raise bad_search("a condition needs a string field, a string op and a value")
        spec = resolve(field)
        check_operator(spec, op)
        value = node["value"]
        if spec.column is None:
            return self.extra(spec, op, value)
        return self.column(spec, op, value)

    # -- event columns -------------------------------------------------------------------
    def column(self, spec: FieldSpec, op: str, value: Any) -> ColumnElement[bool]:
        col: Any = getattr(E, spec.column or "")
        if spec.type == "ARRAY":
            length = func.jsonb_array_length(col) if self.pg else func.json_array_length(col)
            return length == _int(spec, op, value)
        if spec.type == "TIMESTAMP":
            return _compare(col, op, _timestamp(spec, op, value))
        if spec.type in ("INT", "FLOAT"):
            if op in ("includes", "excludes"):
                values = [_number(spec, op, v) for v in _list(spec, op, value)]
                member: ColumnElement[bool] = col.in_(values)
                return member if op == "includes" else not_(member)
            return _compare(col, op, _number(spec, op, value))
        return self.text(col, spec, op, value)

    def text(self, col: Any, spec: FieldSpec, op: str, value: Any) -> ColumnElement[bool]:
        if op in ("includes", "excludes"):
            values = [_string(spec, op, v) for v in _list(spec, op, value)]
            member: ColumnElement[bool] = col.in_(values)
            return member if op == "includes" else not_(member)
        v = _string(spec, op, value)
        if op in ("eq", "neq", "lt", "lte", "gt", "gte"):
            return _compare(col, op, v)
        if op == "matches":
            try:
                re.compile(v)
            except re.error as exc:
                raise bad_search(f"invalid regular expression for {spec.name!r}: {exc}") from exc
            return col.regexp_match(v)  # type: ignore[no-any-return]
        if op in ("istartswith", "iendswith", "icontains", "inotcontains"):
            method = {"istartswith": "istartswith", "iendswith": "iendswith"}.get(op, "icontains")
            expr = getattr(col, method)(v, autoescape=True)
            return not_(expr) if op == "inotcontains" else expr  # type: ignore[no-any-return]
        # Case-sensitive: LIKE is case-insensitive on SQLite, so compare substrings there.
        if self.pg:
            method = {"startswith": "startswith", "endswith": "endswith"}.get(op, "contains")
            expr = getattr(col, method)(v, autoescape=True)
        elif not v:
            expr = true()
        elif op == "startswith":
            expr = func.substr(col, 1, len(v)) == v
        elif op == "endswith":
            expr = func.substr(col, -len(v)) == v
        else:
            expr = func.instr(col, v) > 0
        return not_(expr) if op == "notcontains" else expr  # type: ignore[no-any-return]

    # -- extra_fields keys ---------------------------------------------------------------
    def extra(self, spec: FieldSpec, op: str, value: Any) -> ColumnElement[bool]:
        key = spec.extra_key or ""
        col: Any = E.extra_fields
        if self.pg:
            element = col.op("->")(key)
            kind: Any = func.jsonb_typeof(element)
            raw_text: Any = col.op("->>", return_type=String())(key)
            string = case((kind == "string", raw_text))
            number = case((kind == "number", cast(raw_text, Float)))
            boolean = case((kind == "boolean", raw_text == "true"))
            length = case((kind == "array", func.jsonb_array_length(element)))
            is_null = or_(kind.is_(None), kind == "null")
        else:
            path = f'$."{key}"'
            kind = func.json_type(col, path)
            extracted = func.json_extract(col, path)
            string = case((kind == "text", func.json_extract(col, path, type_=String())))
            number = case((kind.in_(["integer", "real"]), cast(extracted, Float)))
            boolean = case((kind == "true", true()), (kind == "false", false()))
            length = case((kind == "array", func.json_array_length(col, path)))
            is_null = or_(kind.is_(None), kind == "null")
        if op == "isnull":
            if not isinstance(value, bool):
                raise bad_search(f"{spec.name!r} isnull takes true or false")
            return is_null if value else not_(is_null)
        if op == "len_eq":
            return length == _int(spec, op, value)
        if op in ("includes", "excludes"):
            values = _list(spec, op, value)
            if all(isinstance(v, str) for v in values):
                target = string
            elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                target = number
            else:
                raise bad_search(f"{spec.name!r} {op} takes a list of strings or of numbers")
            member = target.in_(values) if values else false()
            return member if op == "includes" else or_(target.is_(None), not_(member))
        if isinstance(value, bool):
            if op not in ("eq", "neq"):
                raise bad_search(f"{spec.name!r} {op} does not take a boolean")
            equal = boolean == value
        elif isinstance(value, int | float):
            if op not in ("eq", "neq", "lt", "lte", "gt", "gte"):
                raise bad_search(f"{spec.name!r} {op} does not take a number")
            equal = _compare(number, "eq", value)
            if op not in ("eq", "neq"):
                return _compare(number, op, value)
        else:
            return self.text(string, spec, op, value)
        return equal if op == "eq" else or_(equal.is_(None), not_(equal))


def extra_string(key: str, dialect: str) -> Any:
    """The string value of an extra_fields key (NULL when absent or not a string)."""
    col: Any = E.extra_fields
    if dialect == "postgresql":
        text = col.op("->>", return_type=String())(key)
        return case((func.jsonb_typeof(col.op("->")(key)) == "string", text))
    path = f'$."{key}"'
    extracted = func.json_extract(col, path, type_=String())
    return case((func.json_type(col, path) == "text", extracted))


def _compare(col: Any, op: str, value: Any) -> ColumnElement[bool]:
    ops = {
        "eq": col.__eq__,
        "neq": col.__ne__,
        "lt": col.__lt__,
        "lte": col.__le__,
        "gt": col.__gt__,
        "gte": col.__ge__,
    }
    if op not in ops:
        raise bad_search(f"operator {op!r} does not apply to this value")
    result: Col[bool] = ops[op](value)
    return result


def _string(spec: FieldSpec, op: str, value: Any) -> str:
    if not isinstance(value, str):
        raise bad_search(f"{spec.name!r} {op} takes a string value")
    return value


def _number(spec: FieldSpec, op: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_search(f"{spec.name!r} {op} takes a number value")
    if spec.type == "INT" and isinstance(value, float) and not value.is_integer():
        raise bad_search(f"{spec.name!r} {op} takes an integer value")
    return value


def _int(spec: FieldSpec, op: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad_search(f"{spec.name!r} {op} takes a non-negative integer value")
    return value


def _list(spec: FieldSpec, op: str, value: Any) -> list[Any]:
    if not isinstance(value, list) or len(value) > 1000:
        raise bad_search(f"{spec.name!r} {op} takes an array of at most 1000 values")
    return value


def _timestamp(spec: FieldSpec, op: str, value: Any) -> datetime:
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
    raise bad_search(f"{spec.name!r} {op} takes an ISO 8601 datetime string")
