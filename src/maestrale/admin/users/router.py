"""/v1/admin/users, /v1/admin/users-invite and /v1/admin/roles."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Depends, Query

from maestrale.admin.context import Admin, Pages
from maestrale.admin.users.schemas import (
    InviteCreate,
    InviteOut,
    InvitesCreated,
    MemberOut,
    Message,
    RolesOut,
    UserCreate,
    UsersCreated,
    UsersPage,
    UserUpdate,
)
from maestrale.admin.users.service import UserService
from maestrale.core.routing import domain_router

router = domain_router()


async def user_service(ctx: Admin) -> UserService:
    return UserService(ctx)


Users = Annotated[UserService, Depends(user_service)]


@router.get("/users", response_model=UsersPage)
async def get_users(
    users: Users,
    pages: Pages,
    email: Annotated[str | None, Query(max_length=320, description="e-mail contains")] = None,
) -> UsersPage:
    """List the organization's members and pending invitations (members first)."""
    return await users.list_users(email, pages)


@router.post("/users", response_model=UsersCreated)
async def create_users(
    body: Annotated[list[UserCreate], Body(max_length=10_000)], users: Users
) -> UsersCreated:
    """Create members. Invalid or already used e-mails are reported in `invalid_emails`; the
    others are created. A pending invitation for an e-mail is accepted (roles, workspaces)."""
    return await users.create_users(body)


@router.get("/users-invite", response_model=list[InviteOut])
async def get_invites(users: Users) -> list[InviteOut]:
    """List pending invitations."""
    return await users.list_invites()


@router.post("/users-invite", response_model=InvitesCreated)
async def invite_users(body: InviteCreate, users: Users) -> InvitesCreated:
    """Invite one or more e-mails (comma- or newline-separated). Existing members are reported
    in `already_members`, malformed addresses in `invalid_emails`."""
    return await users.invite(body)


@router.delete("/users-invite/{invite_uuid}", response_model=Message)
async def delete_invite(invite_uuid: str, users: Users) -> Message:
    """Withdraw a pending invitation."""
    await users.delete_invite(invite_uuid)
    return Message(message="Invitation deleted successfully")


@router.get("/users/{user_id}", response_model=MemberOut)
async def get_user(user_id: str, users: Users) -> MemberOut:
    """One member of the organization, with their workspaces."""
    return await users.get_user(user_id)


@router.delete("/users/{user_id}", response_model=Message)
async def delete_user(user_id: str, users: Users) -> Message:
    """Remove a member from the organization; their API keys are revoked everywhere."""
    await users.delete_user(user_id)
    return Message(message="Organization member deleted successfully")


@router.patch("/users/{user_id}", response_model=MemberOut)
async def update_user(user_id: str, body: UserUpdate, users: Users) -> MemberOut:
    """Change a member's organization roles or product subscriptions."""
    return await users.update_user(user_id, body)


@router.get("/roles", response_model=RolesOut)
async def get_roles(users: Users) -> RolesOut:
    """The organization and workspace roles, by name and UUID."""
    return users.list_roles()
