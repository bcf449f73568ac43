"""A streamed start, append or restart that the server refuses is refused before its stream
opens: the same status and body as the plain request, never a 200 then an error event."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

PNG = "data:image/png;base64,iVBORw0KGgo="  # never decoded: the model has no vision
IMAGE_INPUT = [
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG}}]},
]
BLOCK = {"block_on_error": False, "moderation_llm_v1": {"model_name": "maestrale-echo-moderation"}}
WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}
ECHO = {"model": "maestrale-echo"}

# (name, body of the start) — each refused with a 4xx.
STARTS: list[tuple[str, dict[str, Any]]] = [
    ("unknown model", {"model": "no-such-model", "inputs": "x"}),
    ("not a chat model", {"model": "maestrale-embed", "inputs": "x"}),
    ("no target", {"inputs": "x"}),
    ("unknown agent", {"agent_id": "ag_missing", "inputs": "x"}),
    ("unknown agent version", {"agent_id": "@web", "agent_version": 99, "inputs": "x"}),
    ("agent tool of the wrong type", {"agent_id": "@web", "inputs": "x"}),
    ("tool of the wrong type", {**ECHO, "tools": [{"type": "web_search"}], "inputs": "x"}),
    ("empty inputs", {**ECHO, "inputs": []}),
    ("system input", {**ECHO, "inputs": [{"role": "system", "content": "x"}]}),
    ("image to a model without vision", {**ECHO, "inputs": IMAGE_INPUT}),
    (
        "unanswered function result",
        {
            **ECHO,
            "inputs": [
                {"type": "function.result", "tool_call_id": "nope", "result": "x"},
            ],
        },
    ),
    ("guardrail block", {**ECHO, "guardrails": [BLOCK], "inputs": "/flag violence_and_threats"}),
    (
        "max_tokens over the context",
        {**ECHO, "completion_args": {"max_tokens": 10**9}, "inputs": "x"},
    ),
    (
        "json_schema without a schema",
        {**ECHO, "inputs": "x", "completion_args": {"response_format": {"type": "json_schema"}}},
    ),
    (
        "unknown response format",
        {**ECHO, "inputs": "x", "completion_args": {"response_format": {"type": "yaml"}}},
    ),
    (
        "tool_choice any without tools",
        {**ECHO, "completion_args": {"tool_choice": "any"}, "inputs": "x"},
    ),
    ("temperature out of range", {**ECHO, "completion_args": {"temperature": 9}, "inputs": "x"}),
    ("no inputs", {**ECHO}),
]

# (name, body of an append to a conversation with a pending get_weather call and a guardrail).
APPENDS: list[tuple[str, dict[str, Any]]] = [
    ("unknown conversation", {"@url": "/v1/conversations/conv_nope", "inputs": "x"}),
    (
        "unanswered function result",
        {
            "inputs": [
                {"type": "function.result", "tool_call_id": "nope", "result": "x"},
            ]
        },
    ),
    ("image to a model without vision", {"inputs": IMAGE_INPUT}),
    ("guardrail block", {"inputs": "/flag violence_and_threats"}),
    ("max_tokens over the context", {"inputs": "x", "completion_args": {"max_tokens": 10**9}}),
    (
        "unknown response format",
        {"inputs": "x", "completion_args": {"response_format": {"type": "yaml"}}},
    ),
    (
        "tool confirmations",
        {
            "inputs": "x",
            "tool_confirmations": [
                {"tool_call_id": "abc", "confirmation": "allow"},
            ],
        },
    ),
    ("bad handoff_execution", {"inputs": "x", "handoff_execution": "nobody"}),
]

RESTARTS: list[tuple[str, dict[str, Any]]] = [
    ("unknown entry", {"from_entry_id": "msg_nope", "inputs": "x"}),
    ("agent_version of a model conversation", {"@entry": True, "agent_version": 2, "inputs": "x"}),
    ("image to a model without vision", {"@entry": True, "inputs": IMAGE_INPUT}),
    ("guardrail block", {"@entry": True, "inputs": "/flag violence_and_threats"}),
    (
        "max_tokens over the context",
        {"@entry": True, "inputs": "x", "completion_args": {"max_tokens": 10**9}},
    ),
]


async def both(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> None:
    plain = await client.post(url, json={**body, "stream": False})
    streamed = await client.post(url, json={**body, "stream": True})
    assert 400 <= plain.status_code < 500, plain.text
    assert streamed.status_code == plain.status_code, streamed.text
    assert streamed.headers["content-type"].startswith("application/json"), streamed.text
    plain_body, streamed_body = plain.json(), streamed.json()
    if isinstance(plain_body.get("detail"), list):  # 422: FastAPI's shape
        assert streamed_body == plain_body
    else:
        assert streamed_body["code"] == plain_body["code"]
        assert streamed_body["message"] == plain_body["message"]


async def web_agent(client: httpx.AsyncClient) -> str:
    created = await client.post(
        "/v1/agents",
        json={"model": "maestrale-echo", "name": "web", "tools": [{"type": "web_search"}]},
    )
    assert created.status_code == 200, created.text
    return str(created.json()["id"])


@pytest.mark.parametrize("body", [b for _, b in STARTS], ids=[n for n, _ in STARTS])
async def test_refused_start(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    if body.get("agent_id") == "@web":
        body = {**body, "agent_id": await web_agent(client)}
    await both(client, "/v1/conversations", body)
    assert (await client.get("/v1/conversations")).json() == []


async def pending_conversation(client: httpx.AsyncClient) -> tuple[str, str]:
    """A conversation with a guardrail, waiting for a get_weather result; and its first entry."""
    started = await client.post(
        "/v1/conversations",
        json={
            **ECHO,
            "tools": [WEATHER],
            "guardrails": [BLOCK],
            "inputs": "/call get_weather {}",
        },
    )
    assert started.status_code == 200, started.text
    conv_id = started.json()["conversation_id"]
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    return conv_id, history[0]["id"]


@pytest.mark.parametrize("body", [b for _, b in APPENDS], ids=[n for n, _ in APPENDS])
async def test_refused_append(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    conv_id, _ = await pending_conversation(client)
    body = dict(body)  # the parameter is shared by the backends' runs
    url = body.pop("@url", f"/v1/conversations/{conv_id}")
    await both(client, url, body)
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    assert len(history) == 2  # nothing stored


@pytest.mark.parametrize("body", [b for _, b in RESTARTS], ids=[n for n, _ in RESTARTS])
async def test_refused_restart(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    conv_id, first = await pending_conversation(client)
    body = dict(body)  # the parameter is shared by the backends' runs
    if body.pop("@entry", False):
        body = {**body, "from_entry_id": first}
    await both(client, f"/v1/conversations/{conv_id}/restart", body)
    assert len((await client.get("/v1/conversations")).json()) == 1  # no new conversation
