"""`McpFailure`, the one exception the MCP client raises, and the classifier that turns whatever
the SDK, httpx2 or a hostile server threw into one of its reasons.

Messages are written here, never copied from an HTTP exception (whose text can hold a header
value); a server's own JSON-RPC error text is kept, shortened, with the request's header values
blanked out.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Literal

import httpx2
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from maestrale.connectors.http import refusal_of
from maestrale.connectors.mcp.wire import CallScope, HttpWatch, resource_metadata_of

logger = logging.getLogger(__name__)

Reason = Literal["refused", "unreachable", "timeout", "unauthorized", "protocol", "error"]

_MAX_MESSAGE = 300
_MIN_SECRET = 4


class McpFailure(Exception):
    """A tool server could not be used. `reason` says why:

    - "refused": the SSRF guard refused the URL or the address it resolves to;
    - "unreachable": connection refused, DNS failure, connection lost;
    - "timeout": the call's time budget ran out (the request was cancelled toward the server);
    - "unauthorized": HTTP 401/403 (`status`; `resource_metadata` from an RFC 9728 challenge);
    - "protocol": not an MCP server, or an answer that is not valid MCP (or too large);
    - "error": the server answered with a JSON-RPC error (`code`), e.g. an unknown tool.

    `str(exc)` is a message for humans that never holds a header value or a token.
    """

    def __init__(
        self,
        reason: Reason,
        message: str,
        *,
        status: int | None = None,
        resource_metadata: str | None = None,
        code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.reason: Reason = reason
        self.status = status
        self.resource_metadata = resource_metadata
        self.code = code


class WrongTransport(McpFailure):
    """The opening request was answered 400/404/405: the other MCP transport may be there."""


def server_text(text: object, secrets: Iterable[str]) -> str:
    """A server-provided message, made safe to show: one line, bounded, header values blanked."""
    shown = " ".join(str(text).split())[:_MAX_MESSAGE]
    for secret in secrets:
        if len(secret) >= _MIN_SECRET:
            shown = shown.replace(secret, "[redacted]")
    return shown


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def root_cause(exc: BaseException) -> BaseException:
    """The exception that matters in what anyio task groups raise: the first leaf that is not a
    cancellation."""
    for leaf in _leaves(exc):
        if isinstance(leaf, Exception):
            return leaf
    return exc


def unauthorized(status: int, resource_metadata: str | None) -> McpFailure:
    """The failure of a server that refused the credentials."""
    return McpFailure(
        "unauthorized",
        f"the MCP server refused the credentials (HTTP {status})",
        status=status,
        resource_metadata=resource_metadata,
    )


def classify(
    exc: BaseException,
    watch: HttpWatch | None,
    scope: CallScope | None,
    secrets: Iterable[str] = (),
    *,
    opening: bool = False,
) -> McpFailure:
    """The McpFailure for `exc`, raised by the SDK while opening a session (`opening`) or
    running a request on it; `watch` holds what the HTTP answers said about the session,
    `scope` what they said to the requests of this call (or of the opening)."""
    if watch is not None and watch.auth_status is not None:
        return unauthorized(watch.auth_status, watch.resource_metadata)
    cause = root_cause(exc)
    if isinstance(cause, McpFailure):
        return cause
    status = scope.status if scope is not None else None
    if scope is not None and scope.too_large:
        return McpFailure("protocol", "the MCP server's answer is too large", status=status)
    if isinstance(cause, MCPError):
        return _from_mcp_error(cause, watch, status, secrets, opening=opening)
    failure = _from_exception(cause, opening=opening)
    if failure.reason == "protocol" and failure.status is None and status is not None:
        return McpFailure("protocol", f"the MCP server answered HTTP {status}", status=status)
    return failure


def _from_mcp_error(
    exc: MCPError,
    watch: HttpWatch | None,
    status: int | None,
    secrets: Iterable[str],
    *,
    opening: bool,
) -> McpFailure:
    if exc.code == REQUEST_TIMEOUT:
        return McpFailure("timeout", "the MCP server did not answer in time")
    if exc.code == CONNECTION_CLOSED:
        if watch is not None and watch.transport_error is not None:
            return _from_exception(watch.transport_error, opening=opening)
        if watch is not None and watch.expired:
            return McpFailure("unreachable", "the MCP server ended the session")
        return McpFailure("unreachable", "the connection to the MCP server was closed")
    if watch is not None and watch.expired:
        return McpFailure("unreachable", "the MCP server ended the session", status=404)
    detail = server_text(exc.message, secrets)
    if opening:
        first = watch.first_status if watch is not None else None
        if first in (400, 404, 405):
            return WrongTransport(
                "protocol",
                f"the server did not take the MCP handshake (HTTP {first}: {detail})",
                status=first,
            )
        return McpFailure(
            "protocol", f"the MCP handshake failed: {detail}", status=status, code=exc.code
        )
    if status is not None:
        # The transport stands a JSON-RPC error in for an HTTP error answer to this request.
        return McpFailure(
            "protocol", f"the MCP server answered HTTP {status}", status=status, code=exc.code
        )
    return McpFailure("error", detail or "MCP error", code=exc.code)


def _from_exception(exc: BaseException, *, opening: bool) -> McpFailure:
    if refusal_of(exc) is not None:
        return McpFailure(
            "refused",
            "the MCP server's address is a loopback, private, link-local or reserved address; "
            "connectors may not reach it",
        )
    if isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
        if status in (401, 403):
            return unauthorized(
                status, resource_metadata_of(exc.response.headers.get_list("www-authenticate"))
            )
        if opening and status in (400, 404, 405):
            return WrongTransport("protocol", f"not an MCP server (HTTP {status})", status=status)
        return McpFailure("protocol", f"the MCP server answered HTTP {status}", status=status)
    if isinstance(exc, httpx2.TimeoutException | TimeoutError):
        return McpFailure("timeout", "the MCP server did not answer in time")
    if isinstance(exc, httpx2.ConnectError):
        return McpFailure("unreachable", "cannot connect to the MCP server")
    if isinstance(exc, httpx2.SSEError):
        return McpFailure(
            "protocol", "the MCP server's event stream is broken or carries an oversized event"
        )
    if isinstance(exc, httpx2.NetworkError | httpx2.RemoteProtocolError):
        return McpFailure("unreachable", "the connection to the MCP server was lost")
    if isinstance(exc, httpx2.HTTPError | httpx2.StreamError):
        return McpFailure("protocol", "the MCP server's HTTP answer is not valid")
    if isinstance(exc, ValidationError):
        return McpFailure("protocol", "the MCP server's answer is not valid MCP")
    # Only the type: an unexpected exception's text could hold anything.
    logger.warning("unexpected MCP client failure: %s", type(exc).__name__)
    return McpFailure("protocol", f"the MCP server could not be used ({type(exc).__name__})")
