"""Connector tools in conversations and agents, end to end: the builtin model's `/call` directive
calls a tool of a real MCP server, which Maestrale runs and records as a `tool.execution` entry;
failing and slow tools, confirmations (by configuration and by the server's annotations),
streaming, a request's own authorization (sealed where stored), and access rules."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client.models import CreateAgentRequestTool, CustomConnector
from sqlalchemy import select

from maestrale.agents.tables import AgentVersion
from maestrale.conversations.tables import Conversation
from tests.support.app_fixtures import API_KEY, create_tenant, make_client
from tests.support.live import on_socket
from tests.support.mcp_servers import ServerProbe

MODEL = "maestrale-echo"


async def _connector(client: httpx.AsyncClient, url: str, name: str = "tools", **extra: Any) -> str:
    created = await client.post(
        "/v1/connectors", json={"name": name, "description": "d", "server": url, **extra}
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _tool(name: str = "tools", **extra: Any) -> dict[str, Any]:
    return {"type": "connector", "connector_id": name, **extra}


async def _start(client: httpx.AsyncClient, inputs: str, **extra: Any) -> httpx.Response:
    body = {"model": MODEL, "inputs": inputs, "tools": [_tool()], **extra}
    return await client.post("/v1/conversations", json=body)


async def test_a_tool_call_is_run_and_recorded(
    conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    connector_id = await _connector(conn_client, url)
    response = await _start(conn_client, '/call echo {"text": "hi"}')
    assert response.status_code == 200, response.text
    body = response.json()
    execution, message = body["outputs"]
    assert execution["type"] == "tool.execution" and execution["name"] == "echo"
    assert json.loads(execution["arguments"]) == {"text": "hi"}
    info = execution["info"]
    assert info["output"] == "hi" and info["error"] is None and info["is_error"] is False
    assert info["connector_id"] == connector_id and info["connector_name"] == "tools"
    assert info["tool_call_id"] and info["duration_ms"] >= 0
    assert message["content"] == "tool echo returned: hi"

    history = (await conn_client.get(f"/v1/conversations/{body['conversation_id']}/history")).json()
    assert [e["type"] for e in history["entries"]] == [
        "message.input",
        "tool.execution",
        "message.output",
    ]
    # The next turn sees the result too.
    again = await conn_client.post(
        f"/v1/conversations/{body['conversation_id']}",
        json={"inputs": '/call add {"a": 1, "b": 2}'},
    )
    assert again.status_code == 200, again.text
    assert again.json()["outputs"][-1]["content"] == "tool add returned: 3"


async def test_failing_and_slow_tools_give_errors_the_model_reads(
    conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, probe = tools_server
    await _connector(conn_client, url, tool_timeout_seconds=0.5)
    failed = await _start(conn_client, '/call fail {"message": "boom"}')
    assert failed.status_code == 200, failed.text
    execution, message = failed.json()["outputs"]
    assert execution["info"]["is_error"] is True and "boom" in execution["info"]["error"]
    assert message["content"].startswith("tool fail returned: error:")

    cancelled = probe.cancellations
    started = time.monotonic()
    slow = await _start(conn_client, '/call slow {"seconds": 30}')
    assert slow.status_code == 200 and time.monotonic() - started < 10
    execution = slow.json()["outputs"][0]
    assert execution["info"]["failure"] == "timeout" and execution["info"]["error"]
    assert await probe.wait_for("cancellations", cancelled + 1, timeout=15) > cancelled


async def test_confirmations_by_configuration_and_annotation(
    conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, probe = tools_server
    await _connector(conn_client, url)
    # `destroy` is annotated destructive by its server: it waits for a confirmation.
    pending = await _start(conn_client, '/call destroy {"target": "db"}')
    assert pending.status_code == 200, pending.text
    (call,) = pending.json()["outputs"]
    assert call["type"] == "function.call" and call["confirmation_status"] == "pending"
    conversation = pending.json()["conversation_id"]
    calls_before = probe.tool_calls
    denied = await conn_client.post(
        f"/v1/conversations/{conversation}",
        json={
            "inputs": [],
            "tool_confirmations": [{"tool_call_id": call["tool_call_id"], "confirmation": "deny"}],
        },
    )
    assert denied.status_code == 200, denied.text
    execution = denied.json()["outputs"][0]
    assert execution["info"]["confirmation"] == "denied" and probe.tool_calls == calls_before

    # A request's tool_configuration asks for one on `echo`; allowed, it runs.
    asked = await _start(
        conn_client,
        '/call echo {"text": "ok"}',
        tools=[_tool(tool_configuration={"requires_confirmation": ["echo"]})],
    )
    (call,) = asked.json()["outputs"]
    assert call["confirmation_status"] == "pending"
    allowed = await conn_client.post(
        f"/v1/conversations/{asked.json()['conversation_id']}",
        json={
            "tool_confirmations": [{"tool_call_id": call["tool_call_id"], "confirmation": "allow"}]
        },
    )
    assert allowed.status_code == 200, allowed.text
    execution, message = allowed.json()["outputs"]
    assert execution["info"]["output"] == "ok" and execution["info"]["confirmation"] == "allowed"
    assert message["content"] == "tool echo returned: ok"
    # A workspace that skips confirmations of destroy lets it run at once.
    skip = await conn_client.post(
        "/v1/connectors/tools/workspace/activate", json={"skip_confirmation": ["destroy"]}
    )
    assert skip.status_code == 200
    direct = await _start(conn_client, '/call destroy {"target": "db"}')
    assert direct.json()["outputs"][0]["type"] == "tool.execution"


async def test_streamed_tool_events(
    conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    await _connector(conn_client, url)
    async with conn_client.stream(
        "POST",
        "/v1/conversations",
        json={
            "model": MODEL,
            "inputs": '/call echo {"text": "streamed"}',
            "tools": [_tool()],
            "stream": True,
        },
    ) as response:
        assert response.status_code == 200
        events = [
            json.loads(line[5:])
            async for line in response.aiter_lines()
            if line.startswith("data:")
        ]
    kinds = [e["type"] for e in events]
    assert kinds.index("tool.execution.started") < kinds.index("tool.execution.delta")
    assert kinds.index("tool.execution.delta") < kinds.index("tool.execution.done")
    done = next(e for e in events if e["type"] == "tool.execution.done")
    assert done["name"] == "echo" and done["info"]["output"] == "streamed"
    assert kinds[-1] == "conversation.response.done"


async def test_agents_and_the_sdk(
    sdk: Mistral, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    await _connector(conn_client, url)
    tools: list[CreateAgentRequestTool] = [CustomConnector(connector_id="tools")]
    agent = await sdk.beta.agents.create_async(model=MODEL, name="with-tools", tools=tools)
    response = await sdk.beta.conversations.start_async(
        agent_id=agent.id, inputs='/call add {"a": 20, "b": 22}'
    )
    execution, message = response.outputs
    assert execution.type == "tool.execution" and execution.name == "add"
    assert message.content == "tool add returned: 42"  # type: ignore[union-attr]


async def test_a_requests_own_authorization_is_used_and_stored_sealed(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    await _connector(conn_client, url)
    token = "per-request-t0ken"
    tool = _tool(authorization={"type": "api-key", "value": token})
    started = await _start(conn_client, "/call headers {}", tools=[tool])
    assert started.status_code == 200, started.text
    seen = started.json()["outputs"][0]["info"]["output"]
    assert f"Bearer {token}" in seen
    agent = await conn_client.post(
        "/v1/agents", json={"model": MODEL, "name": "a", "tools": [tool]}
    )
    assert agent.status_code == 200, agent.text
    assert token not in agent.text
    # The agent's tools as read can be sent back: the sealed value stays usable.
    shown = agent.json()["tools"][0]["authorization"]["value"]
    assert shown.startswith("sealed:")
    used = await conn_client.post(
        "/v1/conversations", json={"agent_id": agent.json()["id"], "inputs": "/call headers {}"}
    )
    assert f"Bearer {token}" in used.json()["outputs"][0]["info"]["output"]
    async with conn_app.state.services.db.transaction() as work:
        stored = [
            *(await work.session.execute(select(Conversation.tools))).scalars(),
            *(await work.session.execute(select(AgentVersion.tools))).scalars(),
        ]
    assert stored and token not in json.dumps(stored)


async def test_connectors_the_caller_cannot_use(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    await _connector(conn_client, url)
    unknown = await conn_client.post(
        "/v1/conversations",
        json={"model": MODEL, "inputs": "x", "tools": [_tool("nope")]},
    )
    assert unknown.status_code == 404 and unknown.json()["code"] == "connector_not_found"
    other = await create_tenant(conn_app.state.services.db)
    async with make_client(conn_app, other.key) as stranger:
        foreign = await _start(stranger, '/call echo {"text": "x"}')
        assert foreign.status_code == 404
    off = await conn_client.post("/v1/connectors/tools/workspace/deactivate")
    assert off.status_code == 200
    inactive = await _start(conn_client, '/call echo {"text": "x"}')
    assert inactive.status_code == 400 and inactive.json()["code"] == "connector_inactive"


async def test_a_client_that_leaves_cancels_a_direct_call(
    conn_app: FastAPI, conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    """On a real socket (the in-process transport never disconnects): closing the connection
    while `slow` runs cancels it on the MCP server."""
    url, probe = tools_server
    await _connector(conn_client, url)
    async with on_socket(conn_app) as port:
        calls, cancelled = probe.tool_calls, probe.cancellations
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        payload = b'{"arguments": {"seconds": 30}}'
        writer.write(
            f"POST /v1/connectors/tools/tools/slow/call HTTP/1.1\r\nHost: test\r\n"
            f"Authorization: Bearer {API_KEY}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
        assert await probe.wait_for("tool_calls", calls + 1, timeout=15) > calls
        writer.close()
        await writer.wait_closed()
        assert await probe.wait_for("cancellations", cancelled + 1, timeout=15) > cancelled
