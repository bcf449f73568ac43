"""The session's conversation: each user turn is a conversation request (a start on the session's
chat model, instructions and tools the first time, an append after), run by the conversation
runtime, which stores the turn's entries and holds no transaction while the model answers. An
answer cut by the user (barge-in) stops the model where it is and is stored as what was spoken
of it."""

from __future__ import annotations

import asyncio
from typing import Any

from maestrale.audio_agents.realtime.context import SessionContext
from maestrale.audio_agents.repository import AudioSessionRepository
from maestrale.conversations.executors import conversation_service
from maestrale.conversations.loop.run import Emit
from maestrale.conversations.repository import ConversationRepository
from maestrale.conversations.schemas import (
    ConversationAppend,
    ConversationResponse,
    ConversationStart,
)

SOURCE = "audio_session"


def conversation_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The session's tools as the conversation takes them: a function tool without its voice
    options (filler, timeout), the server tools as they are."""
    out = [
        {"type": "function", "function": tool["function"]}
        if tool.get("type") == "function"
        else tool
        for tool in tools
    ]
    return out or None


async def converse(
    ctx: SessionContext, inputs: str | list[dict[str, Any]], emit: Emit, stop: asyncio.Event
) -> ConversationResponse:
    """Answer `inputs` (the user's text, or the results of the client's function calls) in the
    session's conversation (started by the first turn), streaming the model's events to `emit`;
    `stop` (a barge-in) ends the model's answer where it is."""
    services = ctx.services
    started = ctx.conversation_id is None
    async with services.db.transaction() as work:
        service = conversation_service(
            services,
            work,
            ctx.caller,
            source=SOURCE,
            extra={"audio_session_id": ctx.session_id},
            tenant=ctx.tenant,
            correlation_id=ctx.session_id,
        )
        if ctx.conversation_id is None:
            body = ConversationStart.model_validate(
                {
                    "inputs": inputs,
                    "model": ctx.part("llm").get("model"),
                    "instructions": ctx.config.get("instructions"),
                    "tools": conversation_tools(ctx.config.get("tools") or []),
                    "store": True,
                    "name": f"audio session {ctx.session_id}",
                }
            )
            prepared = await service.prepare_start(body)
        else:
            append = ConversationAppend.model_validate({"inputs": inputs, "store": True})
            prepared = await service.prepare_append(ctx.conversation_id, append)
        prepared.stop = stop
        response = await service.execute(prepared, emit)
    if started:
        ctx.conversation_id = response.conversation_id
        async with services.db.transaction() as work:
            await AudioSessionRepository(work.session, ctx.tenant).update(
                ctx.session_id, conversation_id=response.conversation_id
            )
    return response


async def keep_spoken(ctx: SessionContext, response: ConversationResponse, spoken: str) -> None:
    """Store the answer's message as what was spoken of it (the rest was never heard)."""
    message: dict[str, Any] | None = next(
        (o for o in reversed(response.outputs) if o.get("type") == "message.output"), None
    )
    if message is None or ctx.conversation_id is None:
        return
    async with ctx.services.db.transaction() as work:
        await ConversationRepository(work.session, ctx.tenant).rewrite_entries(
            ctx.conversation_id, [{**message, "content": spoken}]
        )
    # The process's copy of the history holds the whole answer: read it again next turn.
    ctx.services.histories.drop((ctx.tenant.workspace_id, ctx.conversation_id))
