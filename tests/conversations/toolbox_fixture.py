"""A `ToolboxFactory` of the tests: tools of type "connector" whose `connector_id` names a set of
plain async Python functions (an echo, a slow one, a failing one, one that asks for the user's
confirmation), honouring the tool's `tool_configuration` (include, exclude,
requires_confirmation) as connectors do. It records what its tools saw."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.conversations.server_tools import ServerTool, ToolOutcome
from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.errors import NotFound
from maestrale.core.uow import UnitOfWork

Function = Callable[[dict[str, Any]], Awaitable[ToolOutcome]]
OBJECT = {"type": "object", "properties": {}}


class ConnectorNotFound(NotFound):
    code = "connector_not_found"


@dataclass
class ToolLog:
    """What the tools saw: their calls (name, arguments), the calls cancelled, whether a
    database connection was held by the calling task, and when the slow tool has started."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    held: list[bool] = field(default_factory=list)
    slow_started: asyncio.Event = field(default_factory=asyncio.Event)
    slow_cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    met: asyncio.Event = field(default_factory=asyncio.Event)
    builds: int = 0
    meeting: int = 0


@dataclass(frozen=True)
class Spec:
    function: Function
    description: str
    requires_confirmation: bool = False


def demo_set(log: ToolLog) -> dict[str, Spec]:
    async def echo(arguments: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome(str(arguments.get("text", "")), info={"content": arguments})

    async def slow(arguments: dict[str, Any]) -> ToolOutcome:
        log.slow_started.set()
        try:
            await asyncio.sleep(float(arguments.get("seconds", 60)))
        except asyncio.CancelledError:
            log.cancelled.append("slow")
            log.slow_cancelled.set()
            raise
        return ToolOutcome("slept")

    async def fail(arguments: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome("boom", error="the tool server failed: boom")

    async def delete(arguments: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome(f"deleted {arguments.get('path')}")

    async def meet(arguments: dict[str, Any]) -> ToolOutcome:
        # Answers once `arguments["count"]` calls are under way together: calls that ran one
        # after the other would never meet (and time out).
        log.meeting += 1
        if log.meeting >= int(arguments.get("count", 2)):
            log.met.set()
        try:
            await asyncio.wait_for(log.met.wait(), 10)
        except TimeoutError:
            return ToolOutcome("alone", error="nobody came")
        return ToolOutcome(f"met {arguments.get('name')}")

    async def cite(arguments: dict[str, Any]) -> ToolOutcome:
        # Answers as a search or a sandbox does: sources to cite and a file it made.
        return ToolOutcome(
            "[1] the source",
            references=[
                {
                    "type": "tool_reference",
                    "tool": "web_search",
                    "title": "The source",
                    "url": "https://example.org/source",
                    "favicon": None,
                    "description": str(arguments.get("about", "")),
                }
            ],
            files=[
                {
                    "type": "tool_file",
                    "tool": "code_interpreter",
                    "file_id": "00000000-0000-4000-8000-000000000000",
                    "file_name": "plot.png",
                    "file_type": "png",
                }
            ],
        )

    return {
        "echo": Spec(echo, "Say the text back."),
        "slow": Spec(slow, "Sleep for a while."),
        "fail": Spec(fail, "Always fails."),
        "delete": Spec(delete, "Delete a file.", requires_confirmation=True),
        "meet": Spec(meet, "Wait for the other callers."),
        "cite": Spec(cite, "Cite a source and give a file."),
    }


class FixtureToolbox:
    def __init__(self, tools: list[ServerTool], functions: dict[str, Function], log: ToolLog):
        self._tools = tools
        self._functions = functions
        self._log = log
        self.db: Database | None = None

    def tools(self) -> Sequence[ServerTool]:
        return self._tools

    async def run(self, tool: ServerTool, arguments: dict[str, Any]) -> ToolOutcome:
        self._log.calls.append((tool.name, arguments))
        if self.db is not None:
            self._log.held.append(self.db.holds_connection())
        return await self._functions[tool.name](arguments)


class FixtureToolboxes:
    """The factory: connector "demo" has the demo set; any other connector id is unknown."""

    def __init__(self, db: Database | None = None) -> None:
        self.db = db
        self.log = ToolLog()
        self.sets = {"demo": demo_set(self.log)}

    def handles(self, tool_type: str) -> bool:
        return tool_type == "connector"

    def seal(self, tenant: Tenant, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(tools)

    async def build(
        self, work: UnitOfWork, tenant: Tenant, tools: Sequence[dict[str, Any]]
    ) -> FixtureToolbox:
        await work.session.execute(sa.text("SELECT 1"))  # reads with the request's session
        self.log.builds += 1
        offered: list[ServerTool] = []
        functions: dict[str, Function] = {}
        for item in tools:
            if item.get("type") != "connector":
                continue
            connector_id = str(item.get("connector_id"))
            specs = self.sets.get(connector_id)
            if specs is None:
                raise ConnectorNotFound(f"connector {connector_id!r} not found", param="tools")
            config = item.get("tool_configuration") or {}
            include, exclude = config.get("include"), config.get("exclude") or []
            confirm = config.get("requires_confirmation") or []
            for name, spec in specs.items():
                if (include is not None and name not in include) or name in exclude:
                    continue
                offered.append(
                    ServerTool(
                        name=name,
                        description=spec.description,
                        parameters=OBJECT,
                        requires_confirmation=spec.requires_confirmation or name in confirm,
                        source={"connector_id": connector_id, "connector_name": connector_id},
                    )
                )
                functions[name] = spec.function
        toolbox = FixtureToolbox(offered, functions, self.log)
        toolbox.db = self.db
        return toolbox


def install(app: FastAPI) -> FixtureToolboxes:
    """Make the app's conversations run the fixture's tools (the test's own factory)."""
    factory = FixtureToolboxes(app.state.services.db)
    app.state.services.toolboxes = factory
    return factory


# Requests.

CONNECTOR = {"type": "connector", "connector_id": "demo"}


def call(tool: str, /, **arguments: Any) -> str:
    """The builtin model's directive to call `tool`."""
    return f"/call {tool} {json.dumps(arguments)}"


async def post(client: httpx.AsyncClient, url: str, **body: Any) -> dict[str, Any]:
    response = await client.post(url, json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def start(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    """Start a conversation on maestrale-echo with the demo connector."""
    if "agent_id" not in body:
        body.setdefault("model", "maestrale-echo")
        body.setdefault("tools", [CONNECTOR])
    return await post(client, "/v1/conversations", **body)


async def refused(client: httpx.AsyncClient, url: str, **body: Any) -> dict[str, Any]:
    response = await client.post(url, json=body)
    assert response.status_code == 400, response.text
    result: dict[str, Any] = response.json()
    return result


async def history(client: httpx.AsyncClient, conversation_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/conversations/{conversation_id}/history")
    assert response.status_code == 200, response.text
    entries: list[dict[str, Any]] = response.json()["entries"]
    return entries


def parse_events(text: str) -> list[dict[str, Any]]:
    """The events of a conversation stream, each checked against its `event:` line."""
    parsed: list[dict[str, Any]] = []
    for frame in text.split("\n\n"):
        if not frame.strip():
            continue
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        data = json.loads(data_line.removeprefix("data: "))
        assert data["type"] == event_line.removeprefix("event: ")
        parsed.append(data)
    return parsed


async def events(client: httpx.AsyncClient, url: str, **body: Any) -> list[dict[str, Any]]:
    response = await client.post(url, json={**body, "stream": True})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_events(response.text)
