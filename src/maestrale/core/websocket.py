"""WebSocket answers before a connection is accepted: an error as the HTTP routes give it (its
status and JSON body) on the upgrade itself, where the server supports the ASGI denial-response
extension (uvicorn does), else a close with code 4000 + status (the usual convention for an
application's HTTP-like close codes). Unknown WebSocket paths get a 404 this way, not the 403
that a bare close before accepting makes servers answer."""

from __future__ import annotations

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from maestrale.core.errors import AppError, NotFound

# A close reason is at most 123 bytes of UTF-8.
_REASON_BYTES = 123


async def deny(websocket: WebSocket, error: AppError) -> None:
    """Refuse the WebSocket with `error` (see the module's docstring)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        response = JSONResponse(error.body(), error.status_code, headers=error.headers)
        await websocket.send_denial_response(response)
        return
    reason = error.message.encode()[:_REASON_BYTES].decode(errors="ignore")
    await websocket.close(code=4000 + error.status_code, reason=reason)


def websocket_not_found(default: ASGIApp) -> ASGIApp:
    """A router's `default` (what answers an unmatched path) that refuses unknown WebSocket
    paths with a 404 and leaves HTTP requests to `default`."""

    async def not_found(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await default(scope, receive, send)
            return
        path = str(scope.get("path", ""))[:200]
        error = NotFound(f"no WebSocket route for {path}", code="route_not_found")
        await deny(WebSocket(scope, receive, send), error)

    return not_found
