"""The MCP client of connectors against real MCP servers (the official SDK's MCPServer served by
uvicorn): discovery on both transports, tool calls, errors, timeouts and cancellation reaching
the server, session reuse, credentials, the SSRF guard, and hostile servers."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.server import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from maestrale.connectors.mcp import McpClients, McpFailure, ToolResult
from tests.support.mcp_servers import (
    ServerProbe,
    Transport,
    make_tools_server,
    mcp_asgi_app,
    serve_asgi,
    serve_mcp,
)

TRANSPORTS: list[Transport] = ["streamable-http", "sse"]
TOOLS = {"echo", "add", "slow", "fail", "headers", "destroy"}


@pytest.fixture(scope="module", params=TRANSPORTS)
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, ServerProbe]]:
    """One tools server per transport for the module (tests compare probe counts by deltas)."""
    with serve_mcp(request.param) as endpoint:
        yield endpoint


@asynccontextmanager
async def pool(**options: Any) -> AsyncIterator[McpClients]:
    """A client pool closed at the end of the block (inside the servers' blocks, so that servers
    stop with no session open)."""
    options.setdefault("allow_private", True)
    clients = McpClients(**options)
    try:
        yield clients
    finally:
        await clients.aclose()


@pytest.fixture
async def clients() -> AsyncIterator[McpClients]:
    async with pool() as clients:
        yield clients


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_discover_reads_the_card_and_the_tools(
    clients: McpClients, served: tuple[str, ServerProbe]
) -> None:
    url, _ = served
    info = await clients.discover(url, {}, timeout=10)
    card = info.card
    assert card["name"] == "maestrale-test-tools"
    assert card["version"] == "1.2.3"
    assert card["title"] == "Maestrale test tools"
    assert card["websiteUrl"] == "https://example.com/tools"
    assert "tools" in card["capabilities"]
    transport = "sse" if url.endswith("/sse") else "streamable-http"
    assert card["remotes"] == [{"type": transport, "url": url}]
    assert card["_meta"]["protocolVersion"]
    tools = {tool["name"]: tool for tool in info.tools}
    assert set(tools) == TOOLS
    echo = tools["echo"]
    assert echo["description"] == "Return the text it is given."
    assert echo["inputSchema"]["properties"]["text"]["type"] == "string"
    assert echo["inputSchema"]["required"] == ["text"]
    assert "outputSchema" in echo
    assert tools["destroy"]["annotations"] == {"destructiveHint": True, "readOnlyHint": False}


async def test_calls_return_text_and_structured_content(
    clients: McpClients, served: tuple[str, ServerProbe]
) -> None:
    url, _ = served
    echoed = await clients.call_tool(url, {}, "echo", {"text": "hello"}, timeout=10)
    assert not echoed.is_error
    assert echoed.text() == "hello"
    assert echoed.content == [{"type": "text", "text": "hello"}]
    added = await clients.call_tool(url, {}, "add", {"a": 2, "b": 40}, timeout=10)
    assert added.text() == "42"
    assert added.structured == {"result": 42}


async def test_a_failing_tool_is_an_error_result(
    clients: McpClients, served: tuple[str, ServerProbe]
) -> None:
    url, _ = served
    result = await clients.call_tool(
        url, {}, "fail", {"message": "the disk is on fire"}, timeout=10
    )
    assert result.is_error
    assert "the disk is on fire" in result.text()


async def test_an_unknown_tool_is_an_error(
    clients: McpClients, served: tuple[str, ServerProbe]
) -> None:
    url, _ = served
    with pytest.raises(McpFailure) as caught:
        await clients.call_tool(url, {}, "no_such_tool", {}, timeout=10)
    assert caught.value.reason == "error"
    assert "no_such_tool" in str(caught.value)
    # The session is still good.
    assert (await clients.call_tool(url, {}, "echo", {"text": "ok"}, timeout=10)).text() == "ok"


async def test_a_timeout_cancels_the_call_on_the_server(
    clients: McpClients, served: tuple[str, ServerProbe]
) -> None:
    url, probe = served
    await clients.discover(url, {}, timeout=10)  # the session is open: only the call is timed
    notices, cancelled = probe.cancel_notices, probe.cancellations
    started = time.monotonic()
    with pytest.raises(McpFailure) as caught:
        await clients.call_tool(url, {}, "slow", {"seconds": 30}, timeout=0.5)
    # Well under the tool's 30 s: the timeout bounds the call (a loose bound, for busy machines).
    assert time.monotonic() - started < 5
    assert caught.value.reason == "timeout"
    # The client sent notifications/cancelled, and the server stopped the tool.
    assert await probe.wait_for("cancel_notices", notices + 1) == notices + 1
    assert await probe.wait_for("cancellations", cancelled + 1) == cancelled + 1
    # The pooled session survives a timed-out call.
    assert (await clients.call_tool(url, {}, "echo", {"text": "after"}, timeout=10)).text() == (
        "after"
    )


async def test_a_cancelled_caller_cancels_the_call_on_the_server(
    clients: McpClients, served: tuple[str, ServerProbe]
) -> None:
    url, probe = served
    await clients.discover(url, {}, timeout=10)
    calls, notices, cancelled = probe.tool_calls, probe.cancel_notices, probe.cancellations
    task = asyncio.create_task(clients.call_tool(url, {}, "slow", {"seconds": 5}, timeout=30))
    assert await probe.wait_for("tool_calls", calls + 1) == calls + 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await probe.wait_for("cancel_notices", notices + 1) == notices + 1
    assert await probe.wait_for("cancellations", cancelled + 1) == cancelled + 1
    assert (await clients.call_tool(url, {}, "echo", {"text": "on"}, timeout=10)).text() == "on"


# The session tests share the module's streamable-HTTP server (`tools_server`), each with a
# pool of its own: they count what the server saw from their start on.


async def test_calls_reuse_one_session(tools_server: tuple[str, ServerProbe]) -> None:
    url, probe = tools_server
    initializes, calls = probe.initializes, probe.tool_calls
    async with pool() as clients:
        await clients.discover(url, {"X-Key": "a"}, timeout=10)
        await clients.call_tool(url, {"X-Key": "a"}, "echo", {"text": "1"}, timeout=10)
        await clients.call_tool(url, {"x-key": "a"}, "echo", {"text": "2"}, timeout=10)
        assert probe.initializes - initializes == 1
        assert probe.tool_calls - calls == 2
        # Other credentials, another session.
        await clients.call_tool(url, {"X-Key": "b"}, "echo", {"text": "3"}, timeout=10)
        assert probe.initializes - initializes == 2


async def test_concurrent_calls_share_one_session(tools_server: tuple[str, ServerProbe]) -> None:
    url, probe = tools_server
    initializes = probe.initializes
    async with pool() as clients:
        results = await asyncio.gather(
            *(clients.call_tool(url, {}, "add", {"a": n, "b": 1}, timeout=10) for n in range(8))
        )
        assert [r.structured for r in results] == [{"result": n + 1} for n in range(8)]
        assert probe.initializes - initializes == 1


async def test_idle_sessions_close(tools_server: tuple[str, ServerProbe]) -> None:
    url, probe = tools_server
    initializes = probe.initializes
    async with pool(idle_seconds=0.2) as clients:
        await clients.call_tool(url, {}, "echo", {"text": "1"}, timeout=10)
        await asyncio.sleep(0.6)
        await clients.call_tool(url, {}, "echo", {"text": "2"}, timeout=10)
        assert probe.initializes - initializes == 2


async def test_the_least_recently_used_session_closes_past_the_limit(
    tools_server: tuple[str, ServerProbe],
) -> None:
    url, probe = tools_server
    initializes = probe.initializes
    async with pool(max_sessions=1) as clients:
        for key in ("a", "b", "a"):
            await clients.call_tool(url, {"X-Key": key}, "echo", {"text": key}, timeout=10)
        assert probe.initializes - initializes == 3


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_restarted_server_gets_a_new_session(transport: Transport) -> None:
    """The old session is gone on the restarted server (its id answers 404, or its event stream
    ended): the call never ran there, so it is sent again on a fresh session."""
    async with pool() as clients:
        with serve_mcp(transport) as (url, _):
            await clients.call_tool(url, {}, "echo", {"text": "1"}, timeout=10)
        # Stopping the server blocked this loop: let the client see the old streams end, as it
        # would while a real server restarts.
        await asyncio.sleep(0.2)
        port = int(url.split(":")[2].split("/")[0])
        server, probe = make_tools_server()
        with serve_asgi(mcp_asgi_app(server, transport), port=port):
            result = await clients.call_tool(url, {}, "echo", {"text": "2"}, timeout=10)
            assert result.text() == "2"
            assert (probe.initializes, probe.tool_calls) == (1, 1)
            await clients.aclose()


async def test_headers_reach_the_server(served: tuple[str, ServerProbe]) -> None:
    url, _ = served
    headers = {"Authorization": "Bearer tok-123", "X-Api-Key": "key-456"}
    async with pool() as clients:
        result = await clients.call_tool(url, headers, "headers", {}, timeout=10)
    assert result.structured is not None
    assert result.structured["authorization"] == "Bearer tok-123"
    assert result.structured["x-api-key"] == "key-456"


async def test_a_closed_port_or_an_unknown_host_is_unreachable(clients: McpClients) -> None:
    for url in (f"http://127.0.0.1:{closed_port()}/mcp", "http://no-such-host.invalid/mcp"):
        with pytest.raises(McpFailure) as caught:
            await clients.call_tool(url, {}, "echo", {"text": "x"}, timeout=10)
        assert caught.value.reason == "unreachable", url


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"]
)
async def test_the_guard_refuses_loopback(host: str, tools_server: tuple[str, ServerProbe]) -> None:
    url, probe = tools_server
    initializes = probe.initializes
    port = url.split(":")[2].split("/")[0]
    server = f"http://{host}:{port}/mcp"
    async with pool(allow_private=False) as clients:
        with pytest.raises(McpFailure) as caught:
            await clients.discover(server, {}, timeout=10)
        assert caught.value.reason == "refused"
        with pytest.raises(McpFailure) as caught:
            await clients.call_tool(server, {}, "echo", {"text": "x"}, timeout=10)
        assert caught.value.reason == "refused"
    assert probe.initializes == initializes


async def test_a_non_http_url_is_refused(clients: McpClients) -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/mcp", "not a url"):
        with pytest.raises(McpFailure) as caught:
            await clients.discover(url, {}, timeout=5)
        assert caught.value.reason == "refused"


async def refuse(request: Request) -> Response:
    metadata = f"{request.base_url}.well-known/oauth-protected-resource/mcp"
    return Response(
        status_code=401,
        headers={
            "WWW-Authenticate": f'Bearer error="invalid_token", resource_metadata="{metadata}"'
        },
    )


async def test_a_401_is_unauthorized_with_the_resource_metadata(clients: McpClients) -> None:
    app = Starlette(routes=[Route("/mcp", refuse, methods=["GET", "POST", "DELETE"])])
    headers = {"Authorization": "Bearer sekrit-token"}
    with serve_asgi(app) as base, pytest.raises(McpFailure) as caught:
        await clients.call_tool(f"{base}/mcp", headers, "echo", {}, timeout=10)
    failure = caught.value
    assert failure.reason == "unauthorized"
    assert failure.status == 401
    assert failure.resource_metadata == f"{base}/.well-known/oauth-protected-resource/mcp"
    assert "sekrit" not in str(failure)


async def test_something_else_is_not_an_mcp_server(clients: McpClients) -> None:
    async def page(request: Request) -> Response:
        return Response("<html>hello</html>", media_type="text/html")

    app = Starlette(routes=[Route("/", page, methods=["GET"])])
    with serve_asgi(app) as base:
        for path in ("/", "/missing"):
            with pytest.raises(McpFailure) as caught:
                await clients.discover(f"{base}{path}", {}, timeout=10)
            assert caught.value.reason == "protocol", path


def hostile_server() -> MCPServer:
    server = MCPServer(name="hostile", log_level="WARNING")
    for n in range(600):
        server.add_tool(lambda: "x", name=f"tool_{n:03d}", description="many")
    server.add_tool(lambda: "x", name="fat", description="d" * (70 * 1024))

    @server.tool()
    def big() -> str:
        return "y" * (2 * 1024 * 1024)

    return server


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_hostile_servers_are_bounded(transport: Transport) -> None:
    with serve_asgi(mcp_asgi_app(hostile_server(), transport)) as base:
        url = f"{base}/mcp" if transport == "streamable-http" else f"{base}/sse"
        async with pool() as clients:
            info = await clients.discover(url, {}, timeout=20)
            assert len(info.tools) == 512
            assert "fat" not in {tool["name"] for tool in info.tools}
            with pytest.raises(McpFailure) as caught:
                await clients.call_tool(url, {}, "big", {}, timeout=20)
            assert caught.value.reason == "protocol"


async def test_arguments_the_tool_refuses_are_an_error_result(
    clients: McpClients, served: tuple[str, ServerProbe]
) -> None:
    url, _ = served
    bad: dict[str, Any] = {"a": "not a number", "b": [1]}
    result = await clients.call_tool(url, {}, "add", bad, timeout=10)
    assert result.is_error
    assert "validation error" in result.text()


async def test_a_server_that_never_answers_times_out() -> None:
    opened: list[str] = []

    async def hang(request: Request) -> Response:
        """Never answers: waits until the client hangs up (then the server has no request
        left to wait for when it stops)."""
        opened.append(request.method)
        await request.body()
        while (await request.receive())["type"] != "http.disconnect":
            pass
        return Response()

    app = Starlette(routes=[Route("/mcp", hang, methods=["GET", "POST", "DELETE"])])
    with serve_asgi(app) as base:
        async with pool() as clients:
            started = time.monotonic()
            with pytest.raises(McpFailure) as caught:
                await clients.discover(f"{base}/mcp", {}, timeout=0.5)
            assert caught.value.reason == "timeout"
            # A caller with more time than the one that started the open gets its own try.
            first = asyncio.create_task(clients.discover(f"{base}/mcp", {}, timeout=0.3))
            second = asyncio.create_task(clients.discover(f"{base}/mcp", {}, timeout=1.0))
            for task in (first, second):
                with pytest.raises(McpFailure) as caught:
                    await task
                assert caught.value.reason == "timeout"
            assert opened == ["POST", "POST", "POST"]
            assert time.monotonic() - started < 5


def without_get_streams(app: ASGIApp) -> ASGIApp:
    """A streamable HTTP server that offers no server-to-client event stream (GET is 405, which
    the MCP spec allows)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await Response(status_code=405)(scope, receive, send)
            return
        await app(scope, receive, send)

    return wrapped


