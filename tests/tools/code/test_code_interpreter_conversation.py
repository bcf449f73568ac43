"""code_interpreter in a conversation on the builtin engine, driven by the official SDK: the run
is a tool.execution entry, the model reads its output, and the file the code wrote comes back
as a ToolFileChunk that the caller downloads and another workspace cannot reach."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from maestrale.services import Services
from maestrale.tools.code import CodeInterpreter
from maestrale.tools.toolboxes import BuiltinToolboxes, JoinedToolboxes
from tests.support.app_fixtures import API_KEY, create_tenant
from tests.tools.code.support import requires_bwrap

pytestmark = requires_bwrap

CODE = "open('squares.csv', 'w').write('n,square\\n3,9\\n')\nprint(sum(range(10)))"


def with_code_interpreter(services: Services) -> None:
    """The tool in the app's toolboxes, if the server's wiring does not offer it yet."""
    toolboxes = services.toolboxes
    assert toolboxes is not None
    if not toolboxes.handles("code_interpreter"):
        own = BuiltinToolboxes(services, {"code_interpreter": CodeInterpreter()})
        services.toolboxes = JoinedToolboxes([own, toolboxes])


def sdk_of(transport: httpx.AsyncClient, key: str) -> Mistral:
    return Mistral(api_key=key, server_url="http://test", async_client=transport)


async def test_a_conversation_runs_code_and_gets_its_file(app: FastAPI) -> None:
    services: Services = app.state.services
    with_code_interpreter(services)
    other = await create_tenant(services.db)
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
    async with transport:
        sdk = sdk_of(transport, API_KEY)
        tools: list[m.ConversationRequestTool] = [m.CodeInterpreterTool()]
        arguments = json.dumps({"code": CODE})
        started = await sdk.beta.conversations.start_async(
            model="maestrale-echo", inputs=f"/call code_interpreter {arguments}", tools=tools
        )
        execution, answer = started.outputs
        assert isinstance(execution, m.ToolExecutionEntry)
        assert execution.name == "code_interpreter"
        assert execution.info is not None
        assert execution.info["exit_code"] == 0 and execution.info["stdout"] == "45\n"
        assert isinstance(answer, m.MessageOutputEntry)
        assert isinstance(answer.content, list)
        text, produced = answer.content
        assert isinstance(text, m.TextChunk)
        assert text.text.startswith("tool code_interpreter returned: exit status: 0")
        assert "45" in text.text
        assert isinstance(produced, m.ToolFileChunk)
        assert produced.tool == "code_interpreter"
        assert (produced.file_name, produced.file_type) == ("squares.csv", "csv")
        downloaded = await sdk.files.download_async(file_id=produced.file_id)
        assert await downloaded.aread() == b"n,square\n3,9\n"
        theirs = sdk_of(transport, other.key)
        with pytest.raises(SDKError) as raised:
            await theirs.files.retrieve_async(file_id=produced.file_id)
        assert raised.value.status_code == 404
