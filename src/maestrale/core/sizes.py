"""Item limits of request bodies. A list with more items than its field allows is refused with a
413 before any item is validated: pydantic checks a `max_length` only once every item passed,
which for a million tiny messages is seconds of CPU on the event loop (and their memory) spent
on a request that is refused anyway. The byte limits of whole bodies are the middleware's
(`core.middleware.BodyLimits`)."""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator

from maestrale.core.errors import PayloadTooLarge

# Messages of one chat request (chat and agent completions).
MAX_MESSAGES = 10_000
# Inputs of one embeddings request.
MAX_EMBEDDING_INPUTS = 2048
# Entries of one conversation request's `inputs`.
MAX_CONVERSATION_INPUTS = 10_000


class TooManyItems(PayloadTooLarge):
    code = "too_many_items"


def at_most(limit: int, field: str) -> BeforeValidator:
    """A validator (for `Annotated[list[...], at_most(...), Field(max_length=...)]`: the
    `Field` documents the limit in the schema) that refuses a list of more than `limit` items
    with a 413 before its items are validated."""

    def check(value: Any) -> Any:
        if isinstance(value, list) and len(value) > limit:
            raise TooManyItems(
                f"{field}: at most {limit} items per request, not {len(value)}", param=field
            )
        return value

    return BeforeValidator(check)


def declared_length(value: str | None) -> int | None:
    """A request's `Content-Length` as a number, or None when it is missing or no plain decimal
    of at most 19 digits (a longer one cannot be a real length, and Python's `int` refuses more
    than 4,300 digits with an error)."""
    if value and value.isascii() and value.isdigit() and len(value) < 20:
        return int(value)
    return None
