"""search_params → SQL: AND/OR groups of `{field, op, value}` conditions compiled to a WHERE
clause over chat_completion_events, for SQLite and Postgres. Values are bound parameters; an
unknown field, an unsupported operator or a value of the wrong type is a 400 naming them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import (
    ColumnElement,
    Float,
    String,
    and_,
    case,
    cast,
    column,
    false,
    func,
    literal_column,
    not_,
    or_,
    select,
    table,
    true,
)

from maestrale.accounting.tables import ChatCompletionEvent as E
from maestrale.core.validation import INT64_MAX, INT64_MIN
from maestrale.observability.errors import bad_search
from maestrale.observability.events.tables import TEXT_FTS
from maestrale.observability.events.tables import ChatCompletionEventText as T
from maestrale.observability.fields import FieldSpec, check_operator, resolve
from maestrale.telemetry.search.sqlops import (
    MAX_PATTERN_LENGTH as MAX_PATTERN_LENGTH,
)
from maestrale.telemetry.search.sqlops import (
    compare,
    parse_datetime,
    regex_problem,
    substring,
)

MAX_DEPTH = 10
MAX_CONDITIONS = 200
# FTS5's trigram index answers substrings of at least this many characters.
TRIGRAM = 3
_FTS = table(TEXT_FTS, column("rowid"))


class FilterPayload(BaseModel):
    """`{"filters": FilterGroup | FilterCondition | null}`; the tree is checked when compiled."""

    model_config = ConfigDict(extra="ignore")
    filters: dict[str, Any] | None = None


def compile_filters(payload: FilterPayload | None, dialect: str) -> ColumnElement[bool]:
    if payload is None or payload.filters is None:
        return true()
    return _Compiler(dialect).node(payload.filters, 0)


def compile_scan(payload: FilterPayload | None, dialect: str) -> ColumnElement[bool] | None:
    """On SQLite, for filters on the messages' text: the same filter checked event by event
    (each event's text read by its id), None otherwise. Walking the newest events that way
    fills a page at once while the text is common, when the full-text index would first list
    every one of its (many) matches; a rare text is the index's case (see
    ChatCompletionEventRepository)."""
    if dialect == "postgresql" or payload is None or payload.filters is None:
        return None
    compiler = _Compiler(dialect, scan=True)
    where = compiler.node(payload.filters, 0)
    return where if compiler.texts else None


class _Compiler:
    def __init__(self, dialect: str, *, scan: bool = False) -> None:
        self.pg = dialect == "postgresql"
        self.scan = scan
        self.count = 0
        self.texts = 0  # conditions on the messages' text

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
        if spec.message_text:
            return self.message_text(spec, op, value)
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
            _check_pattern(spec, v)
            return col.regexp_match(v)  # type: ignore[no-any-return]
        if op in ("istartswith", "iendswith", "icontains", "inotcontains"):
            method = {"istartswith": "istartswith", "iendswith": "iendswith"}.get(op, "icontains")
            expr = getattr(col, method)(v, autoescape=True)
            return not_(expr) if op == "inotcontains" else expr  # type: ignore[no-any-return]
        where = {"startswith": "startswith", "endswith": "endswith"}.get(op, "contains")
        expr = substring(col, v, "postgresql" if self.pg else "sqlite", where)
        return not_(expr) if op == "notcontains" else expr

    # -- the messages' text --------------------------------------------------------------
    def message_text(self, spec: FieldSpec, op: str, value: Any) -> ColumnElement[bool]:
        """The events whose text (chat_completion_event_texts) matches, by the same condition
        as on any text field. On Postgres the column's pg_trgm index answers it; on SQLite the
        FTS5 trigram index first narrows the texts to those holding the value in any case. In
        `scan` mode, each event's text is looked up by its id and checked instead."""
        v = _string(spec, op, value)
        self.texts += 1
        negated = {"notcontains": "contains", "inotcontains": "icontains"}.get(op)
        col: Any = getattr(T, spec.column or "")
        exact = self.text(col, spec, negated or op, v)
        if self.scan or (self.pg and negated):
            # Event by event; on Postgres an anti-join, which its planner can run from either
            # side (NOT IN a subquery too large to hash is re-run for every event).
            found = select(T.id).where(T.event_id == E.id, exact).exists()
            return not_(found) if negated else found
        texts = select(T.event_id).where(exact)
        if not self.pg and op != "matches" and len(v) >= TRIGRAM and "\x00" not in v:
            phrase = '"' + v.replace('"', '""') + '"'
            match = literal_column(TEXT_FTS).op("MATCH")(f"{spec.column} : {phrase}")
            texts = texts.where(T.id.in_(select(_FTS.c.rowid).where(match)))
        member = E.id.in_(texts)
        return not_(member) if negated else member

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
    try:
        return compare(col, op, value)
    except ValueError as exc:
        raise bad_search(str(exc)) from None


def _check_pattern(spec: FieldSpec, pattern: str) -> None:
    problem = regex_problem(pattern)
    if problem:
        raise bad_search(f"invalid regular expression for {spec.name!r}: {problem}")


def _string(spec: FieldSpec, op: str, value: Any) -> str:
    if not isinstance(value, str):
        raise bad_search(f"{spec.name!r} {op} takes a string value")
    return value


def _number(spec: FieldSpec, op: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_search(f"{spec.name!r} {op} takes a number value")
    if spec.type == "INT" and isinstance(value, float) and not value.is_integer():
        raise bad_search(f"{spec.name!r} {op} takes an integer value")
    if spec.type == "INT":
        # An integer column compares with a 64-bit integer: 1e30 is no count of anything.
        if not INT64_MIN <= value <= INT64_MAX:
            raise bad_search(f"{spec.name!r} {op} takes a 64-bit integer value")
        return int(value)
    return value


def _int(spec: FieldSpec, op: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise bad_search(f"{spec.name!r} {op} takes a non-negative 64-bit integer value")
    return value


def _list(spec: FieldSpec, op: str, value: Any) -> list[Any]:
    if not isinstance(value, list) or len(value) > 1000:
        raise bad_search(f"{spec.name!r} {op} takes an array of at most 1000 values")
    return value


def _timestamp(spec: FieldSpec, op: str, value: Any) -> datetime:
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError as exc:
            raise bad_search(f"{spec.name!r} {op}: {exc}") from None
        if parsed is not None:
            return parsed
    raise bad_search(f"{spec.name!r} {op} takes an ISO 8601 datetime string")
