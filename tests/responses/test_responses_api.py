"""The /v1/responses group over HTTP, driven by the builtin engine's directives: a response is a
turn of a conversation, chained by `previous_response_id`, streamed with numbered events."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.conversations.toolbox_fixture import install
from tests.support.app_fixtures import create_tenant, make_client

pytestmark = pytest.mark.both_databases("maestrale.responses.repository")

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    body.setdefault("model", "maestrale-echo")
    response = await client.post("/v1/responses", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def text_of(response: dict[str, Any]) -> str:
    return "".join(
        part["text"]
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
    )


async def test_a_stored_chain_continues_its_conversation(client: httpx.AsyncClient) -> None:
    first = await create(client, input="hello", instructions="Be brief.", metadata={"k": "v"})
    assert first["object"] == "response" and first["id"].startswith("resp_")
    assert first["status"] == "completed" and first["error"] is None
    assert text_of(first) == first["output_text"] == "echo: hello"
    message = first["output"][0]
    assert message["role"] == "assistant" and message["status"] == "completed"
    usage = first["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert first["instructions"] == "Be brief." and first["metadata"] == {"k": "v"}
    assert (await client.get(f"/v1/responses/{first['id']}")).json() == first

    second = await create(client, input="again", previous_response_id=first["id"])
    assert text_of(second) == "echo: again" and second["previous_response_id"] == first["id"]
    # The model read the first turn too.
    assert second["usage"]["input_tokens"] > usage["input_tokens"]
    # One conversation holds both turns (a tip append, not a copy).
    conversations = (await client.get("/v1/conversations")).json()
    assert len(conversations) == 1
    history = (await client.get(f"/v1/conversations/{conversations[0]['id']}/history")).json()
    texts = [e["content"] for e in history["entries"]]
    assert texts == ["hello", "echo: hello", "again", "echo: again"]

    # A branch from the first response: a new conversation with a copy of its turn.
    branch = await create(client, input="other", previous_response_id=first["id"])
    assert branch["usage"]["input_tokens"] == second["usage"]["input_tokens"]
    assert len((await client.get("/v1/conversations")).json()) == 2

    items = (await client.get(f"/v1/responses/{second['id']}/input_items")).json()
    assert items["object"] == "list" and items["has_more"] is False
    [item] = items["data"]
    assert item["type"] == "message" and item["role"] == "user"
    assert item["content"] == [{"type": "input_text", "text": "again"}]
    assert items["first_id"] == items["last_id"] == item["id"]

    three = [{"role": "user", "content": text} for text in ("a", "b", "c")]
    listed = await create(client, input=three, store=True)
    url = f"/v1/responses/{listed['id']}/input_items"
    page = (await client.get(url, params={"order": "asc", "limit": 2})).json()
    assert [i["content"][0]["text"] for i in page["data"]] == ["a", "b"] and page["has_more"]
    rest = (await client.get(url, params={"after": page["last_id"], "order": "asc"})).json()
    assert [i["content"][0]["text"] for i in rest["data"]] == ["c"] and not rest["has_more"]
    newest = (await client.get(url, params={"before": page["first_id"]})).json()
    assert [i["content"][0]["text"] for i in newest["data"]] == ["c", "b"]
    assert (await client.get(url, params={"after": "msg_x"})).status_code == 400
    await client.delete(f"/v1/responses/{listed['id']}")

    deleted = (await client.delete(f"/v1/responses/{branch['id']}")).json()
    assert deleted == {"id": branch["id"], "object": "response.deleted", "deleted": True}
    assert (await client.get(f"/v1/responses/{branch['id']}")).status_code == 404
    # Its conversation went with it; the chain's stays while a later response continues it.
    await client.delete(f"/v1/responses/{first['id']}")
    assert len((await client.get("/v1/conversations")).json()) == 1
    assert (await client.get(f"/v1/responses/{second['id']}")).status_code == 200
    # A response added to a conversation it did not start leaves the conversation be.
    conversation = conversations[0]["id"]
    added = await create(client, input="more", conversation=conversation)
    await client.delete(f"/v1/responses/{added['id']}")
    assert [c["id"] for c in (await client.get("/v1/conversations")).json()] == [conversation]


async def test_function_tools_round_trip(client: httpx.AsyncClient) -> None:
    called = await create(client, input='/call get_weather {"city": "Paris"}', tools=[WEATHER])
    [call] = called["output"]
    assert call["type"] == "function_call" and call["name"] == "get_weather"
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    assert called["tools"] == [WEATHER] and called["tool_choice"] == "auto"
    answered = await create(
        client,
        previous_response_id=called["id"],
        tools=[WEATHER],
        input=[{"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}],
    )
    assert text_of(answered) == "tool get_weather returned: sunny"
    # Stateless, as mistralai 3.x sends it: the whole exchange as items, nothing stored.
    replayed = await create(
        client,
        store=False,
        tools=[WEATHER],
        input=[
            {"role": "user", "content": "weather?"},
            {**call, "status": "completed"},
            {"type": "function_call_output", "call_id": call["call_id"], "output": "rain"},
        ],
    )
    assert text_of(replayed) == "tool get_weather returned: rain"
    assert (await client.get(f"/v1/responses/{replayed['id']}")).status_code == 404


async def test_a_server_tool_runs_in_the_response(app: FastAPI, client: httpx.AsyncClient) -> None:
    toolboxes = install(app)
    body = {"type": "connector", "connector_id": "demo"}
    secret = {"type": "bearer", "value": "s3cret-token"}
    tools = [{**body, "authorization": secret}]
    response = await create(client, input='/call echo {"text": "hi"}', tools=tools)
    # The tool is shown without its secret.
    assert response["tools"] == [{**body, "authorization": {"type": "bearer"}}]
    # The server ran the tool; the model read its result; the output is the answer.
    assert [item["type"] for item in response["output"]] == ["message"]
    assert text_of(response) == "tool echo returned: hi"
    assert toolboxes.log.calls == [("echo", {"text": "hi"})]
    # `max_tool_calls` bounds the server's calls: the model answers from those it ran.
    twice = '/call echo {"text": "a"}\n/call echo {"text": "b"}'
    bounded = await create(client, input=twice, tools=[body], max_tool_calls=1)
    assert toolboxes.log.calls[1:] == [("echo", {"text": "a"})]
    assert text_of(bounded) == "tool echo returned: a"


async def test_streamed_events_in_order(client: httpx.AsyncClient) -> None:
    body = {"model": "maestrale-echo", "input": "hi there", "stream": True, "tools": [WEATHER]}
    async with client.stream("POST", "/v1/responses", json=body) as stream:
        assert stream.status_code == 200
        frames = [line async for line in stream.aiter_lines() if line.startswith("data: ")]
    events = [json.loads(line[6:]) for line in frames]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    kinds = [e["type"] for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "echo: hi there"
    done = events[-1]["response"]
    assert done["status"] == "completed" and text_of(done) == "echo: hi there"
    assert done["output"][0]["id"] == events[2]["item"]["id"]
    assert (await client.get(f"/v1/responses/{done['id']}")).json()["output"] == done["output"]

    body["input"] = '/call get_weather {"city": "Oslo"}'
    async with client.stream("POST", "/v1/responses", json=body) as stream:
        events = [
            json.loads(line[6:]) async for line in stream.aiter_lines() if line.startswith("data: ")
        ]
    kinds = [e["type"] for e in events]
    assert kinds[2:] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[4]["name"] == "get_weather"


async def test_output_limit_and_json_schema(client: httpx.AsyncClient) -> None:
    cut = await create(client, input="one two three four five six", max_output_tokens=2)
    assert cut["status"] == "incomplete"
    assert cut["incomplete_details"] == {"reason": "max_output_tokens"}
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 3}},
        "required": ["n"],
    }
    fmt = {"type": "json_schema", "name": "count", "schema": schema, "strict": True}
    shaped = await create(client, input="count", text={"format": fmt})
    assert json.loads(text_of(shaped)) == {"n": 3} and shaped["text"]["format"] == fmt


async def test_input_tokens_is_the_first_turns_count(client: httpx.AsyncClient) -> None:
    body = {"model": "maestrale-echo", "input": "count me", "instructions": "x", "tools": [WEATHER]}
    counted = (await client.post("/v1/responses/input_tokens", json=body)).json()
    answered = await create(client, **body)
    assert counted == {
        "object": "response.input_tokens",
        "input_tokens": answered["usage"]["input_tokens"],
    }


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"input": [{"type": "computer_call", "id": "x"}]}, 400, "invalid_input_item"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            400,
            "invalid_input_item",
        ),
        ({"input": "x", "agent_id": "ag_1"}, 400, "invalid_target"),
        ({"input": "x", "tools": [{"type": "computer_use_preview"}]}, 400, "tool_unavailable"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, 400, "tool_unavailable"),
        ({"input": "x", "previous_response_id": "resp_missing"}, 404, "response_not_found"),
        ({"input": "x", "text": {"format": {"type": "xml"}}}, 400, "invalid_format"),
        ({"input": "x", "include": ["everything"]}, 400, "invalid_include"),
        ({"input": "x", "background": True, "store": False}, 400, "invalid_request"),
        ({"input": "x", "model": "no-such-model"}, 404, "model_not_found"),
    ],
)
async def test_bad_requests_store_nothing(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, code: str
) -> None:
    for stream in (False, True):
        response = await client.post(
            "/v1/responses", json={"model": "maestrale-echo", **body, "stream": stream}
        )
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["code"] == code
    assert (await client.get("/v1/conversations")).json() == []


async def test_another_workspace_sees_no_response(app: FastAPI, client: httpx.AsyncClient) -> None:
    mine = await create(client, input="secret")
    other = await create_tenant(app.state.services.db)
    async with make_client(app, other.key) as theirs:
        for method, path in (
            ("GET", f"/v1/responses/{mine['id']}"),
            ("GET", f"/v1/responses/{mine['id']}/input_items"),
            ("DELETE", f"/v1/responses/{mine['id']}"),
        ):
            assert (await theirs.request(method, path)).status_code == 404
        chained = await theirs.post(
            "/v1/responses",
            json={"model": "maestrale-echo", "input": "x", "previous_response_id": mine["id"]},
        )
        assert chained.status_code == 404
    assert (await client.get(f"/v1/responses/{mine['id']}")).status_code == 200


async def test_an_agent_answers_and_a_failure_ends_the_stream(client: httpx.AsyncClient) -> None:
    made = await client.post(
        "/v1/agents", json={"model": "maestrale-echo", "name": "helper", "instructions": "Hi."}
    )
    agent = made.json()
    response = await client.post("/v1/responses", json={"agent": agent["id"], "input": "yo"})
    answered = response.json()
    assert answered["model"] == "maestrale-echo" and text_of(answered) == "echo: yo"

    body = {"model": "maestrale-echo", "input": "/fail 503"}
    refused = await client.post("/v1/responses", json=body)
    assert refused.status_code == 502 and refused.json()["type"]
    async with client.stream("POST", "/v1/responses", json={**body, "stream": True}) as stream:
        events = [
            json.loads(line[6:]) async for line in stream.aiter_lines() if line.startswith("data: ")
        ]
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "error",
        "response.failed",
    ]
    assert events[2]["code"] == "server_error" and events[2]["message"]
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "server_error"
    assert (await client.get(f"/v1/responses/{failed['id']}")).status_code == 404
