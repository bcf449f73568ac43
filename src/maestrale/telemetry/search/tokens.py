"""The search expression language's tokens: names, keywords, quoted strings and names,
numbers (64-bit integers, finite floats), comparison operators and punctuation, each with its
1-based position in the expression."""

from __future__ import annotations

import math
from dataclasses import dataclass

from maestrale.core.validation import INT64_MAX, INT64_MIN
from maestrale.telemetry.search.errors import PARSE_ERROR, SearchError

Value = str | int | float | bool

KEYWORDS = frozenset(
    {"AND", "OR", "NOT", "LIKE", "ILIKE", "CONTAINS", "REGEXP", "IN", "BETWEEN", "EXISTS"}
    | {"IS", "NULL", "TRUE", "FALSE"}
)
COMPARISONS = {"=": "eq", "!=": "neq", "<>": "neq", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}
MATCHES = {"LIKE": "like", "ILIKE": "ilike", "CONTAINS": "contains", "REGEXP": "regexp"}
_PUNCTUATION = "()[],."


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # name, keyword, string, quoted_name, number, op, punct, end
    text: str  # the keyword upper-cased, a string's value, an operator, the name
    position: int  # 1-based
    value: Value | None = None


def syntax_error(message: str, position: int) -> SearchError:
    return SearchError(f"{message} (at position {position})", PARSE_ERROR)


def _quoted(source: str, start: int, quote: str) -> tuple[str, int]:
    """The text of the quoted run starting at `start` (a doubled quote is one) and the index
    past its closing quote."""
    parts: list[str] = []
    i = start + 1
    while True:
        end = source.find(quote, i)
        if end < 0:
            what = "string" if quote == "'" else "quoted name"
            raise syntax_error(f"unterminated {what}", start + 1)
        parts.append(source[i:end])
        if source.startswith(quote * 2, end):
            parts.append(quote)
            i = end + 2
            continue
        return "".join(parts), end + 1


def _number(source: str, start: int) -> tuple[Token, int]:
    i = start + 1 if source[start] == "-" else start
    digits = i
    while i < len(source) and source[i].isascii() and source[i].isdigit():
        i += 1
    is_float = False
    if i < len(source) and source[i] == ".":
        is_float = True
        i += 1
        while i < len(source) and source[i].isascii() and source[i].isdigit():
            i += 1
    if i < len(source) and source[i] in "eE":
        is_float = True
        i += 1
        if i < len(source) and source[i] in "+-":
            i += 1
        exponent = i
        while i < len(source) and source[i].isascii() and source[i].isdigit():
            i += 1
        if i == exponent:
            raise syntax_error("malformed number", start + 1)
    text = source[start:i]
    if i == digits or text in ("-", ".", "-."):
        raise syntax_error("malformed number", start + 1)
    if i < len(source) and (source[i].isalnum() or source[i] == "_"):
        raise syntax_error(f"malformed number {source[start : i + 1]!r}", start + 1)
    value: int | float
    if is_float:
        value = float(text)
        if not math.isfinite(value):
            raise syntax_error(f"number {text} is out of range", start + 1)
    else:
        if len(text) > 21:  # far past 64 bits: refuse before converting
            raise syntax_error(f"integer {text[:24]}... is past 64 bits", start + 1)
        value = int(text)
        if not INT64_MIN <= value <= INT64_MAX:
            raise syntax_error(f"integer {text} is past 64 bits", start + 1)
    return Token("number", text, start + 1, value), i


def tokenize(source: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c.isspace():
            i += 1
        elif c == "'":
            text, i2 = _quoted(source, i, "'")
            tokens.append(Token("string", text, i + 1, text))
            i = i2
        elif c == "`":
            text, i2 = _quoted(source, i, "`")
            tokens.append(Token("quoted_name", text, i + 1))
            i = i2
        elif c in _PUNCTUATION and not (c == "." and i + 1 < n and source[i + 1].isdigit()):
            tokens.append(Token("punct", c, i + 1))
            i += 1
        elif c in "=!<>":
            two = source[i : i + 2]
            op = two if two in COMPARISONS else c
            if op not in COMPARISONS:
                raise syntax_error(f"unexpected character {c!r}", i + 1)
            tokens.append(Token("op", op, i + 1))
            i += len(op)
        elif c.isascii() and (c.isdigit() or c in "-."):
            token, i = _number(source, i)
            tokens.append(token)
        elif c.isascii() and (c.isalpha() or c == "_"):
            start = i
            while i < n and source[i].isascii() and (source[i].isalnum() or source[i] == "_"):
                i += 1
            word = source[start:i]
            if word.upper() in KEYWORDS:
                tokens.append(Token("keyword", word.upper(), start + 1, word))
            else:
                tokens.append(Token("name", word, start + 1))
        else:
            raise syntax_error(f"unexpected character {c!r}", i + 1)
    tokens.append(Token("end", "", n + 1))
    return tokens
