"""Organization members and invitations.

An invitation records who may join, with which roles and workspaces. Maestrale has no sign-up
page: an invitation is accepted when the admin creates the user (POST /v1/admin/users) with that
e-mail, which applies the invitation's roles and workspaces and consumes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from maestrale.admin import roles as role_catalog
from maestrale.admin.context import AdminContext
from maestrale.admin.keys.repository import StandardKeyRepository
from maestrale.admin.membership import Memberships
from maestrale.admin.role_fields import raw_roles
from maestrale.admin.users.repository import UserRepository
from maestrale.admin.users.schemas import (
    InviteCreate,
    InviteOut,
    InvitesCreated,
    MemberOut,
    MemberWorkspaceInfo,
    OrganizationInviteOut,
    RoleOut,
    RolesOut,
    UserCreate,
    UsersCreated,
    UsersPage,
    UserUpdate,
)
from maestrale.admin.users.tables import Invitation
from maestrale.admin.workspaces.repository import WorkspaceAdminRepository
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.auth.tables import User, Workspace, WorkspaceMember
from maestrale.core.clock import iso, utcnow
from maestrale.core.errors import Conflict, NotFound
from maestrale.core.pagination import PageParams

INVITATION_TTL = timedelta(days=7)
_EMAIL = re.compile(r"^[^@\s,;<>()\[\]\\\"]+@[^@\s,;<>()\[\]\\\"]+\.[^@\s,;<>()\[\]\\\"]+$")


def valid_email(email: str) -> bool:
    return len(email) <= 255 and _EMAIL.match(email) is not None


def split_emails(value: str) -> list[str]:
    return [part.strip() for part in re.split(r"[,\n\r;]+", value) if part.strip()]


def org_roles(user: User) -> list[str]:
    return role_catalog.ORG.names(user.roles or [role_catalog.ORG_DEFAULT])


def _first(values: list[str]) -> str:
    return values[0]


def member_out(user: User, workspaces: Iterable[tuple[Workspace, WorkspaceMember]]) -> MemberOut:
    raw = raw_roles(role_catalog.ORG, user.roles, role_catalog.ORG_DEFAULT)
    name = " ".join(p for p in (user.first_name, user.last_name) if p) or None
    infos = []
    for ws, member in workspaces:
        ws_raw = raw_roles(role_catalog.WORKSPACE, member.roles, role_catalog.WS_DEFAULT)
        infos.append(
            MemberWorkspaceInfo(
                is_default=ws.is_default,
                name=ws.name,
                raw_role=_first(ws_raw),
                raw_roles=ws_raw,
                uuid=ws.id,
            )
        )
    return MemberOut(
        created_at=iso(user.created_at) or "",
        email=user.email,
        first_name=user.first_name,
        last_name=user.last_name,
        name=name,
        oid_id=None,
        is_sso_outsider=False,
        raw_role=_first(raw),
        raw_roles=raw,
        subscription_types=list(user.subscription_types or []),
        subscriptions=[],
        uuid=user.id,
        workspaces=infos,
    )


def _snapshot(user: User) -> dict[str, Any]:
    return {
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "roles": org_roles(user),
        "subscription_types": list(user.subscription_types or []),
    }


def invite_out(invitation: Invitation) -> OrganizationInviteOut:
    raw = raw_roles(role_catalog.ORG, invitation.roles, role_catalog.ORG_DEFAULT)
    return OrganizationInviteOut(
        created_at=iso(invitation.created_at) or "",
        email=invitation.email,
        expired=invitation.expires_at <= utcnow(),
        raw_role=_first(raw),
        raw_roles=raw,
        uuid=invitation.id,
        workspace_uuids=list(invitation.workspace_ids or []),
    )


class UserService:
    def __init__(self, ctx: AdminContext) -> None:
        self.ctx = ctx
        self.repo = UserRepository(ctx.session, ctx.organization_id)
        self.workspaces = WorkspaceAdminRepository(ctx.session, ctx.organization_id)
        self.keys = StandardKeyRepository(ctx.session, ctx.organization_id)
        self.memberships = Memberships(self.workspaces)

    async def _user(self, user_id: str) -> User:
        user = await self.repo.user(user_id)
        if user is None:
            raise NotFound(f"user {user_id!r} not found", code="user_not_found")
        return user

    async def _member_out(self, user: User) -> MemberOut:
        return member_out(user, (await self.workspaces.workspaces_of_users([user.id]))[user.id])

    async def list_users(self, email: str | None, paging: PageParams) -> UsersPage:
        """Members first, then pending invitations, paged together; `total` counts both."""
        n_users = await self.repo.count_users(email)
        n_invites = await self.repo.count_invitations(email)
        users = await self.repo.users(email, paging.offset, paging.limit)
        room = paging.limit - len(users)
        invites: list[Invitation] = []
        if room > 0:
            invites = await self.repo.invitations(email, max(0, paging.offset - n_users), room)
        spaces = await self.workspaces.workspaces_of_users(u.id for u in users)
        return UsersPage(
            invites=[invite_out(i) for i in invites],
            members=[member_out(u, spaces[u.id]) for u in users],
            page=paging.page,
            page_size=paging.page_size,
            total=n_users + n_invites,
        )

    async def get_user(self, user_id: str) -> MemberOut:
        return await self._member_out(await self._user(user_id))

    async def _usable_workspaces(self, ids: Iterable[str]) -> dict[str, Workspace]:
        wanted = list(dict.fromkeys(ids))
        found = await self.workspaces.workspaces_by_ids(wanted)
        for ws_id in wanted:
            if ws_id not in found:
                raise NotFound(
                    f"workspace {ws_id!r} not found",
                    code="workspace_not_found",
                    param="workspace_uuids",
                )
            if found[ws_id].archived_at is not None:
                raise Conflict(f"workspace {ws_id!r} is archived", code="workspace_archived")
        return found

    async def create_users(self, items: list[UserCreate]) -> UsersCreated:
        """Create members; a pending invitation for an e-mail is accepted (its roles and
        workspaces are applied) and consumed."""
        emails = [item.email.strip().lower() for item in items]
        existing = await self.repo.users_by_emails(e for e in emails if valid_email(e))
        invitations = await self.repo.invitations_by_emails(e for e in emails if valid_email(e))
        created: dict[str, str] = {}
        invalid: list[str] = []
        for item, email in zip(items, emails, strict=True):
            if not valid_email(email) or email in existing or email in created:
                invalid.append(item.email)
                continue
            invitation = invitations.get(email)
            roles = item.resolved_roles() or (invitation.roles if invitation else None)
            user = await self.repo.add(
                User(
                    organization_id=self.ctx.organization_id,
                    email=email,
                    first_name=item.first_name,
                    last_name=item.last_name,
                    roles=role_catalog.ORG.names(roles or [role_catalog.ORG_DEFAULT]),
                    subscription_types=list(item.subscription_types or []),
                )
            )
            created[email] = user.id
            after = _snapshot(user)
            if invitation is not None:
                spaces = await self.workspaces.workspaces_by_ids(invitation.workspace_ids or [])
                for ws in spaces.values():
                    if ws.archived_at is None:
                        await self.memberships.provision(
                            ws.id, user.id, [role_catalog.WS_DEFAULT], replace=False
                        )
                after["accepted_invitation"] = invitation.id
                after["workspaces"] = sorted(spaces)
                await self.repo.delete(invitation)
            self.ctx.audit("user.create", "user", user.id, after=after)
        return UsersCreated(email_to_user_id=created, invalid_emails=invalid)

    async def _check_not_last_admin(self, user: User, new_roles: list[str]) -> None:
        if (
            role_catalog.ORG_ADMIN in org_roles(user)
            and role_catalog.ORG_ADMIN not in new_roles
            and await self.repo.org_admin_count([role_catalog.ORG_ADMIN, "admin"]) <= 1
        ):
            raise Conflict(
                "this is the organization's last organization_admin; give the role to another "
                "user first",
                code="last_organization_admin",
            )

    async def update_user(self, user_id: str, body: UserUpdate) -> MemberOut:
        user = await self._user(user_id)
        before = _snapshot(user)
        roles = body.resolved_roles()
        if roles is not None:
            roles = roles or [role_catalog.ORG_DEFAULT]
            await self._check_not_last_admin(user, roles)
            user.roles = roles
        if body.subscription_types is not None:
            user.subscription_types = list(body.subscription_types)
        await self.repo.flush()
        self.ctx.audit("user.update", "user", user.id, before=before, after=_snapshot(user))
        return await self._member_out(user)

    async def delete_user(self, user_id: str) -> None:
        """Remove a member from the organization. Their keys are revoked (everywhere, at
        once): a deleted user's keys must not outlive them."""
        user = await self._user(user_id)
        await self._check_not_last_admin(user, [])
        before = _snapshot(user)
        revoked = await self.keys.revoke_keys(user_id=user.id)
        await self.repo.delete(user)
        self.ctx.audit(
            "user.delete", "user", user_id, before=before, after={"revoked_keys": revoked}
        )
        self.ctx.invalidate(*(Invalidation("key", key_id) for key_id in revoked))

    async def list_invites(self) -> list[InviteOut]:
        out = []
        for invitation in await self.repo.invitations():
            raw = raw_roles(role_catalog.ORG, invitation.roles, role_catalog.ORG_DEFAULT)
            out.append(
                InviteOut(email=invitation.email, invite_uuid=invitation.id, role=raw[0], roles=raw)
            )
        return out

    async def invite(self, body: InviteCreate) -> InvitesCreated:
        spaces = await self._usable_workspaces(body.workspace_uuids or [])
        roles = role_catalog.ORG.names(body.resolved_roles() or [role_catalog.ORG_DEFAULT])
        subscriptions: list[str] = list(body.subscription_types or [])
        if body.subscription_type and body.subscription_type not in subscriptions:
            subscriptions.append(body.subscription_type)
        addresses = list(dict.fromkeys(split_emails(body.email)))
        members = await self.repo.users_by_emails(addresses)
        already = [a for a in addresses if a.lower() in members]
        invalid = [a for a in addresses if a.lower() not in members and not valid_email(a.lower())]
        valid = [a.lower() for a in addresses if valid_email(a.lower())]
        pending = await self.repo.invitations_by_emails(valid)
        count = 0
        now = utcnow()
        for email in dict.fromkeys(valid):
            if email in members:
                continue
            invitation = pending.get(email)
            if invitation is None:
                invitation = Invitation(organization_id=self.ctx.organization_id, email=email)
            invitation.roles = roles
            invitation.workspace_ids = list(spaces)
            invitation.subscription_types = subscriptions
            invitation.email_language = body.email_language
            invitation.created_at = now
            invitation.expires_at = now + INVITATION_TTL
            await self.repo.add(invitation)
            count += 1
            self.ctx.audit(
                "invitation.create",
                "invitation",
                invitation.id,
                after={"email": email, "roles": roles, "workspace_ids": list(spaces)},
            )
        return InvitesCreated(
            already_members=already, invalid_emails=invalid, invited_members_count=count
        )

    async def delete_invite(self, invite_id: str) -> None:
        invitation = await self.repo.invitation(invite_id)
        if invitation is None:
            raise NotFound(f"invitation {invite_id!r} not found", code="invitation_not_found")
        before = {"email": invitation.email, "roles": list(invitation.roles or [])}
        await self.repo.delete(invitation)
        self.ctx.audit("invitation.delete", "invitation", invite_id, before=before)

    def list_roles(self) -> RolesOut:
        """The built-in roles of both scopes (the same for every organization)."""

        def out(roles: Iterable[role_catalog.Role]) -> list[RoleOut]:
            return [
                RoleOut(description=r.description, is_custom_role=False, name=r.name, uuid=r.uuid)
                for r in roles
            ]

        return RolesOut(
            organization_roles=out(role_catalog.ORGANIZATION_ROLES),
            workspace_roles=out(role_catalog.WORKSPACE_ROLES),
        )
