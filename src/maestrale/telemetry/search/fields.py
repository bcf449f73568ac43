"""Building an entity's fields: the operators and aggregations of each field type, and builders
for a table column, an attribute copied into a JSON map (read by key) and a MAP field. Another
package builds an Entity for its own table with these (the span evaluations of observability)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement

from maestrale.telemetry.search.jsonvalue import json_array, json_bool, json_number, json_scalar
from maestrale.telemetry.search.model import Entity, Field

EXISTENCE = ("exists", "not_exists")
EQUALITY = ("eq", "neq", "in", "not_in")
ORDER = ("lt", "lte", "gt", "gte", "between", "not_between")
TEXT_MATCH = (
    "like",
    "ilike",
    "not_like",
    "not_ilike",
    "contains",
    "not_contains",
    "regexp",
    "not_regexp",
)
OPERATORS_BY_TYPE: dict[str, tuple[str, ...]] = {
    "ENUM": (*EQUALITY, *EXISTENCE),
    "TEXT": (*EQUALITY, *TEXT_MATCH, *EXISTENCE),
    "INT": (*EQUALITY, *ORDER, *EXISTENCE),
    "FLOAT": (*EQUALITY, *ORDER, *EXISTENCE),
    "BOOL": ("eq", "neq", *EXISTENCE),
    "TIMESTAMP": ("eq", "neq", *ORDER, *EXISTENCE),
    "ARRAY": ("contains", "not_contains", "in", "not_in", *EXISTENCE),
    # A map's values (`span_attributes['k']`) are strings, numbers or booleans.
    "MAP": (*EQUALITY, *ORDER, *TEXT_MATCH, *EXISTENCE),
}
_NUMERIC = ("count", "count_distinct", "sum", "avg", "min", "max", "p50", "p90", "p95", "p99")
AGGREGATIONS_BY_TYPE: dict[str, tuple[str, ...]] = {
    "ENUM": ("count", "count_distinct"),
    "TEXT": ("count", "count_distinct"),
    "INT": _NUMERIC,
    "FLOAT": _NUMERIC,
    "BOOL": ("count", "count_distinct"),
    "TIMESTAMP": ("count", "count_distinct", "min", "max"),
    "ARRAY": ("count",),
    "MAP": ("count",),
}
# Fields of long text (messages, tool payloads, log bodies): searchable, but their distinct
# values are no list to offer (no options).
LONG_TEXT = frozenset(
    {
        "first_turn_last_input_message",
        "first_turn_last_output_message",
        "last_turn_last_input_message",
        "last_turn_last_output_message",
        "input_messages",
        "output_messages",
        "system_instructions",
        "tool_definitions",
        "tool_call_arguments",
        "tool_call_result",
        "status_message",
        "agent_description",
        "body",
        "trace_state",
    }
)
# How an attribute copied into a JSON map is read, by the field's type.
_READERS: dict[str, Any] = {
    # A text field reads any value as text (a structured one as JSON, as GetSpan shows it).
    "TEXT": json_scalar,
    "ENUM": json_scalar,
    "INT": json_number,
    "FLOAT": json_number,
    "BOOL": json_bool,
    "ARRAY": json_array,
}


def column_field(
    name: str,
    label: str,
    type_: str,
    column: Any,
    *,
    group: str | None = None,
    source: str | None = None,
    operators: tuple[str, ...] | None = None,
) -> Field:
    """A field read from a column (for a TIMESTAMP, a column of nanoseconds since the epoch;
    for an ARRAY, a JSON array column)."""
    return Field(
        name=name,
        label=label,
        type=type_,
        column=column,
        operators=OPERATORS_BY_TYPE[type_] if operators is None else operators,
        aggregations=AGGREGATIONS_BY_TYPE[type_],
        group=group,
        source_attribute_key=source,
    )


def attribute_field(
    name: str, label: str, type_: str, attributes: Any, key: str, *, group: str | None = None
) -> Field:
    """A field read from one key of a JSON attributes column (NULL when absent or of another
    JSON type)."""
    column: ColumnElement[Any] = _READERS[type_](attributes, key)
    return column_field(name, label, type_, column, group=group, source=key)


def map_field(name: str, label: str, column: Any, *, group: str | None = None) -> Field:
    """A MAP field: a JSON object column whose keys an expression names as `name['key']` or
    name.`key`."""
    return column_field(name, label, "MAP", column, group=group)


def build_entity(
    name: str,
    table: Any,
    *,
    workspace: Any,
    time: Any,
    fields: list[Field],
    text: tuple[Any, ...] = (),
) -> Entity:
    """An entity over `table`; its MAP fields are the maps an expression may name keys of."""
    by_name = {f.name: f for f in fields}
    if len(by_name) != len(fields):
        raise ValueError(f"duplicate field names in entity {name!r}")
    maps = {f.name: f.column for f in fields if f.type == "MAP"}
    return Entity(name, table, workspace, time, by_name, maps, text)


def has_options(field: Field) -> bool:
    """Whether the field's values make a list to offer (its options): ENUM and BOOL fields, and
    TEXT fields other than long text."""
    return field.type in ("ENUM", "BOOL") or (field.type == "TEXT" and field.name not in LONG_TEXT)


def definition(field: Field) -> dict[str, Any]:
    """The field as the SDK's OtelFieldDefinition."""
    return {
        "name": field.name,
        "label": field.label,
        "type": field.type,
        "supported_operators": list(field.operators),
        "supported_aggregations": list(field.aggregations),
        "group": field.group,
        "source_attribute_key": field.source_attribute_key,
    }
