"""image_generation in a conversation on the builtin engine, driven by the official SDK: the
answer carries a ToolFileChunk whose file the caller downloads and another workspace cannot."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from maestrale.app import create_app
from tests.support import app_fixtures
from tests.support.app_fixtures import API_KEY, create_tenant
from tests.support.mcp_servers import serve_asgi
from tests.tools.images.images_server import ImagesProbe, images_app, png


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with serve_asgi(images_app(ImagesProbe())) as base:
        yield base


@pytest.fixture
async def configured_app(
    database_url: str, tmp_path: Path, upstream: str
) -> AsyncIterator[FastAPI]:
    settings = app_fixtures.test_settings(
        database_url,
        tmp_path / "data",
        image_generation_url=f"{upstream}/b64/v1",
        image_generation_model="test-image-1",
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def sdk_of(transport: httpx.AsyncClient, key: str) -> Mistral:
    return Mistral(api_key=key, server_url="http://test", async_client=transport)


async def test_a_conversation_generates_an_image_file(configured_app: FastAPI) -> None:
    other = await create_tenant(configured_app.state.services.db)
    transport = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=configured_app), base_url="http://test"
    )
    async with transport:
        sdk = sdk_of(transport, API_KEY)
        tools: list[m.ConversationRequestTool] = [m.ImageGenerationTool()]
        arguments = json.dumps({"prompt": "a red square"})
        started = await sdk.beta.conversations.start_async(
            model="maestrale-echo", inputs=f"/call image_generation {arguments}", tools=tools
        )
        execution, answer = started.outputs
        assert isinstance(execution, m.ToolExecutionEntry)
        assert execution.name == "image_generation"
        assert isinstance(answer, m.MessageOutputEntry)
        assert isinstance(answer.content, list)
        text, produced = answer.content
        assert isinstance(text, m.TextChunk)
        assert "64x48 PNG image" in text.text
        assert isinstance(produced, m.ToolFileChunk)
        assert produced.tool == "image_generation"
        assert produced.file_type == "png"
        downloaded = await sdk.files.download_async(file_id=produced.file_id)
        assert await downloaded.aread() == png()
        theirs = sdk_of(transport, other.key)
        with pytest.raises(SDKError) as raised:
            await theirs.files.retrieve_async(file_id=produced.file_id)
        assert raised.value.status_code == 404
