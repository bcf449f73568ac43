"""Wire models of /v1/service-accounts, as mistralai 3.x (and 2.10) parses them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from maestrale.admin import roles as role_catalog

# More role ids than there are roles: a hostile body, refused before they are looked up.
MAX_ROLES = len(role_catalog.WORKSPACE_ROLES)


def _known(values: list[str]) -> list[str]:
    role_catalog.check_known(role_catalog.WORKSPACE, values, "workspace")
    return values


class ServiceAccountCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    workspace_id: str = Field(min_length=1, max_length=36)
    description: str | None = Field(default=None, max_length=2000)
    role_ids: list[str] | None = Field(
        default=None,
        max_length=MAX_ROLES,
        description="workspace role UUIDs (or names); omitted or empty: no role",
    )

    @field_validator("role_ids")
    @classmethod
    def _known_roles(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _known(value)


class ServiceAccountUpdate(BaseModel):
    description: str | None = Field(default=None, max_length=2000)


class ServiceAccountRolesSet(BaseModel):
    role_ids: list[str] = Field(
        min_length=1,
        max_length=MAX_ROLES,
        description="workspace role UUIDs (or names); required and non-empty",
    )

    @field_validator("role_ids")
    @classmethod
    def _known_roles(cls, value: list[str]) -> list[str]:
        return _known(value)


class ServiceAccountOut(BaseModel):
    id: str
    name: str
    customer_id: str  # the organization (the platform's customer)
    organization_id: str
    workspace_id: str
    description: str | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


class ServiceAccountList(BaseModel):
    items: list[ServiceAccountOut]


class ServiceAccountRoleOut(BaseModel):
    role_id: str


class ServiceAccountRoleList(BaseModel):
    items: list[ServiceAccountRoleOut]


class AssignableRoleOut(BaseModel):
    uuid: str
    name: str
    description: str
    is_custom_role: bool


class AssignableRoleList(BaseModel):
    items: list[AssignableRoleOut]


SortOrder = Literal["asc", "desc"]
