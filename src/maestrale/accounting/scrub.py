"""Rows made storable: what the recorder writes instead of a row the database (or orjson)
refused."""

from __future__ import annotations

import math
from typing import Any

from maestrale.core.validation import INT64_MAX, INT64_MIN, MAX_JSON_DEPTH


def scrub_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row with every value made storable: NUL characters (which Postgres cannot store) and
    lone surrogates replaced, integers beyond 64 bits and numbers that are not finite written as
    text, JSON nested too deep cut at its limit."""
    return {key: _scrub(value, 0) for key, value in row.items()}


def _scrub(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if INT64_MIN <= value <= INT64_MAX else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        if depth >= MAX_JSON_DEPTH:
            return "[nested too deep]"
        return [_scrub(item, depth + 1) for item in value]
    if isinstance(value, dict):
        if depth >= MAX_JSON_DEPTH:
            return "{nested too deep}"
        return {_scrub_text(str(key)): _scrub(item, depth + 1) for key, item in value.items()}
    return value


def _scrub_text(text: str) -> str:
    text = text.replace("\x00", "\ufffd")
    if text.isascii():
        return text
    # Lone surrogates (from `\ud800` escapes) become U+FFFD; valid pairs are kept.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