async def test_a_server_without_get_streams_works() -> None:
    server, probe = make_tools_server()
    with serve_asgi(without_get_streams(mcp_asgi_app(server, "streamable-http"))) as base:
        async with pool() as clients:
            url = f"{base}/mcp"
            assert len((await clients.discover(url, {}, timeout=10)).tools) == len(TOOLS)
            echoed = await clients.call_tool(url, {}, "echo", {"text": "hi"}, timeout=10)
            assert echoed.text() == "hi"
            with pytest.raises(McpFailure) as caught:
                await clients.call_tool(url, {}, "no_such_tool", {}, timeout=10)
            assert caught.value.reason == "error"
            assert probe.initializes == 1


def test_the_text_a_model_reads() -> None:
    result = ToolResult(
        content=[
            {"type": "text", "text": "first"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "inline"}},
            {"type": "resource", "resource": {"uri": "file:///c.bin", "blob": "AA"}},
        ],
        is_error=False,
        structured=None,
        meta=None,
    )
    assert result.text().splitlines() == [
        "first",
        "[image image/png]",
        "[audio audio/wav]",
        "[resource link file:///a.txt]",
        "inline",
        "[resource file:///c.bin]",
    ]
    only_structured = ToolResult(content=[], is_error=False, structured={"n": 1}, meta=None)
    assert only_structured.text() == '{"n": 1}'
