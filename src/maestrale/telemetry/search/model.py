"""What a searchable entity is: its table, its time column and its fields. The compiler
(`compile.py`) turns a search expression into a WHERE clause over these fields; the fields and
options routes describe them (the SDK's OtelFieldDefinition)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement

# The SDK's OtelFieldDefinition.type.
FIELD_TYPES = ("ENUM", "TEXT", "INT", "FLOAT", "BOOL", "TIMESTAMP", "ARRAY", "MAP")
# The SDK's SupportedOperator (the expression language's operators map onto these).
OPERATORS = (
    "eq",
    "neq",
    "lt",
    "lte",
    "gt",
    "gte",
    "like",
    "ilike",
    "not_like",
    "not_ilike",
    "between",
    "not_between",
    "in",
    "not_in",
    "exists",
    "not_exists",
    "contains",
    "not_contains",
    "regexp",
    "not_regexp",
)
# The SDK's MetricAggregation.
AGGREGATIONS = ("count", "count_distinct", "sum", "avg", "min", "max", "p50", "p90", "p95", "p99")


@dataclass(frozen=True, slots=True)
class Field:
    """A searchable field. `column` is the SQL expression the field reads (a table column, or a
    JSON attribute extraction for a MAP field's key); `source_attribute_key` names the
    OpenTelemetry attribute a column was copied from at ingestion, when it was."""

    name: str
    label: str
    type: str  # one of FIELD_TYPES
    column: ColumnElement[Any]
    operators: tuple[str, ...]
    aggregations: tuple[str, ...] = ()
    group: str | None = None
    source_attribute_key: str | None = None


@dataclass(frozen=True, slots=True)
class Entity:
    """A searchable kind of record: traces, spans, logs or span evaluations. `workspace` and
    `time` are the columns every query is scoped by (time in nanoseconds since the epoch);
    `maps` are the MAP fields whose keys an expression may name as `<map>.<key>` or
    `<map>['<key>']` (span_attributes, resource_attributes, log_attributes…), each a JSON
    column; `text` are the columns a bare quoted string searches (full text)."""

    name: str
    table: Any
    workspace: ColumnElement[Any]
    time: ColumnElement[Any]
    fields: dict[str, Field]
    maps: dict[str, ColumnElement[Any]] = field(default_factory=dict)
    text: tuple[ColumnElement[Any], ...] = ()
