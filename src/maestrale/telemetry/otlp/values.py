"""OTLP attribute values (AnyValue) as plain JSON, within the receiver's limits.

A string is cut at `max_length` characters; an array or kvlist nested deeper than `max_depth`
becomes null; bytes become base64; an int is a Python int (at most 64 bits in protobuf, and
json_format refuses a larger one in OTLP/JSON). A list of key-values keeps its first `max_count`
keys; the number dropped (and what the sender says it dropped) is reported to the caller, which
records it as `maestrale.dropped_attributes_count`."""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

DROPPED_KEY = "maestrale.dropped_attributes_count"


@dataclass(frozen=True, slots=True)
class Limits:
    """What the receiver keeps of a record's attributes."""

    max_count: int = 256
    max_length: int = 256 * 1024
    max_depth: int = 16


def value(item: AnyValue, limits: Limits, depth: int = 0) -> Any:
    """One AnyValue as JSON (None when unset or nested too deep)."""
    kind = item.WhichOneof("value")
    if kind == "string_value":
        return text(item.string_value, limits)
    if kind == "bool_value":
        return item.bool_value
    if kind == "int_value":
        return item.int_value
    if kind == "double_value":
        number = item.double_value
        # JSON has no NaN nor infinities: their names, as text.
        return number if math.isfinite(number) else str(number)
    if kind == "bytes_value":
        return text(base64.b64encode(item.bytes_value).decode("ascii"), limits)
    if depth >= limits.max_depth:
        return None
    if kind == "array_value":
        return [value(v, limits, depth + 1) for v in item.array_value.values]
    if kind == "kvlist_value":
        kept, _ = attributes(item.kvlist_value.values, limits, depth + 1)
        return kept
    return None


def text(string: str, limits: Limits) -> str:
    # Lone surrogates cannot reach here (protobuf refuses invalid UTF-8), nor NUL be stored on
    # Postgres: it is dropped.
    if "\x00" in string:
        string = string.replace("\x00", "")
    return string if len(string) <= limits.max_length else string[: limits.max_length]


def attributes(
    items: Iterable[KeyValue], limits: Limits, depth: int = 0, dropped: int = 0
) -> tuple[dict[str, Any], int]:
    """Key-values as a JSON object of at most `max_count` keys (a repeated key: the last wins),
    and how many were dropped (`dropped`, the sender's count, included). The count is also
    stored under DROPPED_KEY when it is not zero."""
    kept: dict[str, Any] = {}
    max_count, max_length = limits.max_count, limits.max_length
    for item in items:
        key = item.key
        if len(key) > max_length or "\x00" in key:
            key = text(key, limits)
        if len(kept) >= max_count and key not in kept:
            dropped += 1
            continue
        found = item.value
        # The common case inline (a short string): this loop is most of a decode's time.
        if found.WhichOneof("value") == "string_value":
            string = found.string_value
            if len(string) > max_length or "\x00" in string:
                string = text(string, limits)
            kept[key] = string
        else:
            kept[key] = value(found, limits, depth)
    if dropped and depth == 0:
        kept[DROPPED_KEY] = dropped
    return kept, dropped
