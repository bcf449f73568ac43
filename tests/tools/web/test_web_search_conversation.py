"""web_search in a conversation on the builtin engine, driven by the official SDK: the call is a
tool.execution entry and the answer that follows cites the sources as ToolReferenceChunks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client import models as m

from maestrale.app import create_app
from tests.support import app_fixtures
from tests.support.app_fixtures import API_KEY
from tests.tools.web.search_server import SearchProbe

Server = tuple[str, SearchProbe]


@pytest.fixture
async def search_app(
    database_url: str, tmp_path: Path, search_server: Server
) -> AsyncIterator[FastAPI]:
    base, _ = search_server
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", web_search_url=base, web_search_allow_private=True
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def sdk(search_app: FastAPI) -> AsyncIterator[Mistral]:
    transport = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=search_app), base_url="http://test"
    )
    async with transport:
        yield Mistral(api_key=API_KEY, server_url="http://test", async_client=transport)


def call(tool: str, query: str) -> str:
    return f"/call {tool} {json.dumps({'query': query})}"


@pytest.mark.parametrize("tool", ["web_search", "web_search_premium"])
async def test_a_conversation_searches_and_cites(
    sdk: Mistral, search_server: Server, tool: str
) -> None:
    base, _ = search_server
    premium = tool == "web_search_premium"
    tools: list[m.ConversationRequestTool] = [
        m.WebSearchPremiumTool() if premium else m.WebSearchTool()
    ]
    started = await sdk.beta.conversations.start_async(
        model="maestrale-echo", inputs=call(tool, "maestrale wind"), tools=tools
    )
    execution, answer = started.outputs
    assert isinstance(execution, m.ToolExecutionEntry)
    assert execution.name == tool
    assert execution.info is not None
    assert execution.info["query"] == "maestrale wind"
    assert isinstance(answer, m.MessageOutputEntry)
    assert isinstance(answer.content, list)
    text, *references = answer.content
    assert isinstance(text, m.TextChunk)
    assert text.text.startswith(f"tool {tool} returned: Web search results for 'maestrale wind'")
    assert all(isinstance(r, m.ToolReferenceChunk) for r in references)
    cited = [r for r in references if isinstance(r, m.ToolReferenceChunk)]
    assert cited[0].url == f"{base}/pages/article"
    assert cited[0].tool == tool
    if premium:  # pages read: the article's own text and icon
        assert "It blows over Sardinia" in text.text
        assert cited[0].favicon == f"{base}/static/favicon.ico"


async def test_web_search_without_a_backend_is_a_400(app: FastAPI) -> None:
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
    async with transport:
        answer = await transport.post(
            "/v1/conversations",
            headers={"Authorization": f"Bearer {API_KEY}"},
            json={"model": "maestrale-echo", "inputs": "hi", "tools": [{"type": "web_search"}]},
        )
    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == "tool_unavailable"
    assert "MAESTRALE_WEB_SEARCH_URL" in body["message"]
