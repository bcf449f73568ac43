"""SQL of tenancy and keys. Keys are looked up by hash; nothing here ever sees a key in clear
except `create_key`, which returns it once."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.keys import generate_key, hash_key, hide_key
from maestrale.core.auth.principal import Principal
from maestrale.core.auth.tables import (
    ApiKey,
    Organization,
    ServiceAccount,
    User,
    Workspace,
    WorkspaceMember,
)
from maestrale.core.clock import utcnow


class KeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def principal_for_hash(self, key_hash: str) -> Principal | None:
        """The principal of a live key: not revoked, not expired, its workspace not archived, its
        service account (if any) not deleted."""
        member = (WorkspaceMember.workspace_id == ApiKey.workspace_id) & (
            WorkspaceMember.user_id == ApiKey.user_id
        )
        stmt = (
            select(
                ApiKey,
                Workspace.archived_at,
                WorkspaceMember.roles,
                User.roles,
                ServiceAccount.roles,
                ServiceAccount.deleted_at,
            )
            .outerjoin(Workspace, Workspace.id == ApiKey.workspace_id)
            .outerjoin(WorkspaceMember, member)
            .outerjoin(User, User.id == ApiKey.user_id)
            .outerjoin(ServiceAccount, ServiceAccount.id == ApiKey.service_account_id)
            .where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None))
        )
        row = (await self.session.execute(stmt)).one_or_none()
        if row is None:
            return None
        key, archived_at, workspace_roles, organization_roles, account_roles, deleted_at = row
        if archived_at is not None or deleted_at is not None:
            return None
        if key.expires_at is not None and key.expires_at <= utcnow():
            return None
        roles: frozenset[str] | None = None
        if key.service_account_id is not None:
            roles = frozenset(account_roles or ())
        elif key.user_id is not None:
            roles = frozenset(workspace_roles or ())
        return Principal(
            key_id=key.id,
            kind=key.kind,
            organization_id=key.organization_id,
            workspace_id=key.workspace_id,
            user_id=key.user_id,
            expires_at=key.expires_at,
            workspace_roles=roles,
            organization_roles=frozenset(organization_roles or ()),
            service_account_id=key.service_account_id,
        )

    async def create_key(
        self,
        *,
        kind: str,
        organization_id: str,
        workspace_id: str | None,
        user_id: str | None,
        name: str,
        expires_at: datetime | None = None,
        created_by: str | None = None,
        key: str | None = None,
        service_account_id: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Store a new key (generated unless given) and return the row and the clear key."""
        clear = key or generate_key(kind)
        row = ApiKey(
            kind=kind,
            organization_id=organization_id,
            workspace_id=workspace_id,
            user_id=user_id,
            service_account_id=service_account_id,
            name=name,
            key_hash=hash_key(clear),
            hidden_key=hide_key(clear),
            expires_at=expires_at,
            created_by=created_by,
        )
        self.session.add(row)
        await self.session.flush()
        return row, clear

    async def get(self, key_id: str) -> ApiKey | None:
        return await self.session.get(ApiKey, key_id)

    async def hash_exists(self, key_hash: str) -> bool:
        found = await self.session.execute(select(ApiKey.id).where(ApiKey.key_hash == key_hash))
        return found.first() is not None

    async def list_keys(self, organization_id: str | None = None) -> list[ApiKey]:
        stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
        if organization_id is not None:
            stmt = stmt.where(ApiKey.organization_id == organization_id)
        return list((await self.session.execute(stmt)).scalars())

    async def revoke(self, key_id: str, organization_id: str | None = None) -> bool:
        stmt = update(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        if organization_id is not None:
            stmt = stmt.where(ApiKey.organization_id == organization_id)
        result = await self.session.execute(stmt.values(revoked_at=utcnow()))
        return bool(getattr(result, "rowcount", 0))

    async def touch(self, last_used: dict[str, datetime]) -> None:
        for key_id, when in last_used.items():
            await self.session.execute(
                update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=when)
            )


class TenancyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def default_workspace(self) -> Workspace | None:
        stmt = (
            select(Workspace).where(Workspace.is_default.is_(True)).order_by(Workspace.created_at)
        )
        return (await self.session.execute(stmt.limit(1))).scalar_one_or_none()

    async def user(self, user_id: str) -> User | None:
        return await self.session.get(User, user_id)

    async def organization(self, organization_id: str) -> Organization | None:
        return await self.session.get(Organization, organization_id)

    async def workspace(self, workspace_id: str) -> Workspace | None:
        return await self.session.get(Workspace, workspace_id)

    async def create_organization(self, name: str) -> Organization:
        org = Organization(name=name)
        self.session.add(org)
        await self.session.flush()
        return org

    async def create_workspace(
        self, organization_id: str, name: str, *, is_default: bool = False
    ) -> Workspace:
        ws = Workspace(organization_id=organization_id, name=name, is_default=is_default)
        self.session.add(ws)
        await self.session.flush()
        return ws

    async def create_user(self, organization_id: str, email: str, roles: Iterable[str]) -> User:
        user = User(organization_id=organization_id, email=email, roles=list(roles))
        self.session.add(user)
        await self.session.flush()
        return user

    async def add_member(self, workspace_id: str, user_id: str, roles: Iterable[str]) -> None:
        self.session.add(
            WorkspaceMember(workspace_id=workspace_id, user_id=user_id, roles=list(roles))
        )
        await self.session.flush()
