"""Streamed start, append and restart: SSE frames with an `event:` line per event."""

from __future__ import annotations

import json
from typing import Any

import httpx

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


async def events(client: httpx.AsyncClient, url: str, **body: Any) -> list[dict[str, Any]]:
    response = await client.post(url, json={**body, "stream": True})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    parsed: list[dict[str, Any]] = []
    for frame in response.text.split("\n\n"):
        if not frame.strip():
            continue
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        data = json.loads(data_line.removeprefix("data: "))
        assert data["type"] == event_line.removeprefix("event: ")
        parsed.append(data)
    assert "[DONE]" not in response.text
    return parsed


async def test_streamed_start_append_and_restart(client: httpx.AsyncClient) -> None:
    started = await events(
        client, "/v1/conversations", model="maestrale-echo", inputs="hello there"
    )
    kinds = [e["type"] for e in started]
    assert kinds[0] == "conversation.response.started"
    assert kinds[-1] == "conversation.response.done"
    deltas = [e for e in started if e["type"] == "message.output.delta"]
    assert len(deltas) > 1  # one per token
    assert "".join(d["content"] for d in deltas) == "echo: hello there"
    assert len({d["id"] for d in deltas}) == 1
    usage = started[-1]["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    conv_id = started[0]["conversation_id"]

    # What was streamed was stored, under the streamed entry id.
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    assert [e["type"] for e in history] == ["message.input", "message.output"]
    assert history[1]["content"] == "echo: hello there" and history[1]["id"] == deltas[0]["id"]

    appended = await events(client, f"/v1/conversations/{conv_id}", inputs="more")
    assert appended[0]["conversation_id"] == conv_id
    text = "".join(e["content"] for e in appended if e["type"] == "message.output.delta")
    assert text == "echo: more"

    restarted = await events(
        client,
        f"/v1/conversations/{conv_id}/restart",
        from_entry_id=history[0]["id"],
        inputs="again",
    )
    new_id = restarted[0]["conversation_id"]
    assert new_id != conv_id
    entries = (await client.get(f"/v1/conversations/{new_id}/history")).json()["entries"]
    assert [e.get("content") for e in entries] == ["hello there", "again", "echo: again"]


async def test_streamed_function_call_and_handoff(client: httpx.AsyncClient) -> None:
    called = await events(
        client,
        "/v1/conversations",
        model="maestrale-echo",
        tools=[WEATHER],
        inputs='/call get_weather {"city": "Nice"}',
    )
    [call] = [e for e in called if e["type"] == "function.call.delta"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Nice"}
    conv_id = called[0]["conversation_id"]
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    assert history[1]["type"] == "function.call"
    assert history[1]["tool_call_id"] == call["tool_call_id"]

    target = (await client.post("/v1/agents", json={"model": "maestrale-echo", "name": "t"})).json()
    source = (
        await client.post(
            "/v1/agents",
            json={"model": "maestrale-echo", "name": "s", "handoffs": [target["id"]]},
        )
    ).json()
    handed = await events(
        client,
        "/v1/conversations",
        agent_id=source["id"],
        inputs=f"/call handoff_to_{target['id']} {{}}",
    )
    kinds = [e["type"] for e in handed]
    assert kinds[1:3] == ["agent.handoff.started", "agent.handoff.done"]
    assert handed[2]["next_agent_id"] == target["id"]
    assert handed[-2]["type"] == "message.output.delta"
    assert handed[-2]["agent_id"] == target["id"]


async def test_streamed_errors(client: httpx.AsyncClient) -> None:
    # Checked before the stream opens: a plain 4xx.
    unknown = await client.post(
        "/v1/conversations", json={"model": "nope", "inputs": "x", "stream": True}
    )
    assert unknown.status_code == 404
    missing = await client.post("/v1/conversations/conv_nope", json={"inputs": "x", "stream": True})
    assert missing.status_code == 404
    # A failure of the model once streaming: an error event, and nothing stored.
    failed = await events(client, "/v1/conversations", model="maestrale-echo", inputs="/fail 503")
    assert failed[-1]["type"] == "conversation.response.error"
    plain = await client.post(
        "/v1/conversations", json={"model": "maestrale-echo", "inputs": "/fail 503"}
    )
    assert plain.status_code >= 500
    assert failed[-1]["code"] == plain.status_code
    assert failed[-1]["message"] == plain.json()["message"]
    assert (await client.get("/v1/conversations")).json() == []
