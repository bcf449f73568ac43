"""A search expression → a WHERE clause over an entity's fields, for SQLite and Postgres.

Values are bound parameters. TEXT and ENUM fields take strings: `LIKE` is case-sensitive and
`ILIKE` not (`%`, `_`, and `\\` escaping the next character), `CONTAINS` is a case-insensitive
substring, `REGEXP` an RE2 expression (linear time on SQLite; Postgres' `~` runs under the
statement timeout). TIMESTAMP fields take ISO 8601 strings (or integers of nanoseconds since the
epoch) and compare in nanoseconds. ARRAY fields (models_used…) take strings: `CONTAINS 'x'` and
`IN ('x', 'y')` mean an element equals one of them. A MAP key (`span_attributes['k']`) compares
as the type of the value given: a string with the key's value as text (numbers and booleans as
JSON writes them), a number with a numeric value, TRUE/FALSE with a boolean. A bare quoted
string, or the `text` pseudo-field, searches the entity's text columns.

Negations (`!=`, NOT LIKE, NOT IN, NOT …) hold for records where the value is absent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Boolean, ColumnElement, and_, false, func, literal, not_, or_, select, true

from maestrale.core.validation import INT64_MAX, INT64_MIN
from maestrale.telemetry.search.errors import SearchError
from maestrale.telemetry.search.expression import (
    And,
    Condition,
    FullText,
    Node,
    Not,
    Or,
    parse_field,
)
from maestrale.telemetry.search.expression import parse as parse_expression
from maestrale.telemetry.search.fields import OPERATORS_BY_TYPE, TEXT_MATCH
from maestrale.telemetry.search.jsonvalue import (
    check_key,
    json_bool,
    json_number,
    json_present,
    json_scalar,
)
from maestrale.telemetry.search.model import Entity, Field
from maestrale.telemetry.search.sqlops import compare, parse_datetime, regex_problem
from maestrale.telemetry.search.tokens import Value

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TEXT_FIELD = "text"  # the full-text pseudo-field, unless an entity has a field of that name
_SHOWN = {"eq": "=", "neq": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_NEGATED = {
    "neq": "eq",
    "not_in": "in",
    "not_between": "between",
    "not_like": "like",
    "not_ilike": "ilike",
    "not_contains": "contains",
    "not_regexp": "regexp",
}


def where(entity: Entity, expression: str | None, dialect: str) -> ColumnElement[bool]:
    """The WHERE clause of `expression` over `entity` (TRUE for an empty one). It does not scope
    by workspace or time: the caller adds `entity.workspace == …` and its time range."""
    node = parse_expression(expression)
    if node is None:
        return true()
    return _Compiler(entity, dialect).node(node)


def resolve_field(entity: Entity, reference: str) -> Field:
    """The field a name designates: one of the entity's, or a key of one of its maps
    (`span_attributes['gen_ai.system']`, read as text); SearchError for another name."""
    name, key = parse_field(reference)
    if key is None:
        field = entity.fields.get(name)
        if field is None:
            raise SearchError(
                f"unknown field {name!r}: see GET /v1/observability/{entity.name}/fields"
            )
        return field
    col = entity.maps.get(name)
    if col is None:
        raise SearchError(f"{name!r} is not a map field of {entity.name}")
    problem = check_key(key)
    if problem:
        raise SearchError(problem)
    return Field(
        name=reference,
        label=key,
        type="TEXT",
        column=json_scalar(col, key),
        operators=OPERATORS_BY_TYPE["MAP"],
        aggregations=("count", "count_distinct"),
        group=name,
        source_attribute_key=key,
    )


def shown(op: str) -> str:
    """An operator as the language writes it (`not_like` → NOT LIKE)."""
    return _SHOWN.get(op) or op.upper().replace("_", " ")


def negate(condition: ColumnElement[bool]) -> ColumnElement[bool]:
    """NOT condition, true where the condition is NULL (a value absent)."""
    return not_(func.coalesce(condition, false(), type_=Boolean()))


class _Compiler:
    def __init__(self, entity: Entity, dialect: str) -> None:
        self.entity = entity
        self.pg = dialect == "postgresql"

    def node(self, node: Node) -> ColumnElement[bool]:
        if isinstance(node, And):
            return and_(*(self.node(c) for c in node.children))
        if isinstance(node, Or):
            return or_(*(self.node(c) for c in node.children))
        if isinstance(node, Not):
            return negate(self.node(node.child))
        if isinstance(node, FullText):
            return self.full_text("contains", (node.text,), node.position)
        return self.condition(node)

    # -- conditions ----------------------------------------------------------------------
    def condition(self, c: Condition) -> ColumnElement[bool]:
        if c.key is not None:
            return self.map_key(c)
        field = self.entity.fields.get(c.field)
        if field is None:
            if c.field == TEXT_FIELD:
                return self.full_text(c.op, c.values, c.position)
            raise SearchError(
                f"unknown field {c.field!r} at position {c.position}: see GET "
                f"/v1/observability/{self.entity.name}/fields"
            )
        self.check_operator(field.name, field.operators, c)
        if c.op in ("exists", "not_exists"):
            present = self.exists(field)
            return present if c.op == "exists" else not_(present)
        if field.type == "ARRAY":
            return self.array(field.column, c)
        if field.type == "MAP":
            raise SearchError(
                f"{field.name!r} is a map: name one of its keys, as {field.name}['key'] "
                f"(at position {c.position})"
            )
        values = tuple(self.value(field.name, field.type, v, c) for v in c.values)
        return self.scalar(field.column, c, values)

    def check_operator(self, name: str, operators: tuple[str, ...], c: Condition) -> None:
        if c.op not in operators:
            supported = ", ".join(shown(op) for op in operators)
            raise SearchError(
                f"{name!r} does not support {shown(c.op)} (at position {c.position}); it "
                f"supports {supported}"
            )

    def scalar(self, col: Any, c: Condition, values: tuple[Any, ...]) -> ColumnElement[bool]:
        positive = _NEGATED.get(c.op)
        if positive is not None:
            return negate(self.scalar(col, _with_op(c, positive), values))
        op = c.op
        if op in _SHOWN:
            return compare(col, op, values[0])
        if op == "in":
            member: ColumnElement[bool] = col.in_(values)
            return member
        if op == "between":
            between: ColumnElement[bool] = col.between(values[0], values[1])
            return between
        text = _string(values[0], c)
        if op == "contains":
            if not text:
                return true()
            contains: ColumnElement[bool] = col.icontains(text, autoescape=True)
            return contains
        if op == "regexp":
            problem = regex_problem(text)
            if problem:
                raise SearchError(f"invalid regular expression at position {c.position}: {problem}")
            match: ColumnElement[bool] = col.regexp_match(text)
            return match
        like = _like_pattern(text, c)
        if op == "ilike":
            ilike: ColumnElement[bool] = col.ilike(like, escape="/")
            return ilike
        if self.pg:
            return col.like(like, escape="/")  # type: ignore[no-any-return]
        # SQLite's LIKE ignores case: GLOB is its case-sensitive match.
        return col.op("GLOB", is_comparison=True)(_glob_pattern(text, c))  # type: ignore[no-any-return]

    def value(self, name: str, type_: str, value: Value, c: Condition) -> Any:
        """A value of the field's type (a TIMESTAMP as nanoseconds since the epoch)."""
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if type_ in ("TEXT", "ENUM") and isinstance(value, str):
            return value
        if type_ == "INT" and number:
            return value
        if type_ == "FLOAT" and number:
            return value
        if type_ == "BOOL" and isinstance(value, bool):
            return value
        if type_ == "TIMESTAMP":
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str):
                try:
                    parsed = parse_datetime(value)
                except ValueError as exc:
                    raise SearchError(f"{name!r}: {exc} (at position {c.position})") from None
                if parsed is not None:
                    return _check_int64((parsed - _EPOCH) // _MICROSECOND * 1000, c)
        expected = {
            "TEXT": "a quoted string",
            "ENUM": "a quoted string",
            "INT": "a number",
            "FLOAT": "a number",
            "BOOL": "TRUE or FALSE",
            "TIMESTAMP": "an ISO 8601 datetime string (or nanoseconds since the epoch)",
        }.get(type_, "a value")
        raise SearchError(
            f"{name!r} {shown(c.op)} takes {expected}, not {value!r} (at position {c.position})"
        )

    def exists(self, field: Field) -> ColumnElement[bool]:
        col: Any = field.column
        if field.type in ("TEXT", "ENUM"):
            present: ColumnElement[bool] = func.coalesce(col, "") != ""
            return present
        if field.type == "ARRAY":
            return self.members(col, None)
        if field.type == "MAP":
            keys = func.jsonb_object_keys(col) if self.pg else func.json_each(col)
            return select(literal(1)).select_from(keys.table_valued("key")).exists()
        return col.isnot(None)  # type: ignore[no-any-return]

    # -- arrays --------------------------------------------------------------------------
    def array(self, col: Any, c: Condition) -> ColumnElement[bool]:
        values = [_string(v, c) for v in c.values]
        member = self.members(col, values)
        return member if c.op in ("contains", "in") else not_(member)

    def members(self, col: Any, values: list[str] | None) -> ColumnElement[bool]:
        """Whether the JSON array has an element among `values` (any element when None)."""
        if self.pg:
            each = func.jsonb_array_elements_text(col).table_valued("value").render_derived()
        else:
            each = func.json_each(col).table_valued("value")
        query = select(literal(1)).select_from(each)
        if values is not None:
            query = query.where(each.c.value.in_(values))
        return query.exists()

    # -- map keys ------------------------------------------------------------------------
    def map_key(self, c: Condition) -> ColumnElement[bool]:
        col = self.entity.maps.get(c.field)
        name = f"{c.field}[{c.key!r}]"
        if col is None:
            maps = ", ".join(self.entity.maps) or "none"
            raise SearchError(
                f"{c.field!r} is not a map field of {self.entity.name} (at position "
                f"{c.position}); its maps: {maps}"
            )
        assert c.key is not None
        problem = check_key(c.key)
        if problem:
            raise SearchError(f"{problem} (at position {c.position})")
        self.check_operator(name, OPERATORS_BY_TYPE["MAP"], c)
        if c.op in ("exists", "not_exists"):
            present = json_present(col, c.key)
            return present if c.op == "exists" else not_(present)
        kinds = {_kind(v) for v in c.values}
        if len(kinds) != 1:
            raise SearchError(
                f"{name} {shown(c.op)} takes values of one type (at position {c.position})"
            )
        kind = kinds.pop()
        if kind == "string":
            return self.scalar(json_scalar(col, c.key), c, c.values)
        base = _NEGATED.get(c.op, c.op)
        if base in TEXT_MATCH:
            raise SearchError(
                f"{name} {shown(c.op)} takes a quoted string (at position {c.position})"
            )
        if kind == "bool":
            if base != "eq":
                raise SearchError(
                    f"{name} {shown(c.op)} does not take TRUE or FALSE (at position {c.position})"
                )
            return self.scalar(json_bool(col, c.key), c, c.values)
        return self.scalar(json_number(col, c.key), c, c.values)

    # -- full text -----------------------------------------------------------------------
    def full_text(self, op: str, values: tuple[Value, ...], position: int) -> ColumnElement[bool]:
        columns = self.entity.text
        if not columns:
            raise SearchError(f"{self.entity.name} have no text to search (at position {position})")
        c = Condition(TEXT_FIELD, None, op, values, position)
        self.check_operator(TEXT_FIELD, TEXT_MATCH, c)
        positive = _NEGATED.get(op)
        if positive is not None:
            return negate(self.full_text(positive, values, position))
        return or_(*(self.scalar(col, c, values) for col in columns))


_MICROSECOND = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH


def _with_op(c: Condition, op: str) -> Condition:
    return Condition(c.field, c.key, op, c.values, c.position)


def _kind(value: Value) -> str:
    if isinstance(value, bool):
        return "bool"
    return "string" if isinstance(value, str) else "number"


def _string(value: Any, c: Condition) -> str:
    if not isinstance(value, str):
        raise SearchError(f"{shown(c.op)} takes a quoted string (at position {c.position})")
    return value


def _unescape(pattern: str, c: Condition) -> list[tuple[str, bool]]:
    """The pattern's characters, each with whether it is a wildcard (`%`, `_`)."""
    chars: list[tuple[str, bool]] = []
    escaped = False
    for ch in pattern:
        if escaped:
            chars.append((ch, False))
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            chars.append((ch, ch in "%_"))
    if escaped:
        raise SearchError(f"a LIKE pattern ends with a lone backslash (at position {c.position})")
    return chars


def _like_pattern(pattern: str, c: Condition) -> str:
    """The pattern with `/` as its escape character (the same on both databases)."""
    return "".join(
        ch if wild else ("/" + ch if ch in "%_/" else ch) for ch, wild in _unescape(pattern, c)
    )


def _glob_pattern(pattern: str, c: Condition) -> str:
    out = []
    for ch, wild in _unescape(pattern, c):
        if wild:
            out.append("*" if ch == "%" else "?")
        else:
            out.append(f"[{ch}]" if ch in "*?[" else ch)
    return "".join(out)


def _check_int64(value: int, c: Condition) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise SearchError(f"integer past 64 bits (at position {c.position})")
    return value
