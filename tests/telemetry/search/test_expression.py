"""The search expression parser, without a database: what each form parses to, and a 400
naming the position for each class of refusal."""

from __future__ import annotations

import pytest

from maestrale.telemetry.search.errors import PARSE_ERROR, SearchError
from maestrale.telemetry.search.expression import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_LENGTH,
    And,
    Condition,
    FullText,
    Node,
    Not,
    Or,
    parse,
    parse_field,
)


def c(field: str, op: str, *values: object, key: str | None = None, at: int = 1) -> Condition:
    return Condition(field, key, op, values, at)  # type: ignore[arg-type]


VALID: list[tuple[str, Node]] = [
    ("service_name = 'api'", c("service_name", "eq", "api")),
    ("duration_ns>=5", c("duration_ns", "gte", 5)),
    ("a <> 'x''y'", c("a", "neq", "x'y")),
    ("a != -1.5e3", c("a", "neq", -1500.0)),
    ("a like 'x%' ", c("a", "like", "x%")),
    ("a NOT ILIKE '%x'", c("a", "not_ilike", "%x")),
    ("a CONTAINS 'x'", c("a", "contains", "x")),
    ("a NOT REGEXP '^x'", c("a", "not_regexp", "^x")),
    ("a IN ('x', 'y')", c("a", "in", "x", "y")),
    ("a NOT IN (1)", c("a", "not_in", 1)),
    ("a BETWEEN 1 AND 2", c("a", "between", 1, 2)),
    ("a NOT BETWEEN 1 AND 2", c("a", "not_between", 1, 2)),
    ("a EXISTS", c("a", "exists")),
    ("a NOT EXISTS", c("a", "not_exists")),
    ("a IS NULL", c("a", "not_exists")),
    ("a IS NOT NULL", c("a", "exists")),
    ("EXISTS(a)", c("a", "exists", at=8)),
    ("NOT EXISTS a", c("a", "not_exists", at=12)),
    ("ok = TRUE", c("ok", "eq", True)),
    ("m['gen_ai.request.model'] = 'x'", c("m", "eq", "x", key="gen_ai.request.model")),
    ("m.`gen_ai.x` = 'x'", c("m", "eq", "x", key="gen_ai.x")),
    ("m.gen_ai.in.x EXISTS", c("m", "exists", key="gen_ai.in.x")),
    ("'some text'", FullText("some text", 1)),
    (
        "a = 1 AND b = 2 OR NOT (c = 3 OR d = 4)",
        Or(
            (
                And((c("a", "eq", 1), c("b", "eq", 2, at=11))),
                Not(Or((c("c", "eq", 3, at=25), c("d", "eq", 4, at=34)))),
            )
        ),
    ),
]


@pytest.mark.parametrize(("source", "tree"), VALID)
def test_valid_expressions_parse(source: str, tree: Node) -> None:
    assert parse(source) == tree


def test_an_empty_expression_is_no_condition() -> None:
    assert parse(None) is None
    assert parse("  ") is None


INVALID = [
    ("a =", "expected a value", 4),
    ("a = 'x", "unterminated string", 5),
    ("(a = 1", "expected ')'", 7),
    ("a = 1 b = 2", "expected AND, OR", 7),
    ("a ~ 1", "unexpected character '~'", 3),
    ("a IN ()", "expected a value", 7),
    ("a BETWEEN 1 OR 2", "AND between the bounds", 13),
    ("a NOT = 1", "after NOT", 7),
    ("a = 9223372036854775808", "past 64 bits", 5),
    ("a = -9223372036854775809", "past 64 bits", 5),
    ("a = 1" + "0" * 400, "past 64 bits", 5),
    ("a = 1e999", "out of range", 5),
    ("a = 12abc", "malformed number", 5),
    ("a = '\ud800'", "lone UTF-16 surrogate", 6),
    ("a = '\x00'", "NUL", 6),
    ("m[1] = 'x'", "quoted map key", 3),
    ("a = 1 AND", "expected a condition", 10),
    ("AND", "expected a condition", 1),
]


@pytest.mark.parametrize(("source", "message", "position"), INVALID)
def test_syntax_errors_name_their_position(source: str, message: str, position: int) -> None:
    with pytest.raises(SearchError) as caught:
        parse(source)
    assert caught.value.status_code == 400
    assert caught.value.error_code == PARSE_ERROR
    assert message in caught.value.message
    assert f"(at position {position})" in caught.value.message


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("a = 'x' OR " * 5000 + "a = 1", f"at most {MAX_LENGTH} characters"),
        ("(" * (MAX_DEPTH + 2) + "a = 1" + ")" * (MAX_DEPTH + 2), "nested deeper"),
        ("NOT " * (MAX_DEPTH + 2) + "a = 1", "nested deeper"),
        (" AND ".join(["a = 1"] * (MAX_CONDITIONS + 1)), f"at most {MAX_CONDITIONS} conditions"),
        ("a IN (" + ",".join(["1"] * 1001) + ")", "at most 1000 values"),
    ],
)
def test_limits(source: str, message: str) -> None:
    with pytest.raises(SearchError, match=message):
        parse(source)


def test_field_references() -> None:
    assert parse_field("duration_ns") == ("duration_ns", None)
    assert parse_field("span_attributes['a.b']") == ("span_attributes", "a.b")
    with pytest.raises(SearchError, match="end of the field name"):
        parse_field("a b")
