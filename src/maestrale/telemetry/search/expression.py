"""The search expression language: a hand-written tokenizer and recursive-descent parser
turning an expression into a small node tree (`compile.py` turns the tree into SQL).

    expression := or
    or         := and ("OR" and)*
    and        := unary ("AND" unary)*
    unary      := "NOT" unary | "(" expression ")" | 'quoted text' | "EXISTS" field | condition
    condition  := field ( ("=" | "!=" | "<>" | "<" | "<=" | ">" | ">=") value
                        | ["NOT"] ("LIKE" | "ILIKE" | "CONTAINS" | "REGEXP") value
                        | ["NOT"] "IN" "(" value ("," value)* ")"
                        | ["NOT"] "BETWEEN" value "AND" value
                        | ["NOT"] "EXISTS" | "IS" ["NOT"] "NULL" )
    field      := name | map "[" 'key' "]" | map "." (name | `key`) ("." (name | `key`))*
    value      := 'string' | number | TRUE | FALSE

Keywords are case-insensitive, field names are not. Strings are single-quoted ('' is a quote);
a map key is `span_attributes['gen_ai.request.model']`, span_attributes.`gen_ai.request.model`
or span_attributes.gen_ai.request.model (the dotted rest is one key). A bare quoted string is a
full-text search. LIKE patterns take `%` and `_`, and `\\` escapes the next character.

Limits keep every expression cheap to parse and to run: its length, its nesting depth, its
number of conditions and of values in an IN list, and 64-bit integers; each refusal is a
SearchError naming the position (1-based, in characters)."""

from __future__ import annotations

from dataclasses import dataclass

from maestrale.telemetry.search.errors import SearchError
from maestrale.telemetry.search.tokens import (
    COMPARISONS,
    MATCHES,
    Token,
    Value,
    syntax_error,
    tokenize,
)

MAX_LENGTH = 10_000
MAX_DEPTH = 32
MAX_CONDITIONS = 200
MAX_IN_VALUES = 1000


@dataclass(frozen=True, slots=True)
class Condition:
    """`field op values`; `key` is the map key of a MAP field, `op` an SDK SupportedOperator."""

    field: str
    key: str | None
    op: str
    values: tuple[Value, ...]
    position: int


@dataclass(frozen=True, slots=True)
class FullText:
    text: str
    position: int


@dataclass(frozen=True, slots=True)
class Not:
    child: Node


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Node, ...]


Node = Condition | FullText | Not | And | Or


def _check_text(source: str) -> None:
    if len(source) > MAX_LENGTH:
        raise SearchError(f"a search expression has at most {MAX_LENGTH} characters")
    for i, c in enumerate(source):
        if "\ud800" <= c <= "\udfff":
            raise syntax_error("invalid character (a lone UTF-16 surrogate)", i + 1)
        if c == "\x00":
            raise syntax_error("invalid character (NUL)", i + 1)


def parse(source: str | None) -> Node | None:
    """The expression's tree, or None for an empty expression."""
    if source is None or not source.strip():
        return None
    _check_text(source)
    return _Parser(tokenize(source)).parse()


