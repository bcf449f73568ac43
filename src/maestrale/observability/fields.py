"""The searchable fields of chat completion events: the event's columns and its `extra_fields`
keys (named `extra_fields.<key>`), each with its type and the operators it supports."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from maestrale.observability.errors import ObservabilityError

ORDER = ("lt", "lte", "gt", "gte")
TEXT = (
    "startswith",
    "istartswith",
    "endswith",
    "iendswith",
    "contains",
    "icontains",
    "matches",
    "notcontains",
    "inotcontains",
)
EQUALITY = ("eq", "neq")
MEMBERSHIP = ("includes", "excludes")
ALL_OPERATORS = (*ORDER, *TEXT, *EQUALITY, "isnull", *MEMBERSHIP, "len_eq")

EXTRA_PREFIX = "extra_fields."
EXTRA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,100}$")

# Operators of an extra_fields key, by the type of its values.
_EXTRA_OPERATORS: dict[str, tuple[str, ...]] = {
    "TEXT": (*EQUALITY, *MEMBERSHIP, *TEXT, *ORDER, "isnull"),
    "INT": (*EQUALITY, *MEMBERSHIP, *ORDER, "isnull"),
    "FLOAT": (*EQUALITY, *ORDER, "isnull"),
    "BOOL": (*EQUALITY, "isnull"),
    "ARRAY": ("len_eq", "isnull"),
    "MAP": ("isnull",),
}
# Any operator may be used on an extra key (its type varies between events).
EXTRA_ANY = tuple(
    op for op in ALL_OPERATORS if op in {o for v in _EXTRA_OPERATORS.values() for o in v}
)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    label: str
    type: str  # ENUM, TEXT, INT, FLOAT, BOOL, TIMESTAMP, ARRAY, MAP
    operators: tuple[str, ...]
    group: str
    column: str | None = None  # the event column; None for an extra_fields key
    # A column of the messages' text (chat_completion_event_texts), full-text indexed.
    message_text: bool = False

    @property
    def extra_key(self) -> str | None:
        return self.name[len(EXTRA_PREFIX) :] if self.column is None else None

    @property
    def has_options(self) -> bool:
        return self.type in ("ENUM", "BOOL") or (self.column is None and self.type == "TEXT")

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "type": self.type,
            "supported_operators": list(self.operators),
            "group": self.group,
        }


_NUMBER = (*ORDER, *EQUALITY)
EVENT_FIELDS: dict[str, FieldSpec] = {
    f.name: f
    for f in (
        FieldSpec("event_id", "Event id", "TEXT", (*EQUALITY, *MEMBERSHIP), "event", "id"),
        FieldSpec(
            "correlation_id",
            "Correlation id",
            "TEXT",
            (*EQUALITY, *MEMBERSHIP, *TEXT),
            "event",
            "correlation_id",
        ),
        FieldSpec("created_at", "Created at", "TIMESTAMP", ORDER, "event", "created_at"),
        FieldSpec("model", "Model", "ENUM", (*EQUALITY, *MEMBERSHIP, *TEXT), "event", "model"),
        FieldSpec("source", "Source", "ENUM", (*EQUALITY, *MEMBERSHIP), "event", "source"),
        FieldSpec(
            "status_code", "Status code", "INT", (*_NUMBER, *MEMBERSHIP), "event", "status_code"
        ),
        FieldSpec("latency_ms", "Latency (ms)", "FLOAT", ORDER, "event", "latency_ms"),
        FieldSpec("nb_input_tokens", "Input tokens", "INT", _NUMBER, "usage", "nb_input_tokens"),
        FieldSpec("nb_output_tokens", "Output tokens", "INT", _NUMBER, "usage", "nb_output_tokens"),
        FieldSpec("nb_messages", "Messages", "INT", _NUMBER, "usage", "nb_messages"),
        FieldSpec(
            "request_messages",
            "Request messages",
            "ARRAY",
            ("len_eq",),
            "content",
            "request_messages",
        ),
        FieldSpec(
            "response_messages",
            "Response messages",
            "ARRAY",
            ("len_eq",),
            "content",
            "response_messages",
        ),
        FieldSpec(
            "enabled_tools", "Enabled tools", "ARRAY", ("len_eq",), "content", "enabled_tools"
        ),
        # The text of the messages: string contents and text chunks, one line apart.
        FieldSpec(
            "request_text",
            "Request messages text",
            "TEXT",
            TEXT,
            "content",
            "request_text",
            message_text=True,
        ),
        FieldSpec(
            "response_text",
            "Response messages text",
            "TEXT",
            TEXT,
            "content",
            "response_text",
            message_text=True,
        ),
    )
}

FIELD_GROUPS = [
    {"name": "event", "label": "Event"},
    {"name": "usage", "label": "Usage"},
    {"name": "content", "label": "Content"},
    {"name": "extra_fields", "label": "Extra fields"},
]


def value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, int):
        return "INT"
    if isinstance(value, float):
        return "FLOAT"
    if isinstance(value, list):
        return "ARRAY"
    if isinstance(value, dict):
        return "MAP"
    return "TEXT"


def extra_field(key: str, type_: str | None = None) -> FieldSpec:
    """An extra_fields key; with its observed type, the operators of that type."""
    operators = EXTRA_ANY if type_ is None else _EXTRA_OPERATORS[type_]
    return FieldSpec(f"{EXTRA_PREFIX}{key}", key, type_ or "TEXT", operators, "extra_fields", None)


def resolve(name: str, *, error_code: str = "SEARCH_BAD_REQUEST", status: int = 400) -> FieldSpec:
    """The field of a filter or a path; an unknown field is an error naming it."""
    spec = EVENT_FIELDS.get(name)
    if spec is not None:
        return spec
    if name.startswith(EXTRA_PREFIX) and EXTRA_KEY.match(name[len(EXTRA_PREFIX) :]):
        return extra_field(name[len(EXTRA_PREFIX) :])
    raise ObservabilityError(
        f"unknown field {name!r}: use one of the event fields or 'extra_fields.<key>' "
        "(key of letters, digits, '_' or '-')",
        error_code,
        status_code=status,
    )


def check_operator(spec: FieldSpec, op: str, *, error_code: str = "SEARCH_BAD_REQUEST") -> None:
    if op not in ALL_OPERATORS:
        raise ObservabilityError(
            f"unknown operator {op!r}: use one of {', '.join(ALL_OPERATORS)}", error_code
        )
    if op not in spec.operators:
        raise ObservabilityError(
            f"field {spec.name!r} does not support operator {op!r} "
            f"(supported: {', '.join(spec.operators)})",
            error_code,
        )
