"""The headers of every console response: a strict Content-Security-Policy (no inline script or
style, nothing from another origin, no framing) and its companions."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

HEADERS: dict[str, str] = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}

_RAW = [(name.encode(), value.encode()) for name, value in HEADERS.items()]
_NAMES = {name for name, _ in _RAW}


def with_security_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` (raw ASGI pairs) with the console's security headers set over theirs."""
    return [*(h for h in headers if h[0].lower() not in _NAMES), *_RAW]


class SecurityHeaders:
    """Wraps an ASGI app (the static files) so that its responses carry the headers."""

    def __init__(self, app: ASGIApp, cache_control: str | None = None) -> None:
        self.app = app
        self.cache_control = cache_control.encode() if cache_control else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = with_security_headers(message.get("headers", []))
                if self.cache_control is not None:
                    headers = [h for h in headers if h[0].lower() != b"cache-control"]
                    headers.append((b"cache-control", self.cache_control))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_secured)
