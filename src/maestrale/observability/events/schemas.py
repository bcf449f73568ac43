"""Wire models of chat completion events and their fields."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.observability.filters import FilterPayload


class SearchEventsRequest(BaseModel):
    search_params: FilterPayload
    extra_fields: list[str] | None = None


class FieldOptionCountsRequest(BaseModel):
    filter_params: FilterPayload | None = None


class EventPreviewOut(BaseModel):
    event_id: str
    correlation_id: str
    created_at: datetime
    extra_fields: dict[str, Any]
    nb_input_tokens: int
    nb_output_tokens: int


class FeedOut(BaseModel):
    results: list[EventPreviewOut] = Field(default_factory=list)
    next: str | None = None
    cursor: str | None = None


class SearchEventsOut(BaseModel):
    completion_events: FeedOut


class EventOut(EventPreviewOut):
    enabled_tools: list[dict[str, Any]]
    request_messages: list[dict[str, Any]]
    response_messages: list[dict[str, Any]]
    nb_messages: int
    # Maestrale links no transcription to a chat completion event: always empty.
    chat_transcription_events: list[dict[str, Any]] = Field(default_factory=list)


def _extra(event: ChatCompletionEvent, keys: list[str] | None) -> dict[str, Any]:
    extra = event.extra_fields or {}
    return extra if keys is None else {k: extra[k] for k in keys if k in extra}


def preview(event: ChatCompletionEvent, keys: list[str] | None = None) -> EventPreviewOut:
    return EventPreviewOut(
        event_id=event.id,
        correlation_id=event.correlation_id,
        created_at=event.created_at,
        extra_fields=_extra(event, keys),
        nb_input_tokens=event.nb_input_tokens,
        nb_output_tokens=event.nb_output_tokens,
    )


def full(event: ChatCompletionEvent) -> EventOut:
    return EventOut(
        **preview(event).model_dump(),
        enabled_tools=event.enabled_tools or [],
        request_messages=event.request_messages or [],
        response_messages=event.response_messages or [],
        nb_messages=event.nb_messages,
    )
