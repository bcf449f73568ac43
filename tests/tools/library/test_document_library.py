"""document_library in a conversation on the builtin engine, driven by the official SDK: the
library's documents are processed for real (INGEST with the builtin embeddings model, INDEX's
hybrid search), the call is a tool.execution entry, and the answer that follows cites the
documents and pages; a library of another workspace is never reached."""

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
from maestrale.core.auth.principal import Tenant
from maestrale.tools.base import ToolContext
from maestrale.tools.library import DocumentLibrary
from tests.libraries import support_api as s
from tests.support import app_fixtures
from tests.support.app_fixtures import API_KEY

HARBOUR = (
    b"# Harbour notes\n\nThe northern quay opened in April after the storm.\n\n"
    b"Dredging of the channel happened twice, in March and in September.\n"
)
BAKERY = b"# Bakery\n\nSourdough needs a starter fed every day with flour and water.\n"


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", library_embedding_model="maestrale-embed"
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with app_fixtures.make_client(app) as c:
        yield c


@pytest.fixture
async def sdk(app: FastAPI) -> AsyncIterator[Mistral]:
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
    async with transport:
        yield Mistral(api_key=API_KEY, server_url="http://test", async_client=transport)


async def library_of(app: FastAPI, client: httpx.AsyncClient, *docs: tuple[str, bytes]) -> str:
    library_id = await s.create_library(client, "harbour")
    for name, content in docs:
        await s.uploaded(client, library_id, content, name)
    await s.run_jobs(app)
    return library_id


def call(query: str) -> str:
    return f"/call document_library {json.dumps({'query': query})}"


async def test_a_conversation_searches_a_library_and_cites_it(
    app: FastAPI, client: httpx.AsyncClient, sdk: Mistral
) -> None:
    library_id = await library_of(app, client, ("harbour.md", HARBOUR), ("bakery.md", BAKERY))
    tools: list[m.ConversationRequestTool] = [m.DocumentLibraryTool(library_ids=[library_id])]
    started = await sdk.beta.conversations.start_async(
        model="maestrale-echo", inputs=call("when was the channel dredged"), tools=tools
    )
    execution, answer = started.outputs
    assert isinstance(execution, m.ToolExecutionEntry)
    assert execution.name == "document_library"
    results = (execution.info or {})["results"]
    assert results and results[0]["document_name"] == "harbour.md" and results[0]["page"] == 1
    assert isinstance(answer, m.MessageOutputEntry) and isinstance(answer.content, list)
    text, *cited = answer.content
    assert isinstance(text, m.TextChunk) and "Dredging of the channel" in text.text
    assert cited and all(isinstance(c, m.ToolReferenceChunk) for c in cited)
    first = cited[0]
    assert isinstance(first, m.ToolReferenceChunk)
    assert first.tool == "document_library" and first.title == "harbour.md (page 1)"


async def test_another_workspace_never_reaches_the_library(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    library_id = await library_of(app, client, ("harbour.md", HARBOUR))
    services = app.state.services
    owner = await app_fixtures.default_tenant(services.db)
    other = await s.caller(services.db, owner.organization_id)
    async with app_fixtures.make_client(app, other.key) as stranger:
        refused = await stranger.post(
            "/v1/conversations",
            json={
                "model": "maestrale-echo",
                "inputs": call("channel"),
                "tools": [{"type": "document_library", "library_ids": [library_id]}],
            },
        )
    assert refused.status_code == 404, refused.text
    assert refused.json()["code"] == "library_not_found"
    # Even a toolbox built for the library runs nothing for another workspace's caller.
    tool = DocumentLibrary()
    stranger_tenant = Tenant(other.organization_id, other.workspace_id, other.user_id)
    context = ToolContext(stranger_tenant, services, {"library_ids": [library_id]})
    outcome = await tool.run(context, {"query": "channel"})
    assert outcome.error is not None and not outcome.references


async def test_bad_tool_entries_and_arguments_are_clear_errors(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    empty: list[dict[str, object]] = [{"type": "document_library", "library_ids": []}]
    for tools in (empty, [{"type": "document_library"}]):
        resp = await client.post(
            "/v1/conversations",
            json={"model": "maestrale-echo", "inputs": "hi", "tools": tools},
        )
        assert resp.status_code in (400, 422), resp.text
    library_id = await library_of(app, client, ("harbour.md", HARBOUR))
    db = app.state.services.db
    workspace = await app_fixtures.default_tenant(db)
    owner = Tenant(
        workspace.organization_id, workspace.workspace_id, await s.bootstrap_user(db, workspace)
    )
    context = ToolContext(owner, app.state.services, {"library_ids": [library_id]})
    for arguments in ({}, {"query": ""}, {"query": 7}):
        outcome = await DocumentLibrary().run(context, arguments)
        assert outcome.error is not None
    found = await DocumentLibrary().run(context, {"query": '\ud800 quay "OR" *'})
    assert found.error is None
