"""All SQL of connectors, scoped to what the caller may see: its organization's shared
connectors, its workspace's, and its own private ones. A connector outside that scope is not
found (404), whatever its id."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, exists, false, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin import roles as role_catalog
from maestrale.connectors.tables import Connector, ConnectorActivation, ConnectorCredential
from maestrale.core.auth.principal import Tenant
from maestrale.core.auth.tables import User, WorkspaceMember
from maestrale.core.pagination import keyset_after

SHARED_ORG = ("shared_org", "shared_global")


def scopes_of(tenant: Tenant) -> list[tuple[str, str]]:
    """The levels that apply to a caller, least specific first."""
    levels = [("org", tenant.organization_id), ("workspace", tenant.workspace_id)]
    if tenant.user_id is not None:
        levels.append(("user", tenant.user_id))
    return levels


def visible_to(tenant: Tenant) -> ColumnElement[bool]:
    own: ColumnElement[bool] = (
        and_(Connector.visibility == "private", Connector.owner_id == tenant.user_id)
        if tenant.user_id is not None
        else false()
    )
    return and_(
        Connector.organization_id == tenant.organization_id,
        or_(
            Connector.visibility.in_(SHARED_ORG),
            and_(
                Connector.workspace_id == tenant.workspace_id,
                or_(Connector.visibility == "shared_workspace", own),
            ),
        ),
    )


def _deactivated(tenant: Tenant) -> ColumnElement[bool]:
    """A level that applies to the caller switched the connector off."""
    return exists().where(
        ConnectorActivation.connector_id == Connector.id,
        ConnectorActivation.active.is_(False),
        or_(
            *(
                and_(ConnectorActivation.scope == scope, ConnectorActivation.scope_id == scope_id)
                for scope, scope_id in scopes_of(tenant)
            )
        ),
    )


class ConnectorRepository:
    def __init__(self, session: AsyncSession, tenant: Tenant) -> None:
        self.session = session
        self.tenant = tenant

    # Connectors.

    async def find(self, id_or_name: str) -> Connector | None:
        stmt = select(Connector).where(
            visible_to(self.tenant), or_(Connector.id == id_or_name, Connector.name == id_or_name)
        )
        rows = list((await self.session.execute(stmt)).scalars())
        # An id wins over another connector's name that happens to equal it.
        return next((r for r in rows if r.id == id_or_name), rows[0] if rows else None)

    async def find_many(self, ids_or_names: Sequence[str]) -> list[Connector]:
        wanted = list(dict.fromkeys(ids_or_names))
        stmt = select(Connector).where(
            visible_to(self.tenant), or_(Connector.id.in_(wanted), Connector.name.in_(wanted))
        )
        return list((await self.session.execute(stmt)).scalars())

    async def name_taken(self, name: str, except_id: str | None = None) -> bool:
        stmt = select(Connector.id).where(
            Connector.organization_id == self.tenant.organization_id, Connector.name == name
        )
        if except_id is not None:
            stmt = stmt.where(Connector.id != except_id)
        return (await self.session.execute(stmt.limit(1))).first() is not None

    async def page(
        self,
        after: tuple[datetime, str] | None,
        limit: int,
        active: bool | None,
        supports_mcp: bool | None = None,
    ) -> list[Connector]:
        stmt = select(Connector).where(visible_to(self.tenant))
        if supports_mcp is not None:
            is_mcp = Connector.protocol == "mcp"
            stmt = stmt.where(is_mcp if supports_mcp else ~is_mcp)
        if after is not None:
            stmt = stmt.where(
                keyset_after([Connector.created_at, Connector.id], [after[0], after[1]])
            )
        if active is not None:
            off = _deactivated(self.tenant)
            stmt = stmt.where(~off if active else off)
        stmt = stmt.order_by(Connector.created_at, Connector.id).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def add(self, row: Connector) -> None:
        self.session.add(row)
        await self.session.flush()

    async def delete(self, row: Connector) -> None:
        await self.session.execute(delete(Connector).where(Connector.id == row.id))

    async def store_tools(
        self,
        connector_id: str,
        *,
        card: dict[str, Any] | None,
        tools: list[dict[str, Any]] | None,
        error: str | None,
        at: datetime,
    ) -> None:
        """Cache what the server said of itself (or why it could not be reached); a failed
        refresh keeps the tools known before."""
        values: dict[str, Any] = {"tools_refreshed_at": at, "tools_error": error}
        if tools is not None:
            values.update(tools=tools, server_card=card)
        await self.session.execute(
            update(Connector).where(Connector.id == connector_id).values(**values)
        )

    # Activations.

    async def activations(self, connector_ids: Sequence[str]) -> list[ConnectorActivation]:
        """The activation rows of these connectors at the levels that apply to the caller."""
        if not connector_ids:
            return []
        stmt = select(ConnectorActivation).where(
            ConnectorActivation.connector_id.in_(list(connector_ids)),
            or_(
                *(
                    and_(
                        ConnectorActivation.scope == scope,
                        ConnectorActivation.scope_id == scope_id,
                    )
                    for scope, scope_id in scopes_of(self.tenant)
                )
            ),
        )
        return list((await self.session.execute(stmt)).scalars())

    async def set_activation(
        self, connector_id: str, scope: str, scope_id: str, active: bool, config: dict[str, Any]
    ) -> None:
        row = await self.session.get(ConnectorActivation, (connector_id, scope, scope_id))
        if row is None:
            row = ConnectorActivation(
                connector_id=connector_id,
                scope=scope,
                scope_id=scope_id,
                organization_id=self.tenant.organization_id,
            )
            self.session.add(row)
        row.active = active
        if active:
            row.config = config
        await self.session.flush()

    # Roles of the caller.

    async def roles(self) -> tuple[list[str], list[str]]:
        """The caller's organization roles and its roles in its workspace (no user: none)."""
        if self.tenant.user_id is None:
            return [], []
        user = await self.session.get(User, self.tenant.user_id)
        member = await self.session.get(
            WorkspaceMember, (self.tenant.workspace_id, self.tenant.user_id)
        )
        return (
            role_catalog.ORG.names(user.roles if user is not None else []),
            role_catalog.WORKSPACE.names(member.roles if member is not None else []),
        )

    # Credentials.

    async def credentials(
        self, connector_id: str, scopes: Sequence[tuple[str, str]]
    ) -> list[ConnectorCredential]:
        if not scopes:
            return []
        stmt = (
            select(ConnectorCredential)
            .where(
                ConnectorCredential.connector_id == connector_id,
                or_(
                    *(
                        and_(
                            ConnectorCredential.scope == scope,
                            ConnectorCredential.scope_id == scope_id,
                        )
                        for scope, scope_id in scopes
                    )
                ),
            )
            .order_by(ConnectorCredential.created_at, ConnectorCredential.id)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def add_credential(self, row: ConnectorCredential) -> None:
        self.session.add(row)
        await self.session.flush()

    async def clear_default(self, connector_id: str, scope: str, scope_id: str) -> None:
        await self.session.execute(
            update(ConnectorCredential)
            .where(
                ConnectorCredential.connector_id == connector_id,
                ConnectorCredential.scope == scope,
                ConnectorCredential.scope_id == scope_id,
            )
            .values(is_default=False)
        )

    async def delete_credentials(
        self, connector_id: str, scope: str, scope_id: str, name: str | None
    ) -> int:
        stmt = delete(ConnectorCredential).where(
            ConnectorCredential.connector_id == connector_id,
            ConnectorCredential.scope == scope,
            ConnectorCredential.scope_id == scope_id,
        )
        if name is not None:
            stmt = stmt.where(ConnectorCredential.name == name)
        result = await self.session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def delete_credentials_but(self, connector_id: str, scope: str, scope_id: str) -> None:
        """Delete every credential of the connector, at any level, but those of one level."""
        await self.session.execute(
            delete(ConnectorCredential).where(
                ConnectorCredential.connector_id == connector_id,
                ~and_(ConnectorCredential.scope == scope, ConnectorCredential.scope_id == scope_id),
            )
        )

    async def swap_tokens(
        self, credential_id: str, version: int, sealed: str, expires_at: datetime | None
    ) -> bool:
        """Store refreshed tokens over the ones at `version` only (another process may have
        refreshed them first: then nothing is written and False is returned)."""
        result = await self.session.execute(
            update(ConnectorCredential)
            .where(ConnectorCredential.id == credential_id, ConnectorCredential.version == version)
            .values(
                sealed=sealed,
                expires_at=expires_at,
                version=version + 1,
                status="valid",
                status_reason=None,
            )
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def swap_credential(
        self, credential_id: str, version: int, values: dict[str, Any]
    ) -> bool:
        """Write `values` over the credentials at `version` only; False when they moved."""
        result = await self.session.execute(
            update(ConnectorCredential)
            .where(ConnectorCredential.id == credential_id, ConnectorCredential.version == version)
            .values(**values, version=version + 1)
            .execution_options(synchronize_session=False)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def credential(self, credential_id: str) -> ConnectorCredential | None:
        return await self.session.get(ConnectorCredential, credential_id)

    async def mark_credential(self, credential_id: str, status: str, reason: str | None) -> None:
        await self.session.execute(
            update(ConnectorCredential)
            .where(ConnectorCredential.id == credential_id)
            .values(status=status, status_reason=reason)
        )


class SealedColumn:
    """One column of sealed values, in every row of its table whatever its tenant: what the
    operator's `secrets reseal` rewrites under the current key."""

    def __init__(
        self,
        session: AsyncSession,
        # Any table with an `id` primary key (other domains' sealed columns too: `SEALED`).
        table: type[Any],
        column: str,
    ) -> None:
        self.session = session
        self.table = table
        self.column = getattr(table, column)
        self.name = column

    async def values(self) -> list[tuple[str, str | None]]:
        """`(row id, sealed value)` of every row."""
        found = await self.session.execute(select(self.table.id, self.column))
        return [(str(row_id), value) for row_id, value in found.all()]

    async def replace(self, row_id: str, old: str, new: str) -> None:
        """Put `new` in place of `old` in the row (left alone if it changed meanwhile)."""
        await self.session.execute(
            update(self.table)
            .where(self.table.id == row_id, self.column == old)
            .values({self.name: new})
        )
