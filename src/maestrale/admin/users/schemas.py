"""Wire models of admin users, invitations and roles."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from maestrale.admin.role_fields import OrgRoleFields

SubscriptionType = Literal["API", "CHAT", "ON_PREMISE", "LICENSE", "MISTRAL_CODE"]
EmailLanguage = Literal["en", "fr", "es", "de", "it", "pt_br", "pl", "ar", "nl"]


class UserCreate(OrgRoleFields):
    email: str = Field(max_length=255)
    first_name: str = Field(max_length=255)
    last_name: str = Field(max_length=255)
    subscription_types: list[SubscriptionType] | None = None


class UsersCreated(BaseModel):
    email_to_user_id: dict[str, str]
    invalid_emails: list[str]


class UserUpdate(OrgRoleFields):
    subscription_types: list[SubscriptionType] | None = None


class InviteCreate(OrgRoleFields):
    email: str = Field(
        min_length=1, description="one address, or several separated by commas or new lines"
    )
    email_language: EmailLanguage | None = None
    subscription_seat_automatic_granting: bool = False
    subscription_type: SubscriptionType | None = None
    subscription_types: list[SubscriptionType] | None = None
    workspace_uuids: list[str] | None = None


class InvitesCreated(BaseModel):
    already_members: list[str]
    invalid_emails: list[str]
    invited_members_count: int


class InviteOut(BaseModel):
    email: str | None
    invite_uuid: str
    role: str
    roles: list[str]


class OrganizationInviteOut(BaseModel):
    created_at: str
    email: str
    expired: bool
    raw_role: str
    raw_roles: list[str]
    uuid: str
    workspace_uuids: list[str]


class MemberWorkspaceInfo(BaseModel):
    is_default: bool
    name: str
    raw_role: str
    raw_roles: list[str]
    uuid: str


class MemberOut(BaseModel):
    created_at: str
    email: str | None
    first_name: str | None
    last_name: str | None
    name: str | None
    oid_id: str | None
    is_sso_outsider: bool | None
    raw_role: str
    raw_roles: list[str]
    subscription_types: list[str] | None
    subscriptions: list[dict[str, object]]
    uuid: str
    workspaces: list[MemberWorkspaceInfo]


class UsersPage(BaseModel):
    invites: list[OrganizationInviteOut]
    members: list[MemberOut]
    page: int | None
    page_size: int | None
    total: int | None


class Message(BaseModel):
    message: str


class RoleOut(BaseModel):
    description: str
    is_custom_role: bool
    name: str
    uuid: str | None


class RolesOut(BaseModel):
    organization_roles: list[RoleOut]
    workspace_roles: list[RoleOut]
