"""Real MCP servers for the connector tests, built with the official SDK (`mcp.server.MCPServer`)
and served by uvicorn on a free port of a background thread.

`make_tools_server()` gives a server with a few tools (one slow, one failing, one that echoes the
HTTP headers it received) and a `ServerProbe` that counts what the server saw; `mcp_asgi_app`
turns a server into the plain ASGI app of one transport (so a test can wrap it, e.g. in a bearer
check), `serve_asgi` serves any ASGI app, `serve_mcp` does the common case in one call.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import uvicorn
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ToolAnnotations
from starlette.types import ASGIApp

Transport = Literal["streamable-http", "sse"]

# The path of the MCP endpoint of each transport: what a connector's `server` field holds.
ENDPOINT_PATHS: dict[Transport, str] = {"streamable-http": "/mcp", "sse": "/sse"}


@dataclass
class ServerProbe:
    """What a test server saw. Written by the server's thread only, read by the tests (plain
    integer stores, so no lock is needed under the GIL)."""

    initializes: int = 0
    tool_calls: int = 0
    cancel_notices: int = 0
    cancellations: int = 0

    async def wait_for(self, field: str, at_least: int, timeout: float = 5.0) -> int:
        """Poll until `field` reaches `at_least` (the server runs on another thread); returns
        the last value seen, which the caller asserts on."""
        deadline = time.monotonic() + timeout
        while True:
            value = int(getattr(self, field))
            if value >= at_least or time.monotonic() >= deadline:
                return value
            await anyio.sleep(0.02)


def make_tools_server(name: str = "maestrale-test-tools") -> tuple[MCPServer, ServerProbe]:
    """An MCP server with the tools the connector tests use, and the probe it reports to."""
    probe = ServerProbe()

    async def observe(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            probe.initializes += 1
        elif ctx.method == "notifications/cancelled":
            probe.cancel_notices += 1
        elif ctx.method == "tools/call":
            probe.tool_calls += 1
            tool = (ctx.params or {}).get("name")
            # The MCP spec makes an unknown tool a protocol error (-32602); MCPServer 2.3 answers
            # it with an isError result instead, so this server follows the spec by hand (tools
            # added to the server later count as known).
            if not isinstance(tool, str) or tool not in {t.name for t in await server.list_tools()}:
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {tool}")
        return await call_next(ctx)

    server: MCPServer = MCPServer(
        name=name,
        title="Maestrale test tools",
        description="Tools for the connector tests",
        version="1.2.3",
        website_url="https://example.com/tools",
        middleware=[observe],
        log_level="WARNING",
    )

    @server.tool(description="Return the text it is given.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Sleep for a number of seconds, then answer.")
    async def slow(seconds: float) -> str:
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            probe.cancellations += 1
            raise
        return f"slept {seconds}"

    @server.tool(description="Always fail with the message given.")
    def fail(message: str) -> str:
        # A ToolError's message reaches the client; any other exception is masked by MCPServer.
        raise ToolError(message)

    @server.tool(description="The HTTP request headers this call arrived with.")
    def headers(ctx: Context) -> dict[str, str]:
        received = ctx.headers or {}
        return {str(key).lower(): str(value) for key, value in received.items()}

    @server.tool(
        description="Pretend to destroy something.",
        annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False),
    )
    def destroy(target: str) -> str:
        return f"destroyed {target}"

    return server, probe


def mcp_asgi_app(server: MCPServer, transport: Transport) -> ASGIApp:
    """The plain ASGI app serving `server` over one transport, at `ENDPOINT_PATHS[transport]`.

    The streamable HTTP app carries the lifespan that runs the SDK's session manager, so a
    wrapping middleware must pass `lifespan` scopes through. Build a new app per serve: the
    session manager runs once.
    """
    if transport == "streamable-http":
        return server.streamable_http_app(streamable_http_path=ENDPOINT_PATHS[transport])
    return server.sse_app(sse_path=ENDPOINT_PATHS[transport])


@contextmanager
def serve_asgi(app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve `app` with uvicorn on `port` of `host` (a free one by default) from a background
    thread; yields the base URL (no trailing slash) once the server accepts connections."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="auto",
        # Open SSE streams would otherwise hold the shutdown.
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    shown = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{shown}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=5)
        sock.close()


@contextmanager
def serve_mcp(transport: Transport, host: str = "127.0.0.1") -> Iterator[tuple[str, ServerProbe]]:
    """A fresh tools server over `transport`; yields (endpoint URL, probe)."""
    server, probe = make_tools_server()
    with serve_asgi(mcp_asgi_app(server, transport), host=host) as base:
        yield f"{base}{ENDPOINT_PATHS[transport]}", probe
