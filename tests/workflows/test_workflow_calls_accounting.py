"""Model calls a workflow's activities make (the official worker's clients send `x-metadata` with
the execution id) are recorded with the execution as their correlation id."""

from __future__ import annotations

import json

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent

META = {"x-metadata": json.dumps({"call_type": "workflows", "execution_id": "exec-42"})}


async def _correlations(app: FastAPI) -> dict[str, str]:
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        events = (await work.session.execute(select(ChatCompletionEvent))).scalars().all()
    return {e.request_messages[-1]["content"]: e.correlation_id for e in events}


async def test_chat_and_conversation_calls_carry_the_execution(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    chat = {"model": "maestrale-echo", "messages": [{"role": "user", "content": "from a flow"}]}
    assert (await client.post("/v1/chat/completions", json=chat, headers=META)).status_code == 200
    started = await client.post(
        "/v1/conversations",
        json={"model": "maestrale-echo", "inputs": "conversation in a flow"},
        headers=META,
    )
    assert started.status_code == 200, started.text
    plain = {"model": "maestrale-echo", "messages": [{"role": "user", "content": "plain"}]}
    await client.post("/v1/chat/completions", json=plain)
    odd = {"x-metadata": json.dumps({"call_type": "other", "execution_id": "x"})}
    bad = {"x-metadata": "{not json"}
    for n, headers in enumerate((odd, bad)):
        body = {"model": "maestrale-echo", "messages": [{"role": "user", "content": f"odd {n}"}]}
        assert (await client.post("/v1/chat/completions", json=body, headers=headers)).is_success

    correlations = await _correlations(app)
    assert correlations["from a flow"] == "exec-42"
    assert correlations["conversation in a flow"] == "exec-42"
    assert correlations["plain"] != "exec-42"
    assert correlations["odd 0"] != "x" and correlations["odd 1"]
