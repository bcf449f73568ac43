"""Wire models of client sessions (mistralai 3.x `CreateRealtimeSessionRequest`,
`CreateRealtimeSessionResponse`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ClientSessionCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=200)
    purpose: Literal["realtime"] = "realtime"
    ttl_seconds: int | None = Field(
        default=None, description="lifetime of the secret in seconds (default 600, at most 3600)"
    )


class ClientSecret(BaseModel):
    value: str
    expires_at: datetime


class ClientSessionOut(BaseModel):
    purpose: Literal["realtime"] = "realtime"
    expires_at: datetime
    client_secret: ClientSecret
    object: Literal["client.session"] = "client.session"
