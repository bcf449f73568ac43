"""POST /v1/chat/completions on the builtin engine: shapes, tools, streaming, errors, accounting."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from maestrale.core.auth.principal import Tenant
from tests.catalog.factories import create_fine_tuned

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def user(text: str | list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def chat(client: httpx.AsyncClient, **body: Any) -> httpx.Response:
    body.setdefault("model", "maestrale-echo")
    return await client.post("/v1/chat/completions", json=body)


def sse_data(text: str) -> list[Any]:
    frames = [f for f in text.split("\n\n") if f.strip()]
    return [f[len("data: ") :] if f[6:] == "[DONE]" else json.loads(f[6:]) for f in frames]


async def test_plain_completion_shape(client: httpx.AsyncClient) -> None:
    resp = await chat(client, messages=[user("hello there")])
    assert resp.status_code == 200
    body = resp.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "maestrale-echo"
    assert body["id"].startswith("cmpl-")
    assert isinstance(body["created"], int)
    choice = body["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": "echo: hello there",
        "tool_calls": None,
        "prefix": False,
    }
    assert choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["prompt_tokens"] + usage["completion_tokens"] == usage["total_tokens"]
    assert float(resp.headers["x-maestrale-overhead-ms"]) >= 0


async def test_alias_and_chunk_content(client: httpx.AsyncClient) -> None:
    content = [{"type": "text", "text": "from chunks"}]
    body = (await chat(client, model="echo", messages=[user(content)])).json()
    assert body["model"] == "echo"
    assert body["choices"][0]["message"]["content"] == "echo: from chunks"


async def test_tool_call_round_trip(client: httpx.AsyncClient) -> None:
    first = await chat(
        client, messages=[user('/call get_weather {"city": "Paris"}')], tools=[WEATHER]
    )
    choice = first.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    second = await chat(
        client,
        tools=[WEATHER],
        messages=[
            user('/call get_weather {"city": "Paris"}'),
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "name": "get_weather", "content": "sunny"},
        ],
    )
    assert second.json()["choices"][0]["message"]["content"] == "tool get_weather returned: sunny"


async def test_json_schema_response_format(client: httpx.AsyncClient) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "score": {"type": "integer", "minimum": 3}},
        "required": ["answer", "score"],
    }
    resp = await chat(
        client,
        messages=[user("rate it")],
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
    )
    assert json.loads(resp.json()["choices"][0]["message"]["content"]) == {
        "answer": "echo",
        "score": 3,
    }


async def test_max_tokens_stop_and_n(client: httpx.AsyncClient) -> None:
    body = (await chat(client, messages=[user("one two three four")], max_tokens=2)).json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["choices"][0]["message"]["content"] == "echo: one"
    body = (await chat(client, messages=[user("one two three")], stop=" two", n=2)).json()
    assert [c["message"]["content"] for c in body["choices"]] == ["echo: one", "echo: one"]


async def test_stream(client: httpx.AsyncClient) -> None:
    resp = await chat(client, messages=[user("stream me please")], stream=True)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = sse_data(resp.text)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(
        c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks
    )
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == "echo: stream me please"
    assert [c for c in chunks if "usage" in c] == [chunks[-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    "message", ["stream me please", '/call get_weather {"city": "Paris"}'], ids=["text", "tool"]
)
async def test_every_streamed_delta_has_string_content(
    client: httpx.AsyncClient, message: str
) -> None:
    # Clients concatenate `delta.content`: the finish chunk carries "" as the platform's does.
    resp = await chat(client, messages=[user(message)], tools=[WEATHER], stream=True)
    chunks = sse_data(resp.text)[:-1]
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "tool_calls")
    assert all(isinstance(c["choices"][0]["delta"]["content"], str) for c in chunks)
    assert chunks[-1]["choices"][0]["delta"]["content"] == ""


async def test_engine_failures_map_to_statuses(client: httpx.AsyncClient) -> None:
    assert (await chat(client, messages=[user("/fail 503")])).status_code == 502
    assert (await chat(client, messages=[user("/fail 504")])).status_code == 504
    resp = await chat(client, messages=[user("/fail 429")])
    assert resp.status_code == 429
    assert "429" in resp.json()["message"]
    streamed = await chat(client, messages=[user("/fail 500")], stream=True)
    assert streamed.status_code == 502
    assert streamed.json()["object"] == "error"


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"model": "nope", "messages": [user("x")]}, 404, "nope"),
        ({"model": "maestrale-embed", "messages": [user("x")]}, 400, "chat completions"),
        ({"messages": []}, 400, "messages"),
        (
            {"messages": [{"role": "tool", "tool_call_id": "zz", "content": "r"}]},
            400,
            "tool_call_id",
        ),
        (
            {
                "messages": [user("x")],
                "tools": [WEATHER],
                "tool_choice": {"type": "function", "function": {"name": "other"}},
            },
            400,
            "tool_choice",
        ),
        ({"messages": [user("x")], "tool_choice": "any"}, 400, "tool_choice"),
        ({"messages": [user("x")], "max_tokens": 10**6}, 400, "max_tokens"),
        ({"messages": [user("x" * 200_000)], "max_tokens": 10}, 400, "max_tokens"),
        (
            {"messages": [user([{"type": "image_url", "image_url": "http://x/i.png"}])]},
            400,
            "vision",
        ),
        # Issue 14: audio sent to a model without the audio capability was dropped silently.
        (
            {"messages": [user([{"type": "input_audio", "input_audio": "UklGRg=="}])]},
            400,
            "does not accept audio (no audio capability)",
        ),
        ({"messages": [user("x")], "response_format": {"type": "json_schema"}}, 400, "json_schema"),
    ],
)
async def test_bad_requests_name_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, needle: str
) -> None:
    resp = await chat(client, **body)
    assert resp.status_code == status, resp.text
    assert needle in resp.text


@pytest.mark.parametrize(
    "body",
    [
        {"messages": "hi"},
        {"messages": [{"role": "wizard", "content": "x"}]},
        {"messages": [{"role": "user", "content": [{"text": "no type"}]}]},
        {"messages": [user("x")], "temperature": 7},
        {"messages": [user("x")], "n": 0},
        {"messages": [user("x")], "tool_choice": "sometimes"},
        {"model": 5, "messages": [user("x")]},
    ],
)
async def test_schema_errors_are_422(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    resp = await chat(client, **body)
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"][0]["loc"][0] == "body"


async def test_unknown_fields_are_ignored(client: httpx.AsyncClient) -> None:
    resp = await chat(client, messages=[user("x")], brand_new_option={"a": 1}, safe_prompt=True)
    assert resp.status_code == 200


async def test_fine_tuned_models_route_to_their_base(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    row = await create_fine_tuned(app.state.services.db, tenant)
    resp = await chat(client, model=row.id, messages=[user("hi")])
    assert resp.status_code == 200
    assert resp.json()["model"] == row.id
    await client.post(f"/v1/fine_tuning/models/{row.id}/archive")
    resp = await chat(client, model=row.id, messages=[user("hi")])
    assert resp.status_code == 400
    assert "archived" in resp.json()["message"]


async def test_every_call_is_accounted(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    await chat(client, messages=[user("count me")], metadata={"team": "a"})
    await chat(client, messages=[user("/fail 503")])
    await chat(client, messages=[user("streamed")], stream=True)
    await client.post(
        "/v1/chat/completions",
        json={"model": "maestrale-echo", "messages": [user("correlated")]},
        headers={"x-correlation-id": "corr-1"},
    )
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        usage = (
            (await work.session.execute(select(UsageRecord).order_by(UsageRecord.created_at)))
            .scalars()
            .all()
        )
        events = (await work.session.execute(select(ChatCompletionEvent))).scalars().all()
    assert [u.status_code for u in usage] == [200, 503, 200, 200]
    assert all(u.workspace_id == tenant.workspace_id and u.key_id for u in usage)
    assert usage[0].total_tokens == usage[0].prompt_tokens + usage[0].completion_tokens > 0
    by_text = {e.request_messages[-1]["content"]: e for e in events}
    assert by_text["count me"].response_messages[0]["content"] == "echo: count me"
    assert by_text["count me"].extra_fields == {"team": "a", "endpoint": "chat"}
    assert by_text["streamed"].response_messages[0]["content"] == "echo: streamed"
    assert by_text["streamed"].nb_output_tokens > 0
    assert by_text["correlated"].correlation_id == "corr-1"
