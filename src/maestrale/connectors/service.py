"""Business rules of connectors themselves: create, read, update, delete, share, and their
activation at each level. Their credentials are in `keychain`; reaching a connector's server
(discovery, tool calls) is in `tools`; the OAuth2 flow in `authorization`. Every network call
runs with the request's transaction released."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.connectors.credentials import HEADERS, OAUTH_CLIENT, connector_headers
from maestrale.connectors.errors import (
    ConnectorForbidden,
    ConnectorNameTaken,
    ConnectorNotFound,
    ShareConflict,
)
from maestrale.connectors.http import check_host, check_url
from maestrale.connectors.levels import LEVELS, LevelRights
from maestrale.connectors.network import ConnectorRuntime
from maestrale.connectors.policy import ToolPolicy, merge
from maestrale.connectors.repository import ConnectorRepository, scopes_of
from maestrale.connectors.schemas import ConnectorCreate, ConnectorUpdate
from maestrale.connectors.shapes import connector_json
from maestrale.connectors.tables import Connector
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id
from maestrale.core.pagination import decode_cursor, encode_cursor


@dataclass(frozen=True, slots=True)
class ConnectorSettings:
    allow_private: bool
    tool_timeout: float
    tools_ttl: float
    # Origins an OAuth2 authorization may send the browser back to (`app_return_url`), besides
    # the server's own.
    return_origins: tuple[str, ...] = ()


class ConnectorService:
    """The connectors the caller can see, and what it may change of them."""

    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        runtime: ConnectorRuntime,
        settings: ConnectorSettings,
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.runtime = runtime
        self.box = runtime.box
        self.settings = settings
        self.repo = ConnectorRepository(session, tenant)
        self.rights = LevelRights(self.repo, tenant)

    # Reads.

    async def row(self, id_or_name: str) -> Connector:
        row = await self.repo.find(id_or_name)
        if row is None:
            raise ConnectorNotFound(
                f"connector {id_or_name[:200]!r} not found", param="connector_id_or_name"
            )
        return row

    async def policy(self, row: Connector, request: dict[str, Any] | None = None) -> ToolPolicy:
        return (await self.policies([row], request))[row.id]

    async def policies(
        self, rows: list[Connector], request: dict[str, Any] | None = None
    ) -> dict[str, ToolPolicy]:
        activations = await self.repo.activations([r.id for r in rows])
        order = {scope: i for i, scope in enumerate(LEVELS)}
        result: dict[str, ToolPolicy] = {}
        for row in rows:
            levels = sorted(
                (a for a in activations if a.connector_id == row.id),
                key=lambda a: order.get(a.scope, 9),
            )
            result[row.id] = merge([(a.scope, a.active, a.config or {}) for a in levels], request)
        return result

    async def describe(self, row: Connector, *, with_tools: bool = True) -> dict[str, Any]:
        policy = await self.policy(row)
        credentials = await self.repo.credentials(row.id, scopes_of(self.tenant))
        return connector_json(
            row,
            policy=policy,
            header_names=sorted(connector_headers(self.box, row)),
            credentials=credentials,
            with_tools=with_tools,
        )

    async def list_page(
        self,
        cursor: str | None,
        page_size: int,
        active: bool | None,
        supports_mcp: bool | None = None,
    ) -> dict[str, Any]:
        if not 1 <= page_size <= 1000:
            raise BadRequest(
                "page_size must be between 1 and 1000", code="invalid_page_size", param="page_size"
            )
        after = None
        if cursor:
            values = decode_cursor(cursor)
            try:
                after = (datetime.fromisoformat(values["t"]), str(values["i"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor") from exc
        rows = await self.repo.page(after, page_size + 1, active, supports_mcp)
        more = len(rows) > page_size
        rows = rows[:page_size]
        policies = await self.policies(rows)
        items = [
            connector_json(
                r,
                policy=policies[r.id],
                header_names=sorted(connector_headers(self.box, r)),
                with_tools=False,
            )
            for r in rows
        ]
        next_cursor = (
            encode_cursor({"t": rows[-1].created_at.isoformat(), "i": rows[-1].id})
            if more
            else None
        )
        return {"items": items, "pagination": {"page_size": page_size, "next_cursor": next_cursor}}

    # Writes.

    async def create(self, body: ConnectorCreate) -> Connector:
        visibility = body.visibility or ("private" if self.tenant.user_id else "shared_workspace")
        if visibility == "private" and self.tenant.user_id is None:
            raise BadRequest(
                "a private connector belongs to a user: this key has none; create it "
                "shared_workspace or with a user's key",
                code="invalid_visibility",
                param="visibility",
            )
        await check_host(body.server, allow_private=self.settings.allow_private)
        if visibility == "shared_org":
            await self.rights.require_org_admin("create an organization-wide connector")
        self._check_urls(body.server, body.icon_url)
        given = body.metadata()
        metadata = given.model_dump(mode="json") if given is not None else None
        await self._check_oauth_urls(body.oauth2_server_metadata_url, metadata)
        if await self.repo.name_taken(body.name):
            raise _name_taken(body.name)
        now = utcnow()
        row = Connector(
            id=new_id(),
            organization_id=self.tenant.organization_id,
            workspace_id=self.tenant.workspace_id,
            name=body.name,
            title=body.title,
            description=body.description,
            server=body.server,
            protocol="mcp",
            icon_url=body.icon_url,
            system_prompt=body.system_prompt,
            visibility=visibility,
            owner_type={"private": "user", "shared_workspace": "workspace"}.get(visibility, "org"),
            owner_id=(
                self.tenant.user_id
                if visibility == "private"
                else self.tenant.workspace_id
                if visibility == "shared_workspace"
                else self.tenant.organization_id
            ),
            creator_id=self.tenant.user_id,
            headers_sealed=self._seal_headers(body.all_headers()),
            oauth_client_sealed=self._seal_client(body.oauth_client()),
            oauth_metadata=metadata,
            oauth_metadata_url=body.oauth2_server_metadata_url,
            auth_methods=body.declared_methods(),
            tool_timeout_seconds=body.tool_timeout_seconds,
            created_at=now,
            modified_at=now,
        )
        self.runtime.forget()
        await self._save(row, add=True)
        return row

    async def update(self, id_or_name: str, body: ConnectorUpdate) -> Connector:
        if body.server is not None:
            await check_host(body.server, allow_private=self.settings.allow_private)
        given = body.method_metadata()
        metadata = given.model_dump(mode="json") if given is not None else None
        await self._check_oauth_urls(None, metadata)
        row = await self.row(id_or_name)
        await self.rights.require_manager(row, "update")
        fields = body.model_dump(exclude_unset=True)
        if body.name is not None and body.name != row.name:
            if await self.repo.name_taken(body.name, except_id=row.id):
                raise _name_taken(body.name)
            row.name = body.name
        for key in ("title", "description", "icon_url", "system_prompt", "tool_timeout_seconds"):
            if key in fields and (fields[key] is not None or key != "description"):
                setattr(row, key, fields[key])
        if body.server is not None and body.server != row.server:
            self._check_urls(body.server)
            row.server = body.server
            row.tools, row.server_card, row.tools_refreshed_at = None, None, None
        if body.headers_given():
            row.headers_sealed = self._seal_headers(body.all_headers())
            row.tools_refreshed_at = None
        if body.oauth_client() is not None:
            row.oauth_client_sealed = self._seal_client(body.oauth_client())
        if "auth_methods" in fields:
            row.auth_methods = body.declared_methods()
        if metadata is not None:
            row.oauth_metadata, row.oauth_metadata_url = metadata, None
        self._check_urls(row.icon_url)
        row.modified_at = utcnow()
        self.runtime.forget()
        await self._save(row, add=False)
        return row

    async def delete(self, id_or_name: str) -> None:
        row = await self.row(id_or_name)
        await self.rights.require_manager(row, "delete")
        self.runtime.forget()
        await self.repo.delete(row)

    async def share(self, connector_id: str, level: str = "workspace") -> None:
        """Give a private connector to the workspace (or, `level` "org", to the organization):
        its creator only, with the ShareConnectorToWorkspace permission (an organization admin
        for the organization)."""
        row = await self.row(connector_id)
        if row.visibility != "private":
            raise ShareConflict(
                f"connector {row.name!r} is already shared ({row.visibility})",
                code="connector_already_shared",
            )
        await self._require_share_rights(row, level)
        owner = row.workspace_id if level == "workspace" else row.organization_id
        row.visibility = "shared_workspace" if level == "workspace" else "shared_org"
        row.owner_type, row.owner_id = level, owner
        row.modified_at = utcnow()
        self.runtime.forget()
        await self.session.flush()

    async def unshare(self, connector_id: str, level: str = "workspace") -> None:
        """Give a connector shared at `level` back to its creator, private: the same rights as
        sharing it. Every credential kept for it but the creator's own is deleted."""
        row = await self.row(connector_id)
        shared = "shared_workspace" if level == "workspace" else "shared_org"
        if row.visibility != shared:
            where = "the workspace" if level == "workspace" else "the organization"
            raise ShareConflict(
                f"connector {row.name!r} is not shared with {where} ({row.visibility})",
                code="connector_not_shared",
            )
        await self._require_share_rights(row, level)
        assert row.creator_id is not None  # checked by the rights
        row.visibility, row.owner_type, row.owner_id = "private", "user", row.creator_id
        row.modified_at = utcnow()
        self.runtime.forget()
        await self.repo.delete_credentials_but(row.id, "user", row.creator_id)
        await self.session.flush()

    async def _require_share_rights(self, row: Connector, level: str) -> None:
        if row.creator_id is None or row.creator_id != self.tenant.user_id:
            raise ConnectorForbidden("only the connector's creator can share or unshare it")
        if level == "org":
            await self.rights.require_org_admin(
                "share a connector with the organization (the ShareConnectorToOrg permission)"
            )
        else:
            await self.rights.require_sharer()

    async def set_active(
        self, connector_id: str, scope: str, active: bool, config: dict[str, Any] | None
    ) -> Connector:
        row = await self.row(connector_id)
        scope_id = await self.rights.scope_id_to_change(scope, "activate or deactivate connectors")
        self.runtime.forget()
        await self.repo.set_activation(row.id, scope, scope_id, active, config or {})
        return row

    # Helpers.

    async def _save(self, row: Connector, *, add: bool) -> None:
        try:
            if add:
                await self.repo.add(row)
            else:
                await self.session.flush()
        except IntegrityError as exc:
            await self.session.rollback()
            raise _name_taken(row.name) from exc

    def _seal_headers(self, headers: dict[str, Any] | None) -> str | None:
        return self.box.seal_json(headers, HEADERS) if headers else None

    def _seal_client(self, auth: Any) -> str | None:
        if auth is None:
            return None
        client = {"client_id": auth.client_id, "client_secret": auth.client_secret}
        if auth.client_scopes:
            client["client_scopes"] = auth.client_scopes
        return self.box.seal_json(client, OAUTH_CLIENT)

    async def _check_oauth_urls(
        self, metadata_url: str | None, metadata: dict[str, Any] | None
    ) -> None:
        """The OAuth2 URLs this server will reach (the metadata document, the token and
        registration endpoints), resolved now as the server URL is: a URL that could only reach
        refused addresses is refused before it is stored. The authorization endpoint is the
        browser's, not this server's: it needs only to be an http(s) URL of no refused IP."""
        allow_private = self.settings.allow_private
        reached = [metadata_url]
        if metadata is not None:
            self._check_urls(metadata["authorization_endpoint"])
            reached += [metadata["token_endpoint"], metadata.get("registration_endpoint")]
        for url in reached:
            if url is not None and not isinstance(url, str):
                raise BadRequest("an OAuth2 endpoint must be a URL", code="invalid_url")
            if url:
                await check_host(url, allow_private=allow_private)

    def _check_urls(self, *urls: str | None) -> None:
        for url in urls:
            if url:
                check_url(url, allow_private=self.settings.allow_private)


def _name_taken(name: str) -> ConnectorNameTaken:
    return ConnectorNameTaken(
        f"a connector named {name!r} already exists in this organization", param="name"
    )
