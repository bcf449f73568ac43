"""Search filters (the SDK's And/Or/Not/Equal/In/Range), parsed from the request with bounds,
then evaluated on each candidate chunk in Python.

A field names, first, a system field of the chunk (id, source_id, chunk_type, locator,
parent_ref), then one of its custom chunk fields, then a key of its metadata as
`metadata.<key>`, then a field of its document. A field the chunk does not have matches no
comparison (so `not` of one matches). A list value (an array field) matches when one of its
elements does. Datetimes (ISO 8601 strings in JSON) compare as datetimes, numbers as numbers,
strings as strings; values of different kinds are never equal nor ordered.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from maestrale.search_indexes.errors import InvalidRetriever

MAX_DEPTH = 16
MAX_NODES = 256
MAX_IN_VALUES = 1000
MAX_FIELD_CHARS = 256
MAX_STRING_CHARS = 10_000
SYSTEM_FIELDS = ("id", "source_id", "chunk_type", "locator", "parent_ref")
METADATA_PREFIX = "metadata."

# What a filter is evaluated on: the value of a field, or MISSING.
Lookup = Callable[[str], Any]
MISSING: Any = object()

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_RANGE_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}


@dataclass(frozen=True, slots=True)
class Filter:
    """A parsed filter node: `op` and its operands (`children` of and/or/not; `field` and
    `values` of equal/in; `field` and `bounds` ((op, value) pairs) of range)."""

    op: str
    children: tuple[Filter, ...] = ()
    field: str = ""
    values: tuple[Any, ...] = ()
    bounds: tuple[tuple[str, Any], ...] = ()


def parse(raw: Any, param: str = "retriever.filter") -> Filter | None:
    """The filter of a request (None when there is none); 400 for a malformed one or one past
    the bounds (depth, nodes, values of `in`)."""
    if raw is None:
        return None
    counter = [0]
    return _node(raw, 1, counter, param)


def both(first: Filter | None, second: Filter | None) -> Filter | None:
    """The conjunction of two optional filters."""
    if first is None or second is None:
        return first or second
    return Filter("and", (first, second))


def _bad(message: str, param: str) -> InvalidRetriever:
    return InvalidRetriever(message, param=param)


def _node(raw: Any, depth: int, counter: list[int], param: str) -> Filter:
    if depth > MAX_DEPTH:
        raise _bad(f"a filter nests at most {MAX_DEPTH} levels deep", param)
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise _bad(f"a filter has at most {MAX_NODES} nodes", param)
    if not isinstance(raw, Mapping):
        raise _bad("a filter node must be an object", param)
    kind = raw.get("type")
    if kind in ("and", "or"):
        matches = raw.get("matches")
        if not isinstance(matches, list) or not matches:
            raise _bad(f"`{kind}` needs a non-empty list `matches`", param)
        return Filter(kind, tuple(_node(m, depth + 1, counter, param) for m in matches))
    if kind == "not":
        return Filter("not", (_node(raw.get("match"), depth + 1, counter, param),))
    field = _field(raw.get("field"), param)
    if kind == "equal":
        return Filter("equal", field=field, values=(_scalar(raw.get("value"), param),))
    if kind == "in":
        values = raw.get("values")
        if not isinstance(values, list) or len(values) > MAX_IN_VALUES:
            raise _bad(f"`in` needs a list `values` of at most {MAX_IN_VALUES}", param)
        return Filter("in", field=field, values=tuple(_scalar(v, param) for v in values))
    if kind == "range":
        bounds = tuple(
            (name, _orderable(raw[name], param)) for name in _RANGE_OPS if raw.get(name) is not None
        )
        if not bounds:
            raise _bad("`range` needs at least one of gt, gte, lt, lte", param)
        return Filter("range", field=field, bounds=bounds)
    raise _bad(f"unknown filter type {str(kind)[:40]!r}", param)


def _field(value: Any, param: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_FIELD_CHARS:
        raise _bad(f"a filter's `field` must be a name of 1 to {MAX_FIELD_CHARS} chars", param)
    return value


def _scalar(value: Any, param: str) -> Any:
    if isinstance(value, bool | int | float) and not (
        isinstance(value, float) and not math.isfinite(value)
    ):
        return value
    if isinstance(value, str) and len(value) <= MAX_STRING_CHARS:
        return _as_datetime(value) or value
    raise _bad("a filter value must be a number, a string or a datetime", param)


def _orderable(value: Any, param: str) -> Any:
    found = _scalar(value, param)
    if isinstance(found, str | bool):
        raise _bad("a range bound must be a number or a datetime", param)
    return found


def _as_datetime(value: Any) -> datetime | None:
    """`value` as an aware datetime when it is one (naive ones taken as UTC), else None."""
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, str) and _DATE.match(value):
        try:
            found = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def matches(node: Filter, lookup: Lookup) -> bool:
    """Whether the chunk whose fields `lookup` gives passes `node`."""
    if node.op == "and":
        return all(matches(child, lookup) for child in node.children)
    if node.op == "or":
        return any(matches(child, lookup) for child in node.children)
    if node.op == "not":
        return not matches(node.children[0], lookup)
    found = lookup(node.field)
    if found is MISSING or found is None:
        return False
    items = found if isinstance(found, list) else [found]
    if node.op == "range":
        return any(_in_range(item, node.bounds) for item in items)
    return any(_equal(item, value) for item in items for value in node.values)


def _comparable(item: Any, value: Any) -> tuple[Any, Any] | None:
    """The two values in a kind both have (datetime, number, string, bool), or None."""
    if isinstance(value, datetime):
        other = _as_datetime(item)
        return (other, value) if other is not None else None
    if isinstance(value, bool) or isinstance(item, bool):
        return (item, value) if isinstance(value, bool) and isinstance(item, bool) else None
    if isinstance(value, int | float):
        return (item, value) if isinstance(item, int | float) else None
    return (item, value) if isinstance(item, str) else None


def _equal(item: Any, value: Any) -> bool:
    pair = _comparable(item, value)
    return pair is not None and pair[0] == pair[1]


def _in_range(item: Any, bounds: tuple[tuple[str, Any], ...]) -> bool:
    for op, bound in bounds:
        pair = _comparable(item, bound)
        if pair is None:
            return False
        if not _RANGE_OPS[op](*pair):
            return False
    return True
