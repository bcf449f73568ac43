"""Business rules of connectors: create, read, update, delete, share, activation at each level,
and credentials. Reaching a connector's server (discovery, tool calls) is in `tools`; the OAuth2
flow in `authorization`. Every network call runs with the request's transaction released."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.admin import roles as R
from maestrale.connectors import credentials as C
from maestrale.connectors.errors import (
    ConnectorForbidden,
    ConnectorNameTaken,
    ConnectorNotFound,
    CredentialsNotFound,
    ShareIrreversible,
)
from maestrale.connectors.http import check_host, check_url
from maestrale.connectors.oauth.tokens import Tokens
from maestrale.connectors.policy import ToolPolicy, merge
from maestrale.connectors.repository import ConnectorRepository, scopes_of
from maestrale.connectors.runtime import ConnectorRuntime, Endpoint
from maestrale.connectors.schemas import ConnectorCreate, ConnectorUpdate, CredentialsIn
from maestrale.connectors.shapes import connector_json, credential_json
from maestrale.connectors.tables import Connector, ConnectorCredential
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id
from maestrale.core.pagination import decode_cursor, encode_cursor

# Workspace roles that hold the ShareConnectorToWorkspace permission.
SHARERS = frozenset({"contributor", "dev_contributor", "workspace_contributor", R.WS_ADMIN})
LEVELS = ("org", "workspace", "user")


@dataclass(frozen=True, slots=True)
class ConnectorSettings:
    allow_private: bool
    tool_timeout: float
    tools_ttl: float
    # Origins an OAuth2 authorization may send the browser back to (`app_return_url`), besides
    # the server's own.
    return_origins: tuple[str, ...] = ()


class CredentialsMoved(BadRequest):
    """Credentials changed since an OAuth2 authorization started: it was completed already (a
    `state` is good once), or another one was completed first."""

    code = "oauth_state_used"


class ConnectorService:
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
            header_names=sorted(C.connector_headers(self.box, row)),
            credentials=credentials,
            with_tools=with_tools,
        )

    async def list_page(
        self, cursor: str | None, page_size: int, active: bool | None
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
        rows = await self.repo.page(after, page_size + 1, active)
        more = len(rows) > page_size
        rows = rows[:page_size]
        policies = await self.policies(rows)
        items = [
            connector_json(
                r,
                policy=policies[r.id],
                header_names=sorted(C.connector_headers(self.box, r)),
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
            await self._require_org_admin("create an organization-wide connector")
        self._check_urls(body.server, body.icon_url)
        metadata = (
            body.oauth2_server_metadata.model_dump(mode="json")
            if body.oauth2_server_metadata is not None
            else None
        )
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
            headers_sealed=self._seal_headers(body.headers),
            oauth_client_sealed=self._seal_client(body.auth_data),
            oauth_metadata=metadata,
            oauth_metadata_url=body.oauth2_server_metadata_url,
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
        row = await self.row(id_or_name)
        await self._require_manager(row, "update")
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
        if "headers" in fields:
            row.headers_sealed = self._seal_headers(body.headers)
            row.tools_refreshed_at = None
        if body.auth_data is not None:
            row.oauth_client_sealed = self._seal_client(body.auth_data)
        self._check_urls(row.icon_url)
        row.modified_at = utcnow()
        self.runtime.forget()
        await self._save(row, add=False)
        return row

    async def delete(self, id_or_name: str) -> None:
        row = await self.row(id_or_name)
        await self._require_manager(row, "delete")
        self.runtime.forget()
        await self.repo.delete(row)

    async def share(self, connector_id: str) -> None:
        row = await self.row(connector_id)
        if row.visibility != "private":
            raise ShareIrreversible(
                f"connector {row.name!r} is already shared ({row.visibility})",
                code="connector_already_shared",
            )
        if row.creator_id is None or row.creator_id != self.tenant.user_id:
            raise ConnectorForbidden("only the connector's creator can share it")
        org_roles, ws_roles = await self.repo.roles()
        if not SHARERS.intersection(ws_roles) and R.ORG_ADMIN not in org_roles:
            raise ConnectorForbidden(
                "sharing a connector needs the ShareConnectorToWorkspace permission of the "
                "workspace role (contributor, dev_contributor, workspace_contributor or "
                "workspace_admin)"
            )
        row.visibility, row.owner_type, row.owner_id = (
            "shared_workspace",
            "workspace",
            row.workspace_id,
        )
        row.modified_at = utcnow()
        self.runtime.forget()
        await self.session.flush()

    async def unshare(self, connector_id: str) -> None:
        row = await self.row(connector_id)
        if row.visibility == "private":
            raise ShareIrreversible(
                f"connector {row.name!r} is not shared", code="connector_not_shared"
            )
        raise ShareIrreversible(
            f"sharing connector {row.name!r} cannot be undone: workspace members may rely on it."
            " Create a private connector instead, or delete this one"
        )

    async def set_active(
        self, connector_id: str, scope: str, active: bool, config: dict[str, Any] | None
    ) -> Connector:
        row = await self.row(connector_id)
        scope_id = await self._level(scope, "activate or deactivate connectors")
        self.runtime.forget()
        await self.repo.set_activation(row.id, scope, scope_id, active, config or {})
        return row

    # Credentials.

    async def put_credentials(self, id_or_name: str, scope: str, body: CredentialsIn) -> None:
        row = await self.row(id_or_name)
        payload = body.credentials.model_dump(mode="json") if body.credentials else {}
        expires_at = None
        if payload.get("oauth"):
            tokens = _tokens(payload["oauth"])
            payload["oauth"], expires_at = tokens.as_json(), tokens.expires_at
        await self.store_credentials(
            row.id,
            scope,
            body.name,
            {k: v for k, v in payload.items() if v},
            expires_at,
            title=body.title,
            is_default=body.is_default,
        )

    async def store_credentials(
        self,
        connector_id: str,
        scope: str,
        name: str,
        payload: dict[str, Any],
        expires_at: datetime | None,
        *,
        title: str | None = None,
        is_default: bool | None = None,
        expected_version: int | None = None,
    ) -> None:
        """Create or replace the caller's credentials `name` at `scope` (sealed). The first
        credentials of a level are its default. With `expected_version` (0: none yet), only over
        the credentials at that version, else CredentialsMoved and nothing is written."""
        scope_id = await self._level(scope, "manage credentials")
        self.runtime.forget()
        others = await self.repo.credentials(connector_id, [(scope, scope_id)])
        existing = next((c for c in others if c.name == name), None)
        current = existing.version if existing is not None else 0
        if expected_version is not None and current != expected_version:
            raise _moved()
        if is_default:
            await self.repo.clear_default(connector_id, scope, scope_id)
        values: dict[str, Any] = {
            "sealed": C.seal_credential(self.box, payload),
            "auth_type": C.auth_type_of(payload),
            "expires_at": expires_at,
            "status": "valid",
            "status_reason": None,
            "updated_at": utcnow(),
        }
        if title is not None:
            values["title"] = title
        if is_default is not None or existing is None:
            values["is_default"] = bool(is_default) or not others
        if existing is None:
            await self._add_credential(
                ConnectorCredential(
                    id=new_id(),
                    connector_id=connector_id,
                    organization_id=self.tenant.organization_id,
                    scope=scope,
                    scope_id=scope_id,
                    name=name,
                    version=1,
                    created_at=values["updated_at"],
                    **values,
                ),
                racing=expected_version is not None,
            )
            return
        if expected_version is not None:
            # Compare and swap: another callback of the same state may be between its read and
            # its write too.
            if not await self.repo.swap_credential(existing.id, expected_version, values):
                raise _moved()
            self.session.expire(existing)  # read again, with what was just written
            return
        for key, value in values.items():
            setattr(existing, key, value)
        existing.version += 1
        await self.session.flush()

    async def credential_version(self, connector_id: str, scope: str, name: str) -> int:
        """The version of the caller's credentials `name` at `scope`, 0 when there are none."""
        rows = await self.repo.credentials(connector_id, [(scope, self._scope_id(scope))])
        return next((c.version for c in rows if c.name == name), 0)

    async def _add_credential(self, row: ConnectorCredential, *, racing: bool) -> None:
        try:
            await self.repo.add_credential(row)
        except IntegrityError:
            if not racing:
                raise
            await self.session.rollback()
            raise _moved() from None

    async def list_credentials(
        self, id_or_name: str, scope: str, auth_type: str | None, fetch_default: bool
    ) -> dict[str, Any]:
        row = await self.row(id_or_name)
        scope_id = self._scope_id(scope)
        rows = await self.repo.credentials(row.id, [(scope, scope_id)])
        if auth_type is not None:
            rows = [r for r in rows if r.auth_type == auth_type]
        if fetch_default:
            rows = [r for r in rows if r.is_default]
        return {
            "credentials": [credential_json(r) for r in rows],
            "connector_preset_credentials_for_auth": (
                ["none"] if C.connector_headers(self.box, row) else []
            ),
        }

    async def delete_credentials(self, id_or_name: str, scope: str, name: str | None) -> int:
        row = await self.row(id_or_name)
        scope_id = await self._level(scope, "manage credentials")
        self.runtime.forget()
        deleted = await self.repo.delete_credentials(row.id, scope, scope_id, name)
        if name is not None and not deleted:
            raise CredentialsNotFound(
                f"connector {row.name!r} has no {scope} credentials named {name[:128]!r}",
                param="credentials_name",
            )
        return deleted

    # Endpoints (what the network side needs).

    async def endpoint(self, row: Connector, credentials_name: str | None = None) -> Endpoint:
        """How to reach `row` as the caller, with the credentials it would use: read now, so
        that the call itself needs no session."""
        rows = await self.repo.credentials(row.id, scopes_of(self.tenant))
        chosen = C.pick(rows, credentials_name)
        if credentials_name is not None and chosen is None:
            raise CredentialsNotFound(
                f"connector {row.name!r} has no credentials named {credentials_name[:128]!r}",
                param="credentials_name",
            )
        return Endpoint(
            connector_id=row.id,
            name=row.name,
            server=row.server,
            headers=C.connector_headers(self.box, row),
            timeout=row.tool_timeout_seconds or self.settings.tool_timeout,
            credential=C.open_credential(self.box, chosen) if chosen is not None else None,
            oauth_metadata=row.oauth_metadata,
            oauth_client=C.oauth_client(self.box, row),
        )

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
        return self.box.seal_json(headers, C.HEADERS) if headers else None

    def _seal_client(self, auth: Any) -> str | None:
        if auth is None:
            return None
        client = {"client_id": auth.client_id, "client_secret": auth.client_secret}
        return self.box.seal_json(client, C.OAUTH_CLIENT)

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

    def _scope_id(self, scope: str) -> str:
        if scope == "org":
            return self.tenant.organization_id
        if scope == "workspace":
            return self.tenant.workspace_id
        if self.tenant.user_id is None:
            raise BadRequest("user-level settings need a user: this key has none", code="no_user")
        return self.tenant.user_id

    async def _level(self, scope: str, what: str) -> str:
        """The id of the caller's `scope` level, once it is allowed to change it: a user its
        own; a workspace admin (or a key without a user, which acts for its workspace) its
        workspace; an organization admin the organization."""
        scope_id = self._scope_id(scope)
        if scope == "user":
            return scope_id
        org_roles, ws_roles = await self.repo.roles()
        if R.ORG_ADMIN in org_roles:
            return scope_id
        if scope == "workspace" and (self.tenant.user_id is None or R.WS_ADMIN in ws_roles):
            return scope_id
        raise ConnectorForbidden(
            f"only an {'organization' if scope == 'org' else 'workspace'} admin can {what} at "
            f"the {scope} level"
        )

    async def _require_org_admin(self, what: str) -> None:
        org_roles, _ = await self.repo.roles()
        if R.ORG_ADMIN not in org_roles:
            raise ConnectorForbidden(f"only an organization admin can {what}")

    async def _require_manager(self, row: Connector, what: str) -> None:
        """A private connector is managed by its owner; a shared one by its creator or an
        admin of its level."""
        if row.visibility == "private" or row.creator_id == self.tenant.user_id:
            return
        org_roles, ws_roles = await self.repo.roles()
        if R.ORG_ADMIN in org_roles:
            return
        if row.visibility == "shared_workspace" and (
            self.tenant.user_id is None or R.WS_ADMIN in ws_roles
        ):
            return
        raise ConnectorForbidden(
            f"only the connector's creator or an admin can {what} connector {row.name!r}"
        )


def _tokens(given: dict[str, Any]) -> Tokens:
    """Tokens a client sets (the SDK's OAuth2Token: `expires_in` seconds or `expires_at`)."""
    expires_at: datetime | None = None
    if given.get("expires_in") is not None:
        expires_at = utcnow() + timedelta(seconds=int(given["expires_in"]))
    elif isinstance(given.get("expires_at"), str):
        try:
            expires_at = as_utc(datetime.fromisoformat(given["expires_at"]))
        except ValueError as exc:
            raise BadRequest(
                "credentials.oauth.expires_at must be an ISO 8601 date-time",
                param="credentials.oauth.expires_at",
            ) from exc
    return Tokens(
        access_token=given["access_token"],
        token_type=given.get("token_type") or "Bearer",
        refresh_token=given.get("refresh_token"),
        expires_at=expires_at,
        scope=given.get("scope"),
    )


def _moved() -> CredentialsMoved:
    return CredentialsMoved(
        "this authorization was completed already, or the credentials changed since it "
        "started; start the sign-in again"
    )


def _name_taken(name: str) -> ConnectorNameTaken:
    return ConnectorNameTaken(
        f"a connector named {name!r} already exists in this organization", param="name"
    )
