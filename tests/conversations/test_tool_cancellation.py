"""A client that goes away while a server tool runs cancels the call, and its request stores
nothing: plain requests (the server's `http.disconnect`) and streams, on a real socket (the
in-process transport never disconnects)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.conversations.toolbox_fixture import (
    CONNECTOR,
    FixtureToolboxes,
    call,
    history,
    install,
    post,
    start,
)
from tests.support.app_fixtures import API_KEY
from tests.support.live import on_socket

WAIT = 15


@pytest.fixture
def toolboxes(app: FastAPI) -> FixtureToolboxes:
    return install(app)


@pytest.fixture
async def port(app: FastAPI) -> AsyncIterator[int]:
    """`app` served on a real socket."""
    async with on_socket(app) as number:
        yield number


async def send_and_leave(
    port: int, path: str, body: dict[str, Any], toolboxes: FixtureToolboxes, until: bytes = b""
) -> bytes:
    """POST `body` on a raw connection, wait until the slow tool runs (and the response holds
    `until`), then close the connection; what was received."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = json.dumps(body).encode()
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {API_KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
    await asyncio.wait_for(toolboxes.log.slow_started.wait(), WAIT)
    received = b""
    while until not in received:
        received += await asyncio.wait_for(reader.read(65536), WAIT)
    writer.close()
    await writer.wait_closed()
    return received


async def cancelled(toolboxes: FixtureToolboxes) -> None:
    await asyncio.wait_for(toolboxes.log.slow_cancelled.wait(), WAIT)
    assert toolboxes.log.cancelled == ["slow"]


async def test_leaving_a_plain_start_cancels_the_tool_and_stores_nothing(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes, port: int
) -> None:
    body = {"model": "maestrale-echo", "tools": [CONNECTOR], "inputs": call("slow")}
    await send_and_leave(port, "/v1/conversations", body, toolboxes)
    await cancelled(toolboxes)
    assert (await client.get("/v1/conversations")).json() == []


async def test_leaving_a_plain_append_cancels_the_tool_and_gives_the_turn_back(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes, port: int
) -> None:
    conv_id = (await start(client, inputs="hello"))["conversation_id"]
    path = f"/v1/conversations/{conv_id}"
    await send_and_leave(port, path, {"inputs": call("slow")}, toolboxes)
    await cancelled(toolboxes)
    assert len(await history(client, conv_id)) == 2  # nothing stored
    # The turn was given back: the next append answers at once.
    after = await asyncio.wait_for(post(client, path, inputs="still there?"), WAIT)
    assert after["outputs"][0]["content"] == "echo: still there?"


async def test_leaving_a_stream_cancels_the_tool_and_gives_the_turn_back(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes, port: int
) -> None:
    conv_id = (await start(client, inputs="hello"))["conversation_id"]
    path = f"/v1/conversations/{conv_id}"
    body = {"inputs": call("slow"), "stream": True}
    received = await send_and_leave(port, path, body, toolboxes, b"tool.execution.delta")
    assert b"event: tool.execution.started" in received
    await cancelled(toolboxes)
    assert len(await history(client, conv_id)) == 2
    after = await asyncio.wait_for(post(client, path, inputs="still there?"), WAIT)
    assert after["outputs"][0]["content"] == "echo: still there?"


async def test_a_request_that_stays_gets_its_answer(toolboxes: FixtureToolboxes, port: int) -> None:
    """The disconnect watch does not end a request whose client waits for it."""
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {API_KEY}"}
    ) as live:
        started = await start(live, inputs=call("slow", seconds=0.2))
    execution, answer = started["outputs"]
    assert execution["info"]["output"] == "slept"
    assert answer["content"] == "tool slow returned: slept"
    assert toolboxes.log.cancelled == []
