"""Wire models of admin workspaces and their members."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from maestrale.admin.role_fields import WorkspaceRoleFields


class WorkspaceCreate(BaseModel):
    name: str = Field(min_length=1, max_length=255)
    admin_user_id: str = Field(min_length=1, max_length=36)
    description: str = Field(default="", max_length=255)
    icon: str = Field(default="", max_length=2)
    add_all_org_members: bool = False


class WorkspaceUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=255)
    description: str | None = Field(default=None, max_length=255)
    icon: str | None = Field(default=None, max_length=2)


class WorkspaceSpendLimitOut(BaseModel):
    currency: str | None
    no_monthly_limit: bool | None
    value: float | None


class WorkspaceOut(BaseModel):
    description: str | None
    icon: str | None
    is_default: bool
    members_count: int | None
    name: str
    spend_limit: WorkspaceSpendLimitOut | None
    uuid: str


class WorkspaceCreated(WorkspaceOut):
    raw_role: str
    raw_roles: list[str]


class WorkspacesPage(BaseModel):
    object: Literal["list"] = "list"
    items: list[WorkspaceOut]
    page: int
    page_size: int
    total: int


class WorkspaceMemberIn(WorkspaceRoleFields):
    user_uuid: str = Field(min_length=1, max_length=36)


class WorkspaceMembersIn(BaseModel):
    members: list[WorkspaceMemberIn] | None = Field(default=None, max_length=10_000)


class WorkspaceMemberRef(BaseModel):
    user_uuid: str = Field(min_length=1, max_length=36)


class WorkspaceMembersRemove(BaseModel):
    members: list[WorkspaceMemberRef] = Field(max_length=10_000)


class MembersAdded(BaseModel):
    added_members_count: int


class MembersUpserted(BaseModel):
    added_members_count: int
    updated_members_count: int


class MembersDeleted(BaseModel):
    deleted_members_count: int
