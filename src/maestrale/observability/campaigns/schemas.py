"""Wire models of campaigns."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from maestrale.observability.events.schemas import EventPreviewOut
from maestrale.observability.filters import FilterPayload
from maestrale.observability.judges.schemas import JudgeOut

MAX_CAMPAIGN_EVENTS = 10_000


class CampaignCreate(BaseModel):
    search_params: FilterPayload
    judge_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=500)
    description: str = Field(max_length=100_000)
    max_nb_events: int = Field(ge=1, le=MAX_CAMPAIGN_EVENTS)


class CampaignOut(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    name: str
    owner_id: str
    workspace_id: str
    description: str
    max_nb_events: int
    search_params: dict[str, Any]
    judge: JudgeOut


class CampaignPage(BaseModel):
    count: int
    results: list[CampaignOut]
    next: str | None = None
    previous: str | None = None


class CampaignList(BaseModel):
    campaigns: CampaignPage


class CampaignStatus(BaseModel):
    status: str


class SelectedEventsPage(BaseModel):
    count: int
    results: list[EventPreviewOut]
    next: str | None = None
    previous: str | None = None


class SelectedEvents(BaseModel):
    completion_events: SelectedEventsPage
