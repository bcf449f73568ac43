"""A resource server guard for the connector tests: wraps any ASGI app (an MCP server from
`tests.support.mcp_servers`) so that it needs a Bearer token issued by a test authorization
server (`tests.support.oauth_server`), the way an MCP server does under the MCP authorization
spec: a 401 with `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728 §5.1) without a
valid token, and its protected resource metadata at the well-known URLs.

    with serve_oauth() as auth, serve_protected_mcp(auth) as (url, guard, probe):
        ...  # url: the MCP endpoint; guard.accepted / guard.refused count the requests
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.support.mcp_servers import (
    ENDPOINT_PATHS,
    ServerProbe,
    Transport,
    make_tools_server,
    mcp_asgi_app,
    serve_asgi,
)
from tests.support.oauth_server import OAuthServer

PRM_PATH = "/.well-known/oauth-protected-resource"


@dataclass
class BearerProtected:
    """The guard. `resource_url` None: the resource is this server's `resource_path`, at
    whatever host the request names (the port is only known once served)."""

    app: ASGIApp
    auth_server: OAuthServer
    resource_url: str | None = None
    resource_path: str = "/mcp"
    # False: the 401 carries no resource_metadata, so a client must find the well-known URLs.
    advertise: bool = True
    # True: only tokens issued for this resource (RFC 8707) are accepted.
    require_resource: bool = False
    scopes: tuple[str, ...] = ("tools:read", "tools:call")
    accepted: int = 0
    refused: int = 0

    def resource(self, headers: Headers, scope: Scope) -> str:
        if self.resource_url:
            return self.resource_url
        return f"{scope.get('scheme', 'http')}://{headers.get('host', '')}{self.resource_path}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the MCP app's session manager runs in it
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        resource = self.resource(headers, scope)
        base = resource.split("/", 3)
        origin = "/".join(base[:3])
        if scope["path"] in (PRM_PATH, f"{PRM_PATH}{self.resource_path}"):
            document = {
                "resource": resource,
                "authorization_servers": [self.auth_server.issuer],
                "scopes_supported": list(self.scopes),
                "bearer_methods_supported": ["header"],
            }
            await JSONResponse(document)(scope, receive, send)
            return
        kind, _, token = headers.get("authorization", "").partition(" ")
        wanted = resource if self.require_resource else None
        if kind.lower() == "bearer" and token and self.auth_server.store.valid(token, wanted):
            self.accepted += 1
            await self.app(scope, receive, send)
            return
        self.refused += 1
        params = [f'resource_metadata="{origin}{PRM_PATH}"'] if self.advertise else []
        if token:
            params.append('error="invalid_token"')
        challenge = "Bearer " + ", ".join(params) if params else "Bearer"
        body: dict[str, Any] = {"error": "invalid_token" if token else "unauthorized"}
        response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)


def bearer_protected(
    app: ASGIApp, auth_server: OAuthServer, resource_url: str | None = None, **options: Any
) -> BearerProtected:
    """`app` behind a Bearer check against `auth_server` (`BearerProtected` options)."""
    return BearerProtected(app, auth_server, resource_url, **options)


async def initialize_status(url: str, token: str | None, timeout: float = 5) -> tuple[int, str]:
    """How an MCP endpoint answers an `initialize` with `token` (or none): (status,
    WWW-Authenticate). Headers only: a streamable HTTP answer may be an event stream."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    async with (
        httpx.AsyncClient(timeout=timeout) as http,
        http.stream("POST", url, json=body, headers=headers) as response,
    ):
        return response.status_code, response.headers.get("www-authenticate", "")


@contextmanager
def serve_protected_mcp(
    auth_server: OAuthServer, transport: Transport = "streamable-http", **options: Any
) -> Iterator[tuple[str, BearerProtected, ServerProbe]]:
    """A fresh tools server behind the guard; yields (MCP endpoint URL, guard, probe)."""
    server, probe = make_tools_server("maestrale-protected-tools")
    path = ENDPOINT_PATHS[transport]
    guard = bearer_protected(
        mcp_asgi_app(server, transport), auth_server, resource_path=path, **options
    )
    with serve_asgi(guard) as base:
        yield f"{base}{path}", guard, probe
