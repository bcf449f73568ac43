"""FastAPI dependencies that authenticate a request.

Standard routes take `Authorization: Bearer <key>` of a standard key; `/v1/admin` routes take
`x-api-key: <key>` of an admin key. Neither kind opens the other's routes.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from maestrale.core.app_services import app_services
from maestrale.core.auth.cache import KeyCache
from maestrale.core.auth.client_sessions.authenticate import minting_key_hash, presented_secret
from maestrale.core.auth.keys import hash_key
from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.auth.repository import KeyRepository
from maestrale.core.auth.roles import check_route_role
from maestrale.core.db import Database
from maestrale.core.errors import Unauthorized
from maestrale.tracing import span

_BEARER = "bearer "


async def resolve_key(request: HTTPConnection, key: str) -> Principal | None:
    return await resolve_key_hash(request, hash_key(key))


async def resolve_key_hash(request: HTTPConnection, key_hash: str) -> Principal | None:
    """The principal of a live key by its hash (cached), marked as used; None otherwise."""
    services = app_services(request)
    cache: KeyCache = services.key_cache
    db: Database = services.db
    with span("auth"):
        principal = await cache.lookup(key_hash, partial(_read_key, db))
    if principal is None:
        return None
    cache.mark_used(principal.key_id)
    return principal


async def _read_key(db: Database, key_hash: str) -> Principal | None:
    async with db.transaction() as work:
        return await KeyRepository(work.session).principal_for_hash(key_hash)


def _bearer(request: HTTPConnection) -> str | None:
    header = request.headers.get("authorization")
    if not header or header[:7].lower() != _BEARER:
        return None
    return header[7:].strip() or None


async def standard_principal(request: Request) -> Principal:
    return await authenticate_standard(request)


async def authenticate_standard(request: HTTPConnection) -> Principal:
    """The principal of the standard key the request (or WebSocket) presents; 401 otherwise. A
    WebSocket may present a client secret of its model instead (`client_sessions`): it acts
    as the key that minted it."""
    secret = presented_secret(request)
    if secret is not None:
        principal = await resolve_key_hash(request, await minting_key_hash(request, secret))
        if principal is None:
            raise Unauthorized(
                "the API key that minted this client secret is revoked or expired",
                code="invalid_client_secret",
            )
    else:
        key = _bearer(request)
        if key is None:
            raise Unauthorized(
                "missing API key: send it as `Authorization: Bearer <key>`",
                code="missing_api_key",
            )
        principal = await resolve_key(request, key)
        if principal is None:
            raise Unauthorized("invalid, expired or revoked API key", code="invalid_api_key")
    if principal.kind != "standard":
        raise Unauthorized(
            "admin keys open only /v1/admin endpoints; use a workspace API key",
            code="admin_key_not_allowed",
        )
    # Here, not on each route: every destructive route a standard key opens gets the check.
    check_route_role(request, principal)
    request.state.principal = principal
    return principal


async def admin_principal(request: Request) -> Principal:
    key = request.headers.get("x-api-key", "").strip()
    if not key:
        raise Unauthorized(
            "admin endpoints need an admin key in the `x-api-key` header",
            code="missing_admin_key",
        )
    principal = await resolve_key(request, key)
    if principal is None or principal.kind != "admin":
        raise Unauthorized("invalid, expired or revoked admin key", code="invalid_admin_key")
    request.state.principal = principal
    return principal


async def current_tenant(principal: Annotated[Principal, Depends(standard_principal)]) -> Tenant:
    return Tenant.of(principal)


StandardAuth = Annotated[Principal, Depends(standard_principal)]
AdminAuth = Annotated[Principal, Depends(admin_principal)]
CurrentTenant = Annotated[Tenant, Depends(current_tenant)]
