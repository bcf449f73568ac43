"""The credentials kept for connectors at each level (OAuth2 tokens, a bearer token, headers),
sealed: storing them (set by a client, or won by an OAuth2 flow, which writes once), listing and
deleting them, and the endpoint a call reaches with the ones it uses. Sealing and choosing them
is in `credentials`; who may change a level in `levels`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError

from maestrale.connectors.credentials import (
    auth_type_of,
    connector_headers,
    oauth_client,
    open_credential,
    pick,
    seal_credential,
)
from maestrale.connectors.errors import CredentialsMoved, CredentialsNotFound
from maestrale.connectors.network import ServerEndpoint
from maestrale.connectors.oauth.tokens import Tokens
from maestrale.connectors.repository import scopes_of
from maestrale.connectors.schemas import CredentialsIn
from maestrale.connectors.service import ConnectorService
from maestrale.connectors.shapes import credential_json
from maestrale.connectors.tables import Connector, ConnectorCredential
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id


class Keychain:
    """The caller's credentials for the connectors `connectors` finds for it."""

    def __init__(self, connectors: ConnectorService) -> None:
        self.connectors = connectors
        self.session = connectors.session
        self.tenant = connectors.tenant
        self.box = connectors.box
        self.repo = connectors.repo
        self.rights = connectors.rights

    async def put_credentials(self, id_or_name: str, scope: str, body: CredentialsIn) -> None:
        row = await self.connectors.row(id_or_name)
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
        scope_id = await self.rights.scope_id_to_change(scope, "manage credentials")
        self.connectors.runtime.forget()
        others = await self.repo.credentials(connector_id, [(scope, scope_id)])
        existing = next((c for c in others if c.name == name), None)
        current = existing.version if existing is not None else 0
        if expected_version is not None and current != expected_version:
            raise _moved()
        if is_default:
            await self.repo.clear_default(connector_id, scope, scope_id)
        values: dict[str, Any] = {
            "sealed": seal_credential(self.box, payload),
            "auth_type": auth_type_of(payload),
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
        rows = await self.repo.credentials(connector_id, [(scope, self.rights.scope_id(scope))])
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
        row = await self.connectors.row(id_or_name)
        scope_id = self.rights.scope_id(scope)
        rows = await self.repo.credentials(row.id, [(scope, scope_id)])
        if auth_type is not None:
            rows = [r for r in rows if r.auth_type == auth_type]
        if fetch_default:
            rows = [r for r in rows if r.is_default]
        return {
            "credentials": [credential_json(r) for r in rows],
            "connector_preset_credentials_for_auth": (
                ["none"] if connector_headers(self.box, row) else []
            ),
        }

    async def delete_credentials(self, id_or_name: str, scope: str, name: str | None) -> int:
        row = await self.connectors.row(id_or_name)
        scope_id = await self.rights.scope_id_to_change(scope, "manage credentials")
        self.connectors.runtime.forget()
        deleted = await self.repo.delete_credentials(row.id, scope, scope_id, name)
        if name is not None and not deleted:
            raise CredentialsNotFound(
                f"connector {row.name!r} has no {scope} credentials named {name[:128]!r}",
                param="credentials_name",
            )
        return deleted

    async def endpoint(self, row: Connector, credentials_name: str | None = None) -> ServerEndpoint:
        """How to reach `row` as the caller, with the credentials it would use: read now, so
        that the call itself needs no session."""
        rows = await self.repo.credentials(row.id, scopes_of(self.tenant))
        chosen = pick(rows, credentials_name)
        if credentials_name is not None and chosen is None:
            raise CredentialsNotFound(
                f"connector {row.name!r} has no credentials named {credentials_name[:128]!r}",
                param="credentials_name",
            )
        return ServerEndpoint(
            connector_id=row.id,
            name=row.name,
            server=row.server,
            headers=connector_headers(self.box, row),
            timeout=row.tool_timeout_seconds or self.connectors.settings.tool_timeout,
            credential=open_credential(self.box, chosen) if chosen is not None else None,
            oauth_metadata=row.oauth_metadata,
            oauth_client=oauth_client(self.box, row),
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
