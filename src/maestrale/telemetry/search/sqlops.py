"""SQL building blocks shared by the search compilers (this package's expression language and
the chat completion events' filters of observability): comparisons, regular expressions that
run in linear time on both databases, ISO 8601 datetimes and case-sensitive substrings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, true

from maestrale.core.regex import PatternError, check_pattern

# Regular expressions run in linear time (RE2 on SQLite, Postgres' engine under the statement
# timeout); the length cap bounds the size of their programs and of the request.
MAX_PATTERN_LENGTH = 1000
COMPARISONS = ("eq", "neq", "lt", "lte", "gt", "gte")


def compare(col: Any, op: str, value: Any) -> ColumnElement[bool]:
    """`col <op> value` for one of COMPARISONS (ValueError for another operator)."""
    ops = {
        "eq": col.__eq__,
        "neq": col.__ne__,
        "lt": col.__lt__,
        "lte": col.__le__,
        "gt": col.__gt__,
        "gte": col.__ge__,
    }
    if op not in ops:
        raise ValueError(f"operator {op!r} does not apply to this value")
    result: ColumnElement[bool] = ops[op](value)
    return result


def regex_problem(pattern: str) -> str | None:
    """Why a regular expression cannot be searched with (None when it can)."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"a regular expression has at most {MAX_PATTERN_LENGTH} characters"
    try:
        check_pattern(pattern)
    except PatternError as exc:
        return f"{exc} (the syntax is RE2's: no backreferences or lookaround)"
    return None


def parse_datetime(value: str) -> datetime | None:
    """An ISO 8601 datetime in UTC (a naive one is taken as UTC); None when the text is not
    one; ValueError when it is past the last representable datetime."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00-05:00 is past the last datetime
        raise ValueError(f"{value!r} is out of range") from None


def substring(col: Any, value: str, dialect: str, where: str = "contains") -> ColumnElement[bool]:
    """Case-sensitive `startswith`, `endswith` or `contains` (LIKE is case-insensitive on
    SQLite, so substrings are compared there)."""
    if dialect == "postgresql":
        result: ColumnElement[bool] = getattr(col, where)(value, autoescape=True)
        return result
    if not value:
        return true()
    if where == "startswith":
        return func.substr(col, 1, len(value)) == value
    if where == "endswith":
        return func.substr(col, -len(value)) == value
    return func.instr(col, value) > 0
