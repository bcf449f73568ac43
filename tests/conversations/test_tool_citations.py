"""The citations and files a server tool gives (`tool_reference`, `tool_file` chunks) ride on
the answer that follows it: in its content (after its text), as chunk deltas when streamed, as
the SDK parses them; and the model never reads them back (its next turn sees the text)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client import models as m

from tests.conversations.toolbox_fixture import (
    CONNECTOR,
    FixtureToolboxes,
    call,
    events,
    history,
    install,
    post,
    start,
)
from tests.support.app_fixtures import API_KEY


@pytest.fixture
def toolboxes(app: FastAPI) -> FixtureToolboxes:
    return install(app)


async def test_the_answer_after_a_tool_carries_its_citations_and_files(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    started = await start(client, inputs=call("cite", about="tides"))
    execution, answer = started["outputs"]
    assert execution["type"] == "tool.execution"
    chunks = execution["info"]["content_chunks"]
    assert [c["type"] for c in chunks] == ["tool_reference", "tool_file"]
    text, reference, produced = answer["content"]
    assert text == {"type": "text", "text": "tool cite returned: [1] the source"}
    assert reference["type"] == "tool_reference" and reference["description"] == "tides"
    assert produced["type"] == "tool_file" and produced["file_name"] == "plot.png"
    # The next turn's model reads the answer's text, not the chunks (the builtin model echoes
    # the last message; a history with chunks it could not take would be refused).
    more = await post(client, f"/v1/conversations/{started['conversation_id']}", inputs="and then?")
    assert more["outputs"][0]["content"] == "echo: and then?"
    stored = await history(client, started["conversation_id"])
    assert stored[-3]["content"] == answer["content"]


async def test_streamed_chunks_follow_the_text(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    streamed = await events(
        client,
        "/v1/conversations",
        model="maestrale-echo",
        tools=[CONNECTOR],
        inputs=call("cite", about="moon"),
    )
    deltas = [e for e in streamed if e["type"] == "message.output.delta"]
    chunk_deltas = [d for d in deltas if isinstance(d["content"], dict)]
    assert [d["content"]["type"] for d in chunk_deltas] == ["tool_reference", "tool_file"]
    assert [d["content_index"] for d in chunk_deltas] == [1, 2]
    assert all(d["id"] == deltas[0]["id"] for d in deltas)
    text = "".join(d["content"] for d in deltas if isinstance(d["content"], str))
    assert text == "tool cite returned: [1] the source"


async def test_the_sdk_parses_the_chunks(app: FastAPI, toolboxes: FixtureToolboxes) -> None:
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
    tools: list[m.ConversationRequestTool] = [m.CustomConnector(connector_id="demo")]
    async with transport:
        sdk = Mistral(api_key=API_KEY, server_url="http://test", async_client=transport)
        started = await sdk.beta.conversations.start_async(
            model="maestrale-echo",
            inputs=call("cite", about="sdk"),
            tools=tools,
        )
        answer = started.outputs[-1]
        assert isinstance(answer, m.MessageOutputEntry) and isinstance(answer.content, list)
        kinds = [type(chunk) for chunk in answer.content]
        assert kinds == [m.TextChunk, m.ToolReferenceChunk, m.ToolFileChunk]
        stream = await sdk.beta.conversations.start_stream_async(
            model="maestrale-echo",
            inputs=call("cite", about="sdk"),
            tools=tools,
        )
        parsed = [event.data async for event in stream]
        cited = [
            e.content
            for e in parsed
            if isinstance(e, m.MessageOutputEvent) and not isinstance(e.content, str)
        ]
        assert [type(c) for c in cited] == [m.ToolReferenceChunk, m.ToolFileChunk]
