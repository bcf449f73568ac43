"""/v1/admin/users, /v1/admin/users-invite and /v1/admin/roles."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Query

from maestrale.admin import users_service as service
from maestrale.admin.context import Admin, Pages
from maestrale.admin.users_schemas import (
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
from maestrale.core.routing import domain_router

router = domain_router()


@router.get("/users", response_model=UsersPage)
async def get_users(
    ctx: Admin,
    pages: Pages,
    email: Annotated[str | None, Query(max_length=320, description="e-mail contains")] = None,
) -> UsersPage:
    """List the organization's members and pending invitations (members first)."""
    return await service.list_users(ctx, email, pages)


@router.post("/users", response_model=UsersCreated)
async def create_users(
    body: Annotated[list[UserCreate], Body(max_length=10_000)], ctx: Admin
) -> UsersCreated:
    """Create members. Invalid or already used e-mails are reported in `invalid_emails`; the
    others are created. A pending invitation for an e-mail is accepted (roles, workspaces)."""
    created = await service.create_users(ctx, body)
    await ctx.commit()
    return created


@router.get("/users-invite", response_model=list[InviteOut])
async def get_invites(ctx: Admin) -> list[InviteOut]:
    """List pending invitations."""
    return await service.list_invites(ctx)


@router.post("/users-invite", response_model=InvitesCreated)
async def invite_users(body: InviteCreate, ctx: Admin) -> InvitesCreated:
    """Invite one or more e-mails (comma- or newline-separated). Existing members are reported
    in `already_members`, malformed addresses in `invalid_emails`."""
    result = await service.invite(ctx, body)
    await ctx.commit()
    return result


@router.delete("/users-invite/{invite_uuid}", response_model=Message)
async def delete_invite(invite_uuid: str, ctx: Admin) -> Message:
    """Withdraw a pending invitation."""
    await service.delete_invite(ctx, invite_uuid)
    await ctx.commit()
    return Message(message="Invitation deleted successfully")


@router.get("/users/{user_id}", response_model=MemberOut)
async def get_user(user_id: str, ctx: Admin) -> MemberOut:
    """One member of the organization, with their workspaces."""
    return await service.get_user(ctx, user_id)


@router.delete("/users/{user_id}", response_model=Message)
async def delete_user(user_id: str, ctx: Admin) -> Message:
    """Remove a member from the organization; their API keys are revoked everywhere."""
    await service.delete_user(ctx, user_id)
    await ctx.commit()
    return Message(message="Organization member deleted successfully")


@router.patch("/users/{user_id}", response_model=MemberOut)
async def update_user(user_id: str, body: UserUpdate, ctx: Admin) -> MemberOut:
    """Change a member's organization roles or product subscriptions."""
    member = await service.update_user(ctx, user_id, body)
    await ctx.commit()
    return member


@router.get("/roles", response_model=RolesOut)
async def get_roles() -> RolesOut:
    """The organization and workspace roles, by name and UUID."""
    return service.list_roles()
