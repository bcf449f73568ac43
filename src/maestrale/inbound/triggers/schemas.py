"""Wire models of /v1/triggers (mistralai 3.x `Trigger`, `CreateTrigger`, `TriggerEvent`,
`TriggerEventList`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from maestrale.inbound.triggers.filters import MAX_FILTER_CHARS, compile_filter

Handler = Literal["workflows", "agents", "spaces"]
ActionType = Literal["start_workflow", "build_app", "deploy_app", "start_agent_session"]
OwnerType = Literal["workspace", "user"]


class TriggerActionIn(BaseModel):
    primitive_id: str = Field(min_length=1, max_length=200)
    type: ActionType


class TriggerCreate(BaseModel):
    event_source_id: str = Field(min_length=1, max_length=200)
    handler: Handler
    action: TriggerActionIn
    owner_type: OwnerType
    title: str = Field(min_length=1, max_length=512)
    filters: str | None = Field(default=None, max_length=MAX_FILTER_CHARS)

    @field_validator("filters")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            compile_filter(value)  # InvalidFilter is a ValueError: a 422 naming `filters`
            return value
        return None  # an empty filter matches every event


class TriggerAction(BaseModel):
    primitive_id: str
    type: str


class TriggerOut(BaseModel):
    id: str
    creator_id: str
    workspace_id: str
    organization_id: str
    customer_id: str
    owner_type: str
    event_source: dict[str, Any]
    handler: str
    action: TriggerAction
    filters: str | None
    title: str


class TriggerEventOut(BaseModel):
    event_id: str
    trigger_id: str
    source_id: str
    status: str
    received_at: datetime
    submitted_at: datetime | None
    triggered_at: datetime | None
    detail: str | None
    url: str | None


class TriggerEventList(BaseModel):
    data: list[TriggerEventOut]
