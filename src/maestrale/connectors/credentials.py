"""Connector credentials: sealing and opening them, choosing the one a call uses, and the headers
a call sends. Nothing here touches the database or the network: storing them is the keychain's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from maestrale.connectors.tables import Connector, ConnectorCredential
from maestrale.core.crypto import SecretBox

CREDENTIAL = "connector-credential"
HEADERS = "connector-headers"
OAUTH_CLIENT = "connector-oauth-client"
# Most specific first: a user's credential wins over its workspace's, which wins over the
# organization's.
PRECEDENCE = {"user": 0, "workspace": 1, "org": 2}


@dataclass(frozen=True, slots=True)
class Credential:
    """An opened credential, as a call uses it."""

    id: str
    version: int
    scope: str
    name: str
    auth_type: str
    headers: dict[str, str] = field(default_factory=dict)
    bearer_token: str | None = None
    oauth: dict[str, Any] | None = None  # access_token, refresh_token, expires_at (ISO), scope
    expires_at: datetime | None = None

    def token(self) -> str | None:
        if self.oauth is not None:
            value = self.oauth.get("access_token")
            return value if isinstance(value, str) else None
        return self.bearer_token


def auth_type_of(payload: Mapping[str, Any]) -> str:
    if payload.get("oauth"):
        return "oauth2"
    if payload.get("bearer_token"):
        return "bearer"
    return "none"


def seal_credential(box: SecretBox, payload: Mapping[str, Any]) -> str:
    return box.seal_json(dict(payload), CREDENTIAL)


def open_credential(box: SecretBox, row: ConnectorCredential) -> Credential:
    payload = box.open_json(row.sealed, CREDENTIAL)
    return Credential(
        id=row.id,
        version=row.version,
        scope=row.scope,
        name=row.name,
        auth_type=row.auth_type,
        headers=dict(payload.get("headers") or {}),
        bearer_token=payload.get("bearer_token"),
        oauth=payload.get("oauth"),
        expires_at=row.expires_at,
    )


def connector_headers(box: SecretBox, row: Connector) -> dict[str, str]:
    """The organization-level headers of a connector, opened."""
    if not row.headers_sealed:
        return {}
    return dict(box.open_json(row.headers_sealed, HEADERS))


def oauth_client(box: SecretBox, row: Connector) -> dict[str, Any] | None:
    if not row.oauth_client_sealed:
        return None
    return dict(box.open_json(row.oauth_client_sealed, OAUTH_CLIENT))


def pick(rows: Sequence[ConnectorCredential], name: str | None) -> ConnectorCredential | None:
    """The credential a call uses: the one named `name` at the most specific level that has
    one; without a name, the most specific default, else the most specific level's first."""
    ranked = sorted(rows, key=lambda r: PRECEDENCE.get(r.scope, 9))
    if name is not None:
        return next((r for r in ranked if r.name == name), None)
    return next((r for r in ranked if r.is_default), ranked[0] if ranked else None)


def call_headers(base: Mapping[str, str], credential: Credential | None) -> dict[str, str]:
    """The headers of a call: the connector's, the credential's, then its bearer token."""
    headers = dict(base)
    if credential is not None:
        headers.update(credential.headers)
        token = credential.token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
    return headers
