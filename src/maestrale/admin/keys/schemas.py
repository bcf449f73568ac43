"""Wire models of the admin API keys (`/v1/admin/api-keys`)."""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import BaseModel, Field, model_validator


class ApiKeyCreate(BaseModel):
    user_id: str | None = Field(
        default=None, min_length=1, max_length=36, description="user the key is created for"
    )
    service_account_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=36,
        description="or the service account (of `workspace_uuid`) the key is created for",
    )
    workspace_uuid: str = Field(min_length=1, max_length=36, description="workspace of the key")
    name: str | None = Field(default=None, max_length=200)
    expiration: date | None = Field(
        default=None, description="the key stops working at 00:00 UTC on this date"
    )

    @model_validator(mode="after")
    def _one_owner(self) -> ApiKeyCreate:
        if (self.user_id is None) == (self.service_account_id is None):
            raise ValueError("give exactly one of `user_id` and `service_account_id`")
        return self


class ApiKeyCreated(BaseModel):
    """The creation response: the only time `key` is shown."""

    actions: dict[str, Any]
    created_at: str | None
    expiration_date: date | None
    hidden_key: str
    key: str | None
    key_id: str
    name: str | None


class ApiKeyOut(ApiKeyCreated):
    can_delete: bool | None
    created_by: str | None
    last_used: date | None
    product: str
    workspace_id: str | None
    workspace_name: str | None


class ApiKeyList(BaseModel):
    keys: list[ApiKeyOut]


class ApiKeyDeleted(BaseModel):
    detail: str
