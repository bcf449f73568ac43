"""The console's same-origin API proxy: `/console/api/v1/...` -> the public `/v1/...` route.

Every console page is a client of the public API through this proxy, which only swaps the
browser's session for the key: it opens the session of the cookie, checks the CSRF header
(every method: a page of another site can send neither), then calls the app itself in process
(a plain ASGI call, so bodies and server-sent events stream both ways, nothing buffered) with
`Authorization: Bearer <key>`, or `x-api-key: <admin key>` on `/v1/admin/`. The API's auth,
limits and errors apply unchanged. A 401 from the API (the key was revoked or has expired)
ends the session: the page then sends the user back to sign-in.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import HTTPConnection
from starlette.types import Message, Receive, Scope, Send

from maestrale.console.security import with_security_headers
from maestrale.console.session import COOKIE, OpenSession, store_of
from maestrale.core.errors import error_body
from maestrale.core.logs import request_id_var

PREFIX = "/console/api"
CSRF_HEADER = "x-csrf-token"
# What the browser's request may pass on to the API: never its cookie, nor a key of its own.
_FORWARDED = frozenset(
    {b"host", b"content-type", b"content-length", b"accept", b"range", b"user-agent"}
)
_DROPPED_FROM_RESPONSE = frozenset({b"x-request-id", b"set-cookie", b"cache-control"})


async def _refuse(send: Send, status: int, message: str, code: str, type_: str) -> None:
    body = orjson.dumps(error_body(message, type_, code))
    headers = with_security_headers(
        [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ]
    )
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def cross_site(connection: HTTPConnection) -> bool:
    """Whether the browser says the request comes from another site (`Sec-Fetch-Site`, or an
    `Origin` that is not this server's)."""
    site = connection.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    origin = connection.headers.get("origin")
    if origin is None or (origin == "null" and site == "same-origin"):
        return False
    own = f"{connection.url.scheme}://{connection.url.netloc}"
    return origin != own


def _inner_scope(scope: Scope, rest: str, session: OpenSession) -> Scope:
    app_root: str = scope.get("app_root_path", "")
    headers = [(k, v) for k, v in scope["headers"] if k in _FORWARDED]
    if rest == "/v1/admin" or rest.startswith("/v1/admin/"):
        assert session.admin_key is not None
        headers.append((b"x-api-key", session.admin_key.encode()))
    else:
        headers.append((b"authorization", b"Bearer " + session.api_key.encode()))
    request_id = request_id_var.get()
    if request_id:  # one id for both log lines of the request
        headers.append((b"x-request-id", request_id.encode()))
    raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
    marker = raw_path.find(PREFIX.encode())
    inner_raw = raw_path[:marker] + raw_path[marker + len(PREFIX) :] if marker >= 0 else b""
    inner: dict[str, Any] = {
        key: scope[key]
        for key in ("type", "asgi", "http_version", "method", "scheme", "server", "client")
        if key in scope
    }
    inner.update(
        path=app_root + rest,
        raw_path=inner_raw or (app_root + rest).encode(),
        root_path=app_root,
        query_string=scope.get("query_string", b""),
        headers=headers,
        state=dict(scope.get("state") or {}),  # the lifespan's state, as the app gives
        extensions=scope.get("extensions", {}),
    )
    return inner


class ConsoleProxy:
    """The ASGI app mounted at /console/api."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        connection = HTTPConnection(scope)
        rest = scope["path"][len(scope.get("root_path", "")) :]
        if not rest.startswith("/v1/"):
            await _refuse(
                send, 404, "the console proxies /v1 paths only", "not_found", "not_found_error"
            )
            return
        if cross_site(connection):
            await _refuse(
                send, 403, "cross-site request refused", "console_cross_site", "permission_error"
            )
            return
        store = store_of(connection)
        session = await store.open(connection.cookies.get(COOKIE))
        if session is None:
            await _refuse(
                send,
                401,
                "your console session has ended: sign in again",
                "console_session_expired",
                "authentication_error",
            )
            return
        if not session.csrf_matches(connection.headers.get(CSRF_HEADER)):
            await _refuse(
                send,
                403,
                "missing or wrong X-CSRF-Token header",
                "console_csrf_failed",
                "permission_error",
            )
            return
        admin_path = rest == "/v1/admin" or rest.startswith("/v1/admin/")
        if admin_path and session.admin_key is None:
            await _refuse(
                send,
                403,
                "the admin pages need an admin key: sign in again with one",
                "console_admin_key_missing",
                "permission_error",
            )
            return
        status = 0

        async def send_back(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                kept = [
                    h
                    for h in message.get("headers", [])
                    if h[0].lower() not in _DROPPED_FROM_RESPONSE
                ]
                kept.append((b"cache-control", b"no-store"))
                message = {**message, "headers": with_security_headers(kept)}
            await send(message)

        await scope["app"](_inner_scope(scope, rest, session), receive, send_back)
        if status == 401:  # the key was revoked or has expired: the session ends with it
            await store.delete(session.id)
