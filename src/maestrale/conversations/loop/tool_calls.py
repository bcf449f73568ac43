"""Server tool calls of a conversation: a model's call to a tool the server runs (a connector's),
run with no session open and recorded as a `tool.execution` entry, streamed as
`tool.execution.started`, `.delta` (the arguments) and `.done` (the outcome). The calls of one
model turn run concurrently and are recorded in call order; a tool that fails gives an entry with
its error, never an exception, so that the model reads the error and goes on. Cancelling the run
cancels the calls under way."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from maestrale.conversations.entries import DENIED, entry_id, now_text, tool_execution
from maestrale.conversations.server_tools import ServerTool, ServerToolbox, ToolOutcome

log = logging.getLogger("maestrale.conversations")

Emit = Callable[[dict[str, Any]], Awaitable[None]]
# The info key of the chunks a call's outcome gives the answer that follows it (citations and
# files: `tool_reference` and `tool_file`).
CHUNKS = "content_chunks"


@dataclass(frozen=True, slots=True)
class ServerCall:
    """A tool call the server answers with a tool.execution entry."""

    call_id: str  # the model's tool call id
    name: str
    arguments: str  # as the model gave them (JSON text)
    tool: ServerTool | None  # None: the tool is not offered any more (a confirmed call's)
    agent_id: str | None
    model: str
    confirmation: str | None = None  # "allowed" or "denied" once the user answered; else None


def find_tool(toolbox: ServerToolbox, name: str) -> ServerTool | None:
    return next((tool for tool in toolbox.tools() if tool.name == name), None)


def parse_arguments(text: str) -> dict[str, Any] | None:
    """The arguments of a call as an object; None when they are not one."""
    if not text.strip():
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


async def _outcome(toolbox: ServerToolbox, call: ServerCall) -> ToolOutcome | str:
    """The tool's outcome, or why it was not run."""
    if call.confirmation == "denied":
        return DENIED
    if call.tool is None:
        return f"tool {call.name!r} is not available to this conversation any more"
    arguments = parse_arguments(call.arguments)
    if arguments is None:
        return "invalid arguments: a tool call's arguments must be a JSON object"
    try:
        return await toolbox.run(call.tool, arguments)
    except Exception:  # a toolbox must not raise (see ServerToolbox.run); cancellation passes
        log.exception("server tool %s failed", call.name)
        return "the tool failed unexpectedly"


async def _execute(
    toolbox: ServerToolbox, call: ServerCall, id_: str, created_at: str
) -> dict[str, Any]:
    started = time.monotonic()
    outcome = await _outcome(toolbox, call)
    info: dict[str, Any] = {"tool_call_id": call.call_id}
    if call.tool is not None:
        info.update((k, v) for k, v in call.tool.source.items() if k != "tool_call_id")
    if isinstance(outcome, str):
        error: str | None = outcome
    else:
        error = outcome.error
        if error is None:
            info["output"] = outcome.output
    core = {
        "error": error,
        "is_error": error is not None,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "confirmation": call.confirmation,
    }
    info.update(core)
    if not isinstance(outcome, str):
        for key, value in outcome.info.items():
            info.setdefault(key, value)
        if error is None and (outcome.references or outcome.files):
            info[CHUNKS] = [*outcome.references, *outcome.files]
    return tool_execution(
        id_,
        call.name,
        call.arguments,
        call.agent_id,
        call.model,
        created_at=created_at,
        info=info,
    )


async def execute(
    toolbox: ServerToolbox,
    calls: Sequence[ServerCall],
    emit: Emit | None,
    first_index: int,
) -> list[dict[str, Any]]:
    """Run `calls` concurrently (no session may be open): their tool.execution entries, in call
    order, the first being output `first_index` of the response."""
    ids = [entry_id("tool.execution") for _ in calls]
    created = [now_text() for _ in calls]
    if emit is not None:
        for index, call in enumerate(calls):
            for event in started_events(call, ids[index], created[index], first_index + index):
                await emit(event)

    async def one(index: int) -> dict[str, Any]:
        item = await _execute(toolbox, calls[index], ids[index], created[index])
        if emit is not None:
            await emit(done_event(item, first_index + index))
        return item

    if len(calls) == 1:
        return [await one(0)]
    # A task group: cancelling the run cancels every call, and waits for them to end.
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(index)) for index in range(len(calls))]
    return [task.result() for task in tasks]


def started_events(
    call: ServerCall, id_: str, created_at: str, output_index: int
) -> list[dict[str, Any]]:
    common = {"created_at": created_at, "output_index": output_index, "id": id_}
    return [
        {
            "type": "tool.execution.started",
            **common,
            "name": call.name,
            "arguments": call.arguments,
            "model": call.model,
            "agent_id": call.agent_id,
        },
        {
            "type": "tool.execution.delta",
            **common,
            "name": call.name,
            "arguments": call.arguments,
        },
    ]


def done_event(item: dict[str, Any], output_index: int) -> dict[str, Any]:
    return {
        "type": "tool.execution.done",
        "created_at": item["completed_at"],
        "output_index": output_index,
        "id": item["id"],
        "name": item["name"],
        "info": item["info"],
    }


def chunks_of(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chunks the tool.execution entries `items` give the answer that follows them."""
    return [
        chunk
        for item in items
        if item.get("type") == "tool.execution"
        for chunk in (item.get("info") or {}).get(CHUNKS) or []
    ]