def parse_field(source: str) -> tuple[str, str | None]:
    """A field reference alone (`duration_ns`, `span_attributes['k']`): its name and map key."""
    if len(source) > MAX_LENGTH:
        raise SearchError(f"a field name has at most {MAX_LENGTH} characters")
    _check_text(source)
    parser = _Parser(tokenize(source))
    if not parser.at("name"):
        raise parser.unexpected("a field name")
    reference = parser.field()
    if not parser.at("end"):
        raise parser.unexpected("the end of the field name")
    return reference


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.conditions = 0

    # -- helpers -------------------------------------------------------------------------
    @property
    def token(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        token = self.tokens[self.i]
        if token.kind != "end":
            self.i += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        token = self.token
        return token.kind == kind and (text is None or token.text == text)

    def accept(self, kind: str, text: str | None = None) -> bool:
        if self.at(kind, text):
            self.next()
            return True
        return False

    def expect(self, kind: str, text: str, what: str) -> None:
        if not self.accept(kind, text):
            raise self.unexpected(what)

    def unexpected(self, what: str) -> SearchError:
        token = self.token
        found = "the end of the expression" if token.kind == "end" else repr(_shown(token))
        return syntax_error(f"expected {what}, found {found}", token.position)

    # -- grammar -------------------------------------------------------------------------
    def parse(self) -> Node:
        node = self.expression(0)
        if not self.at("end"):
            raise self.unexpected("AND, OR or the end of the expression")
        return node

    def expression(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise syntax_error(
                f"expression nested deeper than {MAX_DEPTH} levels", self.token.position
            )
        children = [self.conjunction(depth)]
        while self.accept("keyword", "OR"):
            children.append(self.conjunction(depth))
        return children[0] if len(children) == 1 else Or(tuple(children))

    def conjunction(self, depth: int) -> Node:
        children = [self.unary(depth)]
        while self.accept("keyword", "AND"):
            children.append(self.unary(depth))
        return children[0] if len(children) == 1 else And(tuple(children))

    def unary(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise syntax_error(
                f"expression nested deeper than {MAX_DEPTH} levels", self.token.position
            )
        token = self.token
        if self.accept("keyword", "NOT"):
            if self.at("keyword", "EXISTS"):
                return self.exists(negated=True)
            return Not(self.unary(depth + 1))
        if self.accept("punct", "("):
            node = self.expression(depth + 1)
            self.expect("punct", ")", "')'")
            return node
        if self.at("keyword", "EXISTS"):
            return self.exists(negated=False)
        if token.kind == "string":
            self.next()
            self.count(token)
            return FullText(token.text, token.position)
        if token.kind == "name":
            return self.condition()
        raise self.unexpected("a condition, a quoted text, NOT or '('")

    def exists(self, *, negated: bool) -> Condition:
        """`EXISTS field` and `EXISTS(field)`."""
        self.next()
        parenthesised = self.accept("punct", "(")
        start = self.token
        if start.kind != "name":
            raise self.unexpected("a field name after EXISTS")
        field, key = self.field()
        if parenthesised:
            self.expect("punct", ")", "')'")
        return self.make(field, key, "not_exists" if negated else "exists", (), start)

    def condition(self) -> Condition:
        start = self.token
        field, key = self.field()
        token = self.token
        if token.kind == "op":
            self.next()
            return self.make(field, key, COMPARISONS[token.text], (self.value(),), start)
        negated = self.accept("keyword", "NOT")
        prefix = "not_" if negated else ""
        token = self.token
        if token.kind == "keyword" and token.text in MATCHES:
            self.next()
            return self.make(field, key, prefix + MATCHES[token.text], (self.value(),), start)
        if self.accept("keyword", "IN"):
            return self.make(field, key, prefix + "in", self.value_list(), start)
        if self.accept("keyword", "BETWEEN"):
            low = self.value()
            self.expect("keyword", "AND", "AND between the bounds of BETWEEN")
            return self.make(field, key, prefix + "between", (low, self.value()), start)
        if self.accept("keyword", "EXISTS"):
            return self.make(field, key, prefix + "exists", (), start)
        if not negated and self.accept("keyword", "IS"):
            is_not = self.accept("keyword", "NOT")
            self.expect("keyword", "NULL", "NULL after IS" + (" NOT" if is_not else ""))
            return self.make(field, key, "exists" if is_not else "not_exists", (), start)
        what = "LIKE, ILIKE, CONTAINS, REGEXP, IN, BETWEEN or EXISTS after NOT"
        raise self.unexpected(what if negated else f"an operator after {_shown(start)!r}")

    def field(self) -> tuple[str, str | None]:
        name = self.next().text
        if self.accept("punct", "["):
            token = self.token
            if token.kind != "string":
                raise self.unexpected("a quoted map key after '['")
            self.next()
            self.expect("punct", "]", "']'")
            return name, token.text
        if not self.at("punct", "."):
            return name, None
        parts: list[str] = []
        while self.accept("punct", "."):
            token = self.token
            if token.kind not in ("name", "quoted_name", "keyword"):
                raise self.unexpected("a key name after '.'")
            self.next()
            parts.append(str(token.value) if token.kind == "keyword" else token.text)
        return name, ".".join(parts)

    def value(self) -> Value:
        token = self.token
        if token.kind in ("string", "number"):
            self.next()
            assert token.value is not None
            return token.value
        if token.kind == "keyword" and token.text in ("TRUE", "FALSE"):
            self.next()
            return token.text == "TRUE"
        raise self.unexpected("a value (a quoted string, a number, TRUE or FALSE)")

    def value_list(self) -> tuple[Value, ...]:
        self.expect("punct", "(", "'(' after IN")
        values = [self.value()]
        while self.accept("punct", ","):
            if len(values) >= MAX_IN_VALUES:
                raise syntax_error(
                    f"an IN list has at most {MAX_IN_VALUES} values", self.token.position
                )
            values.append(self.value())
        self.expect("punct", ")", "',' or ')' in the IN list")
        return tuple(values)

    def count(self, start: Token) -> None:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise syntax_error(f"a search has at most {MAX_CONDITIONS} conditions", start.position)

    def make(
        self, field: str, key: str | None, op: str, values: tuple[Value, ...], start: Token
    ) -> Condition:
        self.count(start)
        return Condition(field, key, op, values, start.position)


def _shown(token: Token) -> str:
    if token.kind == "string":
        return "'" + token.text.replace("'", "''")[:40] + "'"
    return token.text[:40]
