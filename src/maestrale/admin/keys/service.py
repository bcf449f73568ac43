"""Workspace API keys managed by an admin key: created for a member of a workspace or for one of
its service accounts, listed masked, deleted (revoked) everywhere at once."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

from maestrale.admin.context import AdminContext
from maestrale.admin.keys.repository import StandardKeyRepository
from maestrale.admin.keys.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyOut
from maestrale.admin.service_accounts.repository import ServiceAccountRepository
from maestrale.admin.users.repository import UserRepository
from maestrale.admin.workspaces.repository import WorkspaceAdminRepository
from maestrale.core.auth.invalidation import Invalidation
from maestrale.core.auth.repository import KeyRepository
from maestrale.core.auth.tables import ApiKey
from maestrale.core.clock import iso, utcnow
from maestrale.core.errors import BadRequest, Conflict, NotFound

# Every action is opt-in (absent = unavailable): deletion is what this API offers; rotation is
# not offered (create a new key, delete the old one), so it is left absent.
KEY_ACTIONS: dict[str, Any] = {"delete": {"status": "available"}}


def _expiration_date(key: ApiKey) -> date | None:
    return None if key.expires_at is None else key.expires_at.astimezone(UTC).date()


def key_created(key: ApiKey, clear: str | None) -> ApiKeyCreated:
    return ApiKeyCreated(
        actions=dict(KEY_ACTIONS),
        created_at=iso(key.created_at),
        expiration_date=_expiration_date(key),
        hidden_key=key.hidden_key,
        key=clear,
        key_id=key.id,
        name=key.name or None,
    )


def key_out(key: ApiKey, workspace_name: str | None) -> ApiKeyOut:
    return ApiKeyOut(
        **key_created(key, None).model_dump(),
        can_delete=True,
        created_by=key.created_by,
        last_used=None if key.last_used_at is None else key.last_used_at.date(),
        product="API",
        workspace_id=key.workspace_id,
        workspace_name=workspace_name,
    )


class KeyService:
    def __init__(self, ctx: AdminContext) -> None:
        self.ctx = ctx
        self.repo = StandardKeyRepository(ctx.session, ctx.organization_id)
        self.users = UserRepository(ctx.session, ctx.organization_id)
        self.workspaces = WorkspaceAdminRepository(ctx.session, ctx.organization_id)

    async def list_keys(self, limit: int | None, offset: int) -> list[ApiKeyOut]:
        rows = await self.repo.standard_keys(offset, limit)
        return [key_out(key, ws_name) for key, ws_name in rows]

    async def create_key(self, body: ApiKeyCreate) -> ApiKeyCreated:
        workspace = await self.workspaces.workspace(body.workspace_uuid)
        if workspace is None:
            raise NotFound(
                f"workspace {body.workspace_uuid!r} not found",
                code="workspace_not_found",
                param="workspace_uuid",
            )
        if workspace.archived_at is not None:
            raise Conflict("the workspace is archived", code="workspace_archived")
        user_id = account_id = None
        if body.service_account_id is not None:
            account = await ServiceAccountRepository(
                self.ctx.session, self.ctx.organization_id, workspace.id
            ).get(body.service_account_id, live=True)
            if account is None:
                raise NotFound(
                    f"service account {body.service_account_id!r} not found in the workspace",
                    code="service_account_not_found",
                    param="service_account_id",
                )
            account_id = account.id
        else:
            user_id = await self._member(workspace.id, body.user_id or "")
        expires_at = None
        if body.expiration is not None:
            expires_at = datetime.combine(body.expiration, time(), UTC)
            if expires_at <= utcnow():
                raise BadRequest(
                    "expiration must be a future date",
                    code="invalid_expiration",
                    param="expiration",
                )
        key, clear = await KeyRepository(self.ctx.session).create_key(
            kind="standard",
            organization_id=self.ctx.organization_id,
            workspace_id=workspace.id,
            user_id=user_id,
            name=body.name or "",
            expires_at=expires_at,
            created_by=self.ctx.principal.key_id,
            service_account_id=account_id,
        )
        self.ctx.audit(
            "api_key.create",
            "api_key",
            key.id,
            after={
                "name": key.name,
                "hidden_key": key.hidden_key,
                "workspace_id": workspace.id,
                "user_id": user_id,
                "service_account_id": account_id,
                "expires_at": expires_at,
            },
        )
        return key_created(key, clear)

    async def _member(self, workspace_id: str, user_id: str) -> str:
        user = await self.users.user(user_id)
        if user is None:
            raise NotFound(f"user {user_id!r} not found", code="user_not_found", param="user_id")
        if await self.workspaces.membership(workspace_id, user.id) is None:
            raise BadRequest(
                "the user is not a member of the workspace; add them first "
                "(POST /v1/admin/workspaces/{workspace_uuid}/add-users)",
                code="user_not_in_workspace",
                param="user_id",
            )
        return user.id

    async def delete_key(self, key_id: str) -> None:
        """Revoke a key; every replica refuses it once the change has committed."""
        key = await self.repo.live_standard_key(key_id)
        if key is None:
            raise NotFound(f"API key {key_id!r} not found", code="api_key_not_found")
        before = {"name": key.name, "hidden_key": key.hidden_key, "workspace_id": key.workspace_id}
        key.revoked_at = utcnow()
        await self.repo.flush()
        self.ctx.audit("api_key.delete", "api_key", key.id, before=before, after={"revoked": True})
        self.ctx.invalidate(Invalidation("key", key.id))
