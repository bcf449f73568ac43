"""The calls the benchmark makes: the tool `echo` through Maestrale (the direct call endpoint, and
a conversation turn of `maestrale-echo` that calls it) and straight to the MCP server with the
official client. How they are driven (closed loops, interleaved rounds) is bench/workflows'."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.harness import Call

TOOL = "echo"
TEXT = "x"
ARGUMENTS = {"text": TEXT}
# The builtin model calls the tool on this input line, then answers with the tool's result.
INPUTS = '/call echo {"text": "x"}'
ANSWER = f"tool {TOOL} returned: {TEXT}"


@asynccontextmanager
async def mcp_session(url: str) -> AsyncIterator[ClientSession]:
    """One session of the official client over streamable HTTP, kept open as a well-written
    direct client would; its tools listed once (`call_tool` validates a result against the
    tool's output schema, which it would otherwise list the tools again to learn)."""
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        yield session


def _text(content: Any) -> str:
    """The text of a tool result's single text block, "" when it has another shape."""
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        return str(content[0].get("text", ""))
    return ""


class Paths:
    """The benchmark's calls of `echo`: through Maestrale's HTTP API (aiohttp, keep-alive) and
    straight to the MCP server (one `ClientSession`). Each checks the answer; a wrong one
    raises, which the driver counts as an error."""

    def __init__(
        self, http: aiohttp.ClientSession, url: str, connector: str, session: ClientSession
    ) -> None:
        self.http = http
        self.call_url = f"{url}/v1/connectors/{connector}/tools/{TOOL}/call"
        self.conversations_url = f"{url}/v1/conversations"
        self.connector = connector
        self.session = session

    async def maestrale_call(self, i: int) -> None:
        async with self.http.post(self.call_url, json={"arguments": ARGUMENTS}) as response:
            data = await response.json()
        if response.status != 200 or _text(data.get("content")) != TEXT:
            raise RuntimeError(f"HTTP {response.status}: {str(data)[:300]}")

    async def direct_call(self, i: int) -> None:
        result = await self.session.call_tool(TOOL, ARGUMENTS)
        block = result.content[0] if len(result.content) == 1 else None
        if result.is_error or not isinstance(block, types.TextContent) or block.text != TEXT:
            raise RuntimeError(f"tool result: {str(result)[:300]}")

    def conversation(self, store: bool) -> Call:
        """A new conversation whose one turn calls `echo` (run by the server, recorded as a
        `tool.execution` entry) and answers with its result."""
        body = {
            "model": "maestrale-echo",
            "inputs": INPUTS,
            "tools": [{"type": "connector", "connector_id": self.connector}],
            "store": store,
        }

        async def call(i: int) -> None:
            async with self.http.post(self.conversations_url, json=body) as response:
                data = await response.json()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {str(data)[:300]}")
            outputs = data.get("outputs") or []
            executions = [o for o in outputs if o.get("type") == "tool.execution"]
            if len(executions) != 1 or (executions[0].get("info") or {}).get("output") != TEXT:
                raise RuntimeError(f"no tool.execution of {TOOL}: {str(outputs)[:300]}")
            if outputs[-1].get("content") != ANSWER:
                raise RuntimeError(f"unexpected answer: {str(outputs[-1])[:300]}")

        return call
