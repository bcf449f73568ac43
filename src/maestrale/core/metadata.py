"""The `metadata` filter of list calls: a JSON object whose values a resource's metadata must
have. The official SDK sends a sentinel string when no filter is given (docs/architecture.md §1), so
anything that is not a JSON object means no filter."""

from __future__ import annotations

from typing import Any, Literal

import orjson

from maestrale.core.errors import BadRequest

NonString = Literal["refuse", "stringify"]


def metadata_filter(raw: str | None, *, non_string: NonString = "refuse") -> dict[str, str]:
    """`{key: value}` to match. A value that is not a string is refused (400) with `refuse`, the
    agents' and conversations' rule; with `stringify` it is matched as its JSON text, as batch
    jobs do, whose filter also arrives as separate `key=value` query parameters (strings) and
    so compares metadata values as text."""
    if not raw:
        return {}
    try:
        parsed: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    wanted: dict[str, str] = {}
    for key, value in parsed.items():
        if isinstance(value, str):
            wanted[str(key)] = value
        elif non_string == "stringify":
            wanted[str(key)] = orjson.dumps(value).decode()
        else:
            raise BadRequest(
                "metadata filter values must be strings", code="invalid_metadata", param="metadata"
            )
    return wanted
