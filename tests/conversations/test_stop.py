"""A run's `stop` (a voice session's barge-in) ends the streamed model turn where it is: its
text so far is the turn's message, the rest of the engine's stream is closed, and the run
ends."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import FastAPI

from maestrale.conversations.entries import entry
from maestrale.conversations.loop.run import run_turns
from maestrale.conversations.targets import Target
from maestrale.core.auth.principal import Tenant
from maestrale.gateway.hooks import Caller

LONG = " ".join(f"word{i}" for i in range(200))


async def test_stop_ends_the_answer_where_it_is(app: FastAPI, tenant: Tenant) -> None:
    stop = asyncio.Event()
    pieces: list[str] = []

    async def emit(event: dict[str, Any]) -> None:
        if event["type"] == "message.output.delta":
            pieces.append(event["content"])
            stop.set()  # the user speaks as soon as the answer starts

    async def no_agent(agent_id: str) -> Target:
        raise AssertionError(agent_id)

    result = await run_turns(
        app.state.services.gateway,
        Caller(tenant.organization_id, tenant.workspace_id),
        "conv_stop",
        Target(model="maestrale-echo"),
        [],
        override=None,
        handoff_execution="server",
        load_agent=no_agent,
        emit=emit,
        inputs=[entry("message.input", role="user", content=LONG, prefix=False)],
        stop=stop,
    )
    [message] = result.outputs
    assert len(pieces) == 1 and message["content"] == pieces[0]
    assert len(message["content"]) < len(f"echo: {LONG}") / 10
