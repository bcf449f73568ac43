"""The search filter: every node type evaluated on a chunk's fields (system, custom, metadata,
document), datetimes compared as datetimes, and the bounds of a filter (400 past them)."""

from __future__ import annotations

from typing import Any

import pytest

from maestrale.search_indexes.errors import InvalidRetriever
from maestrale.search_indexes.retrieval import filters
from maestrale.search_indexes.retrieval.chunks import ContextChunk

CHUNK = ContextChunk(
    7,
    "doc-1",
    0,
    10,
    "some text",
    {
        "locator": "page=1",
        "chunk_type": "table",
        "parent_ref": None,
        "metadata": {"page": 3, "tags": ["a", "b"]},
        "fields": {"lang": "en", "score": 0.5},
    },
    {"year": 2021, "published": "2024-03-01T12:00:00Z", "lang": "shadowed"},
)


def passes(raw: dict[str, Any]) -> bool:
    parsed = filters.parse(raw)
    assert parsed is not None
    return filters.matches(parsed, CHUNK.lookup)


def eq(field: str, value: Any) -> dict[str, Any]:
    return {"type": "equal", "field": field, "value": value}


def test_every_node_type_on_every_kind_of_field() -> None:
    assert passes(eq("id", "7")) and passes(eq("source_id", "doc-1"))
    assert passes(eq("chunk_type", "table")) and passes(eq("locator", "page=1"))
    assert not passes(eq("parent_ref", "x"))  # None matches nothing
    assert passes(eq("lang", "en"))  # the chunk's field before the document's
    assert passes(eq("metadata.page", 3)) and passes(eq("metadata.page", 3.0))
    assert not passes(eq("metadata.page", "3"))  # kinds never mix
    assert passes(eq("metadata.tags", "b"))  # a list matches by any element
    assert passes(eq("year", 2021)) and not passes(eq("missing", 1))
    assert passes({"type": "in", "field": "year", "values": [1999, 2021]})
    assert not passes({"type": "in", "field": "year", "values": []})
    assert passes({"type": "range", "field": "score", "gt": 0.4, "lte": 0.5})
    assert not passes({"type": "range", "field": "score", "lt": 0.5})
    # Datetimes: an ISO string on either side, any offset, naive ones taken as UTC.
    assert passes({"type": "range", "field": "published", "gte": "2024-03-01T13:00:00+01:00"})
    assert not passes({"type": "range", "field": "published", "gt": "2024-03-01T12:00:00"})
    assert passes(eq("published", "2024-03-01T14:00:00+02:00"))
    assert not passes({"type": "range", "field": "lang", "gt": 1})  # a string is not ordered
    a, b = eq("lang", "en"), eq("year", 1999)
    assert not passes({"type": "and", "matches": [a, b]})
    assert passes({"type": "or", "matches": [a, b]})
    assert passes({"type": "not", "match": b}) and passes({"type": "not", "match": eq("x", 1)})


def nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = eq("year", 2021)
    for _ in range(depth - 1):
        node = {"type": "and", "matches": [node]}
    return node


@pytest.mark.parametrize(
    "raw",
    [
        nested(filters.MAX_DEPTH + 1),
        {"type": "or", "matches": [eq("year", i) for i in range(filters.MAX_NODES)]},
        {"type": "in", "field": "year", "values": list(range(filters.MAX_IN_VALUES + 1))},
        {"type": "range", "field": "year"},
        {"type": "range", "field": "year", "gt": "not a date"},
        {"type": "and", "matches": []},
        {"type": "equal", "field": "", "value": 1},
        {"type": "equal", "field": "year", "value": {"a": 1}},
        {"type": "like", "field": "year", "value": 1},
        ["not", "an object"],
    ],
)
def test_malformed_or_oversized_filters_are_refused(raw: Any) -> None:
    with pytest.raises(InvalidRetriever):
        filters.parse(raw)


def test_the_bounds_themselves_are_accepted() -> None:
    assert passes(nested(filters.MAX_DEPTH))
    values = [*range(filters.MAX_IN_VALUES - 1), 2021]
    assert passes({"type": "in", "field": "year", "values": values})
