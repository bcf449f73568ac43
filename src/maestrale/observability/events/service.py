"""Business rules of chat completion events: search pages, ids, fields and their options."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import orjson

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import as_utc
from maestrale.core.db import Database
from maestrale.core.errors import AppError
from maestrale.core.pagination import MAX_PAGE_SIZE, decode_cursor, encode_cursor
from maestrale.observability import fields as event_fields
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.events.repository import ChatCompletionEventRepository, stream_ids
from maestrale.observability.events.schemas import FeedOut, SearchEventsOut, full, preview
from maestrale.observability.filters import FilterPayload, compile_filters, compile_scan


def event_not_found(event_id: str) -> ObservabilityError:
    return ObservabilityError(
        f"chat completion event {event_id!r} not found", "SEARCH_NOT_FOUND", status_code=404
    )


class ChatCompletionEventService:
    def __init__(self, repo: ChatCompletionEventRepository) -> None:
        self.repo = repo

    async def get(self, event_id: str) -> dict[str, Any]:
        event = await self.event(event_id)
        return full(event).model_dump(mode="json")

    async def event(self, event_id: str) -> ChatCompletionEvent:
        event = await self.repo.get(event_id)
        if event is None:
            raise event_not_found(event_id)
        return event

    async def search(
        self,
        params: FilterPayload,
        extra_fields: list[str] | None,
        page_size: int,
        cursor: str | None,
    ) -> SearchEventsOut:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ObservabilityError(
                f"page_size must be between 1 and {MAX_PAGE_SIZE}", "VALIDATION_ERROR"
            )
        where = compile_filters(params, self.repo.dialect)
        scan = compile_scan(params, self.repo.dialect)
        after = _decode(cursor) if cursor else None
        rows = await self.repo.search(where, page_size + 1, after, scan=scan)
        more = len(rows) > page_size
        rows = rows[:page_size]
        next_cursor = (
            encode_cursor({"c": rows[-1].created_at.isoformat(), "i": rows[-1].id})
            if more
            else None
        )
        return SearchEventsOut(
            completion_events=FeedOut(
                results=[preview(r, extra_fields) for r in rows], cursor=next_cursor
            )
        )

    async def fields(self) -> dict[str, Any]:
        types: dict[str, set[str]] = {}
        for extra in await self.repo.extra_samples():
            for key, value in extra.items():
                if value is not None and event_fields.EXTRA_KEY.match(str(key)):
                    types.setdefault(str(key), set()).add(event_fields.value_type(value))
        extras = [
            event_fields.extra_field(key, next(iter(kinds)) if len(kinds) == 1 else None)
            for key, kinds in sorted(types.items())
        ]
        specs = [*event_fields.EVENT_FIELDS.values(), *extras]
        return {
            "field_definitions": [s.definition() for s in specs],
            "field_groups": event_fields.FIELD_GROUPS,
        }

    def _option_field(self, field_name: str) -> event_fields.FieldSpec:
        spec = event_fields.resolve(field_name, error_code="FIELDS_NOT_FOUND", status=404)
        if not spec.has_options:
            raise ObservabilityError(
                f"field {field_name!r} ({spec.type}) has no options: options exist for ENUM, "
                "BOOL and extra_fields text fields",
                "FIELDS_BAD_REQUEST",
            )
        return spec

    async def options(self, field_name: str, operator: str) -> dict[str, Any]:
        spec = self._option_field(field_name)
        event_fields.check_operator(spec, operator, error_code="FIELDS_BAD_REQUEST")
        if operator == "isnull":
            return {"options": [True, False]}
        return {"options": await self.repo.options(spec)}

    async def option_counts(self, field_name: str, params: FilterPayload | None) -> dict[str, Any]:
        spec = self._option_field(field_name)
        where = compile_filters(params, self.repo.dialect)
        counts = await self.repo.option_counts(spec, where)
        return {"counts": [{"value": v, "count": n} for v, n in counts]}


def _decode(cursor: str) -> tuple[datetime, str]:
    try:
        values = decode_cursor(cursor)
        return as_utc(datetime.fromisoformat(values["c"])), str(values["i"])
    except (AppError, KeyError, TypeError, ValueError) as exc:
        raise ObservabilityError("invalid cursor", "VALIDATION_ERROR") from exc


async def ids_json(
    db: Database, tenant: Tenant, params: FilterPayload, budget: float
) -> AsyncIterator[bytes]:
    """Compile and read the first chunk first (a bad filter is a 400, a search past its budget
    a 408, before the response starts), then a generator of the JSON body, chunk by chunk."""
    where = compile_filters(params, "postgresql" if not db.is_sqlite else "sqlite")
    chunks = stream_ids(db, tenant, where, budget=budget)
    first = await anext(chunks, None)

    async def body() -> AsyncIterator[bytes]:
        try:
            yield b'{"completion_event_ids":['
            if first is not None:
                # One write per database chunk: the ids joined, without the brackets.
                yield orjson.dumps(first)[1:-1]
                async for ids in chunks:
                    yield b"," + orjson.dumps(ids)[1:-1]
            yield b"]}"
        finally:
            await chunks.aclose()

    return body()
