"""The network side of connectors, one per process (it hangs off the app's services): reaching
MCP servers through pooled sessions, refreshing OAuth2 tokens before they expire (once per
credential at a time in a process) and storing what it learnt in short transactions of its own.
It never runs with a request's session open: a call given its owner's `release` ends the owner's
transaction first."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from maestrale.connectors.credentials import (
    Credential,
    call_headers,
    open_credential,
    seal_credential,
)
from maestrale.connectors.mcp import McpClients, McpFailure, ServerInfo, ToolResult
from maestrale.connectors.oauth.client import OAuthError, OAuthUnavailable, refresh_tokens
from maestrale.connectors.oauth.tokens import Tokens
from maestrale.connectors.policy import ToolPolicy
from maestrale.connectors.repository import ConnectorRepository
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.crypto import SecretBox
from maestrale.core.db import Database
from maestrale.core.uow import Release

T = TypeVar("T")
MAX_RESOLVED = 10_000
# A token this close to its expiry is refreshed before it is used.
REFRESH_MARGIN = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class ServerEndpoint:
    """Everything a call to one connector needs, read from the database beforehand."""

    connector_id: str
    name: str
    server: str
    headers: dict[str, str]  # the connector's own (opened)
    timeout: float
    credential: Credential | None = None
    oauth_metadata: dict[str, Any] | None = None
    oauth_client: dict[str, Any] | None = None

    def with_authorization(self, token: str) -> ServerEndpoint:
        """This endpoint with a bearer token given by the request (a conversation tool's
        `authorization`), which replaces any stored credential."""
        headers = {**self.headers, "Authorization": f"Bearer {token}"}
        return replace(self, headers=headers, credential=None)


@dataclass(frozen=True, slots=True)
class Resolved:
    """What a direct tool call reads before it runs: the endpoint with the caller's credentials,
    the caller's policy, the connector's name."""

    endpoint: ServerEndpoint
    policy: ToolPolicy
    name: str


class ConnectorRuntime:
    def __init__(
        self,
        db: Database,
        box: SecretBox,
        clients: McpClients,
        *,
        allow_private: bool,
        cache_ttl: float = 1.0,
    ) -> None:
        self.db = db
        self.box = box
        self.clients = clients
        self.allow_private = allow_private
        self._refreshing: dict[str, asyncio.Lock] = {}
        # Resolved connectors by (tenant, connector, credentials name), trusted `cache_ttl`
        # seconds (as verified keys are): a change made here drops them at once, one made on
        # another replica applies within the TTL.
        self.cache_ttl = cache_ttl
        self._resolved: dict[tuple[Any, ...], tuple[float, Resolved]] = {}

    def resolved(self, key: tuple[Any, ...]) -> Resolved | None:
        hit = self._resolved.get(key)
        if hit is None or hit[0] < time.monotonic():
            return None
        return hit[1]

    def keep(self, key: tuple[Any, ...], value: Resolved) -> None:
        if self.cache_ttl <= 0:
            return
        if len(self._resolved) >= MAX_RESOLVED:
            self._resolved.clear()
        self._resolved[key] = (time.monotonic() + self.cache_ttl, value)

    def forget(self) -> None:
        """Drop every resolved connector (a connector, an activation or credentials changed)."""
        self._resolved.clear()

    async def aclose(self) -> None:
        await self.clients.aclose()

    async def discover(
        self, endpoint: ServerEndpoint, release: Release | None = None
    ) -> ServerInfo:
        """The server's card and tools (`release`: see `_with_auth`)."""
        return await self._with_auth(
            endpoint,
            lambda headers: self.clients.discover(
                endpoint.server, headers, timeout=endpoint.timeout
            ),
            release,
        )

    async def call(
        self,
        endpoint: ServerEndpoint,
        tool: str,
        arguments: dict[str, Any],
        release: Release | None = None,
    ) -> ToolResult:
        """Call `tool` on the server (`release`: see `_with_auth`)."""
        return await self._with_auth(
            endpoint,
            lambda headers: self.clients.call_tool(
                endpoint.server, headers, tool, arguments, timeout=endpoint.timeout
            ),
            release,
        )

    async def _with_auth(
        self,
        endpoint: ServerEndpoint,
        send: Callable[[dict[str, str]], Awaitable[T]],
        release: Release | None,
    ) -> T:
        """Send with fresh credentials; an OAuth2 credential the server refuses (401) is
        refreshed once and the request sent again (a refused request did not run). The
        caller's transaction ends first (`release`): no connection is held while the token
        endpoint or the tool server answers."""
        if release is not None:
            await release()
        self.db.check_released(f"a call to connector {endpoint.name!r}")
        credential = await self.fresh(endpoint)
        try:
            return await send(call_headers(endpoint.headers, credential))
        except McpFailure as exc:
            if exc.reason != "unauthorized" or credential is None or not credential.oauth:
                raise
            renewed = await self.fresh(endpoint, credential, force=True)
            if renewed is credential:
                raise
            return await send(call_headers(endpoint.headers, renewed))

    async def fresh(
        self, endpoint: ServerEndpoint, credential: Credential | None = None, *, force: bool = False
    ) -> Credential | None:
        """The endpoint's credential, its OAuth2 tokens refreshed when they expire within
        `REFRESH_MARGIN` (or `force`); a credential that cannot be refreshed is returned as it
        is (the server then refuses it, and the call says so)."""
        credential = credential or endpoint.credential
        if credential is None or not credential.oauth:
            return credential
        if not force and not _expiring(credential):
            return credential
        refresh_token = credential.oauth.get("refresh_token")
        if not refresh_token or endpoint.oauth_metadata is None or endpoint.oauth_client is None:
            return credential
        lock = self._refreshing.setdefault(credential.id, asyncio.Lock())
        try:
            async with lock:
                stored = await self._reload(credential)
                if stored is not None and stored.version != credential.version:
                    return stored  # refreshed meanwhile, here or by another process
                try:
                    tokens = await refresh_tokens(
                        endpoint.oauth_metadata,
                        endpoint.oauth_client,
                        refresh_token=refresh_token,
                        resource=endpoint.oauth_metadata.get("resource"),
                        scope=credential.oauth.get("scope"),
                        allow_private=self.allow_private,
                        timeout=endpoint.timeout,
                    )
                except OAuthUnavailable:
                    return credential  # the token endpoint is down: try with what there is
                except OAuthError:
                    # Another process may have used the refresh token first (a server that
                    # rotates them refuses the second use): its tokens are then the ones to use.
                    stored = await self._reload(credential)
                    if stored is not None and stored.version != credential.version:
                        return stored
                    await self._mark(credential.id, "invalid", "oauth refresh error")
                    return credential
                return await self._store(credential, tokens)
        finally:
            if not lock.locked():  # no other call waits on it
                self._refreshing.pop(credential.id, None)

    async def _reload(self, credential: Credential) -> Credential | None:
        async with self.db.transaction() as work:
            row = await ConnectorRepository(work.session, _SYSTEM).credential(credential.id)
            return open_credential(self.box, row) if row is not None else None

    async def _store(self, credential: Credential, tokens: Tokens) -> Credential:
        oauth = {**(credential.oauth or {}), **tokens.as_json()}
        payload = {
            "headers": credential.headers,
            "bearer_token": credential.bearer_token,
            "oauth": oauth,
        }
        sealed = seal_credential(self.box, payload)
        async with self.db.transaction() as work:
            stored = await ConnectorRepository(work.session, _SYSTEM).swap_tokens(
                credential.id, credential.version, sealed, tokens.expires_at
            )
        self.forget()
        if not stored:
            return await self._reload(credential) or credential
        return replace(
            credential, version=credential.version + 1, oauth=oauth, expires_at=tokens.expires_at
        )

    async def _mark(self, credential_id: str, status: str, reason: str) -> None:
        async with self.db.transaction() as work:
            await ConnectorRepository(work.session, _SYSTEM).mark_credential(
                credential_id, status, reason
            )

    async def remember(
        self,
        connector_id: str,
        info: ServerInfo | None,
        error: str | None,
        at: datetime | None = None,
    ) -> None:
        """Cache a discovery's outcome on the connector (its own short transaction)."""
        async with self.db.transaction() as work:
            await ConnectorRepository(work.session, _SYSTEM).store_tools(
                connector_id,
                card=info.card if info is not None else None,
                tools=info.tools if info is not None else None,
                error=error,
                at=at or utcnow(),
            )


# The repository's tenant for writes keyed by a row id the caller already resolved.
_SYSTEM = Tenant("", "")


def _expiring(credential: Credential) -> bool:
    expires = credential.expires_at
    if expires is None:
        return False
    return as_utc(expires) - utcnow() < REFRESH_MARGIN
