"""Service accounts of the caller's workspace: created, listed, read, described, given roles,
deleted (their keys revoked in the same transaction and dropped from every key cache once it
committed); every change audited."""

from __future__ import annotations

from typing import Any

from maestrale.admin import roles as role_catalog
from maestrale.admin.context import AdminContext
from maestrale.admin.service_accounts.access import assignable, grantable_names
from maestrale.admin.service_accounts.repository import ServiceAccountRepository
from maestrale.admin.service_accounts.schemas import (
    AssignableRoleOut,
    ServiceAccountCreate,
    ServiceAccountOut,
    ServiceAccountRoleOut,
    ServiceAccountUpdate,
)
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.auth.tables import ServiceAccount
from maestrale.core.clock import utcnow
from maestrale.core.errors import Conflict, NotFound


def account_out(account: ServiceAccount) -> ServiceAccountOut:
    return ServiceAccountOut(
        id=account.id,
        name=account.name,
        customer_id=account.organization_id,
        organization_id=account.organization_id,
        workspace_id=account.workspace_id,
        description=account.description,
        created_at=account.created_at,
        updated_at=account.updated_at,
        deleted_at=account.deleted_at,
    )


def roles_out(account: ServiceAccount) -> list[ServiceAccountRoleOut]:
    return [
        ServiceAccountRoleOut(role_id=uuid)
        for uuid in role_catalog.WORKSPACE.uuids(account.roles or [])
    ]


def _state(account: ServiceAccount) -> dict[str, Any]:
    return {"name": account.name, "description": account.description, "roles": account.roles}


class ServiceAccountService:
    def __init__(self, ctx: AdminContext) -> None:
        workspace_id = ctx.principal.workspace_id
        assert workspace_id is not None  # a standard key
        self.ctx = ctx
        self.workspace_id = workspace_id
        self.repo = ServiceAccountRepository(ctx.session, ctx.organization_id, workspace_id)

    def check_workspace(self, workspace_id: str | None, param: str = "workspace_id") -> None:
        """A key manages its own workspace's accounts only: any other id is not found."""
        if workspace_id is not None and workspace_id != self.workspace_id:
            raise NotFound(
                f"workspace {workspace_id!r} not found", code="workspace_not_found", param=param
            )

    async def _account(self, account_id: str) -> ServiceAccount:
        account = await self.repo.get(account_id, live=True)
        if account is None:
            raise NotFound(
                f"service account {account_id!r} not found", code="service_account_not_found"
            )
        return account

    def assignable_roles(self) -> list[AssignableRoleOut]:
        return [
            AssignableRoleOut(
                uuid=role.uuid, name=role.name, description=role.description, is_custom_role=False
            )
            for role in assignable(self.ctx.principal)
        ]

    async def create(self, body: ServiceAccountCreate) -> ServiceAccountOut:
        self.check_workspace(body.workspace_id)
        roles = grantable_names(self.ctx.principal, body.role_ids or [])
        if await self.repo.name_taken(body.name):
            raise Conflict(
                f"a service account named {body.name!r} exists in this workspace",
                code="service_account_exists",
                param="name",
            )
        now = utcnow()
        account = await self.repo.add(
            ServiceAccount(
                organization_id=self.ctx.organization_id,
                workspace_id=self.workspace_id,
                name=body.name,
                description=body.description,
                roles=roles,
                created_by=self.ctx.principal.key_id,
                created_at=now,
                updated_at=now,
            )
        )
        self.ctx.audit(
            "service_account.create", "service_account", account.id, after=_state(account)
        )
        return account_out(account)

    async def page(
        self, *, offset: int, limit: int, include_deleted: bool, q: str | None, order: str
    ) -> list[ServiceAccountOut]:
        rows = await self.repo.page(
            offset=offset,
            limit=limit,
            include_deleted=include_deleted,
            q=q,
            descending=order == "desc",
        )
        return [account_out(row) for row in rows]

    async def get(self, account_id: str) -> ServiceAccountOut:
        return account_out(await self._account(account_id))

    async def update(self, account_id: str, body: ServiceAccountUpdate) -> ServiceAccountOut:
        account = await self._account(account_id)
        if "description" in body.model_fields_set and body.description != account.description:
            before = _state(account)
            account.description = body.description
            account.updated_at = utcnow()
            await self.repo.flush()
            self.ctx.audit(
                "service_account.update",
                "service_account",
                account.id,
                before=before,
                after=_state(account),
            )
        return account_out(account)

    async def roles(self, account_id: str) -> list[ServiceAccountRoleOut]:
        return roles_out(await self._account(account_id))

    async def set_roles(self, account_id: str, role_ids: list[str]) -> list[ServiceAccountRoleOut]:
        account = await self._account(account_id)
        # Taking a role away is granting too: a caller replaces only roles it could grant.
        grantable_names(self.ctx.principal, account.roles or [])
        roles = grantable_names(self.ctx.principal, role_ids)
        if roles != role_catalog.WORKSPACE.names(account.roles or []):
            before = _state(account)
            account.roles = roles
            account.updated_at = utcnow()
            await self.repo.flush()
            self.ctx.audit(
                "service_account.set_roles",
                "service_account",
                account.id,
                before=before,
                after=_state(account),
            )
            # The account's keys act with its roles: cached principals must not keep the old.
            keys = await self.repo.live_key_ids(account.id)
            self.ctx.invalidate(*(Invalidation("key", key_id) for key_id in keys))
        return roles_out(account)

    async def delete(self, account_id: str) -> None:
        """Delete the account and revoke its keys: refused on every replica once committed."""
        account = await self._account(account_id)
        before = _state(account)
        account.deleted_at = account.updated_at = utcnow()
        revoked = await self.repo.revoke_keys(account.id)
        await self.repo.flush()
        self.ctx.audit(
            "service_account.delete",
            "service_account",
            account.id,
            before=before,
            after={"deleted": True, "revoked_keys": revoked},
        )
        self.ctx.invalidate(*(Invalidation("key", key_id) for key_id in revoked))
