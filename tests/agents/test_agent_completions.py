"""Deprecated POST /v1/agents/completions, plain and streamed."""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent
from tests.support.app_fixtures import TenantKey, make_client

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


async def agent(client: httpx.AsyncClient, **fields: Any) -> str:
    response = await client.post(
        "/v1/agents", json={"model": "maestrale-echo", "name": "a", **fields}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


async def test_plain_completion_uses_the_agent(app: FastAPI, client: httpx.AsyncClient) -> None:
    agent_id = await agent(
        client, instructions="Be brief.", tools=[WEATHER], completion_args={"max_tokens": 2}
    )
    response = await client.post(
        "/v1/agents/completions",
        json={"agent_id": agent_id, "messages": [{"role": "user", "content": "one two three"}]},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["object"] == "chat.completion" and body["model"] == "maestrale-echo"
    assert body["choices"][0]["finish_reason"] == "length"  # the agent's max_tokens
    called = await client.post(
        "/v1/agents/completions",
        json={
            "agent_id": agent_id,
            "max_tokens": 100,
            "messages": [{"role": "user", "content": '/call get_weather {"city": "Bern"}'}],
        },
    )
    message = called.json()["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["name"] == "get_weather"
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        events = (await work.session.execute(select(ChatCompletionEvent))).scalars().all()
    assert events[0].request_messages[0] == {"role": "system", "content": "Be brief."}


async def test_streamed_completion(client: httpx.AsyncClient) -> None:
    agent_id = await agent(client)
    response = await client.post(
        "/v1/agents/completions",
        json={
            "agent_id": agent_id,
            "stream": True,
            "messages": [{"role": "user", "content": "hi there"}],
        },
    )
    assert response.status_code == 200
    frames = [f for f in response.text.split("\n\n") if f]
    assert frames[-1] == "data: [DONE]"
    # Every delta has string content, the finish chunk's included (clients concatenate it).
    text = "".join(
        json.loads(f.removeprefix("data: "))["choices"][0]["delta"]["content"] for f in frames[:-1]
    )
    assert text == "echo: hi there"


async def test_errors(app: FastAPI, client: httpx.AsyncClient, other: TenantKey) -> None:
    messages = [{"role": "user", "content": "x"}]
    missing = await client.post(
        "/v1/agents/completions", json={"agent_id": "ag_nope", "messages": messages}
    )
    assert missing.status_code == 404
    web = await agent(client, tools=[{"type": "web_search"}])
    unavailable = await client.post(
        "/v1/agents/completions", json={"agent_id": web, "messages": messages}
    )
    assert unavailable.status_code == 400 and unavailable.json()["code"] == "tool_unavailable"
    bad = await client.post(
        "/v1/agents/completions",
        json={"agent_id": web, "messages": messages, "temperature": 7, "tools": []},
    )
    assert bad.status_code == 400
    assert (await client.post("/v1/agents/completions", json={"agent_id": web})).status_code == 422
    mine = await agent(client)
    async with make_client(app, other.key) as foreign:
        response = await foreign.post(
            "/v1/agents/completions", json={"agent_id": mine, "messages": messages}
        )
        assert response.status_code == 404
