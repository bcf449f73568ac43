"""Wire models of admin user groups, their members and workspace assignments."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, Field, field_validator, model_validator

from maestrale.admin import roles as role_catalog
from maestrale.admin.role_fields import WorkspaceRoleFields


class GroupCreate(BaseModel):
    name: str = Field(min_length=1, max_length=255)
    description: str | None = Field(default=None, max_length=2000)
    target_type: Literal["W", "O"] = "W"
    parent_group_ids: list[str] | None = None


class GroupUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=255)
    description: str | None = Field(default=None, max_length=2000)
    target_type: Literal["W", "O"] | None = None
    parent_group_ids: list[str] | None = None


class GroupOut(BaseModel):
    description: str | None
    externally_managed: bool | None
    name: str
    organization_role: str | None
    parent_group_ids: list[str]
    target_type: Literal["W", "O"]
    uuid: str


class GroupsPage(BaseModel):
    items: list[GroupOut]
    page: int
    page_size: int
    total: int


class GroupMemberOut(BaseModel):
    email: str | None
    name: str | None
    user_uuid: str


class GroupMembersPage(BaseModel):
    members: list[GroupMemberOut]
    page: int
    page_size: int
    total: int


class UserUuids(BaseModel):
    user_uuids: list[str] = Field(max_length=10_000)


class ProvisionIn(BaseModel):
    user_group_uuid: str = Field(min_length=1, max_length=36)
    workspace_uuid: str = Field(min_length=1, max_length=36)
    workspace_role: str | None = None
    workspace_role_name: role_catalog.WorkspaceRoleName | None = None

    @field_validator("workspace_role")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        if value is not None:
            role_catalog.check_known(role_catalog.WORKSPACE, [value], "workspace")
        return value

    @model_validator(mode="after")
    def _exclusive(self) -> Self:
        if self.workspace_role is not None and self.workspace_role_name is not None:
            raise ValueError(
                "`workspace_role` and `workspace_role_name` are mutually exclusive; send only one"
            )
        return self

    def resolved_role(self) -> str:
        value = self.workspace_role_name or self.workspace_role
        return role_catalog.WORKSPACE.name_of(value) if value else role_catalog.WS_DEFAULT


class AssignmentIn(WorkspaceRoleFields):
    workspace_uuid: str = Field(min_length=1, max_length=36)


class AssignmentUpdate(WorkspaceRoleFields):
    pass


class RoleRef(BaseModel):
    name: str
    uuid: str


class AssignmentOut(BaseModel):
    created: str
    role_name: str | None
    role_uuid: str | None
    roles: list[RoleRef]
    workspace_name: str
    workspace_uuid: str


class AssignmentsPage(BaseModel):
    items: list[AssignmentOut]
    page: int
    page_size: int
    total: int


class OrganizationRoleIn(BaseModel):
    organization_role: str

    @field_validator("organization_role")
    @classmethod
    def _known(cls, value: str) -> str:
        role_catalog.check_known(role_catalog.ORG, [value], "organization")
        return value
