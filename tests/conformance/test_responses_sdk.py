"""`/v1/responses` through the clients that speak it, against a live server: mistralai 3.x
(`client.responses`, stateless: it sends `store: false`) and the OpenAI SDK (stored responses,
`previous_response_id` chains, retrieval, background mode). Every answer and event parses into
the SDK's own models."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from openai import BadRequestError, NotFoundError, OpenAI

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, SdkProcess

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def sdk3(live_server: LiveServer) -> Iterator[SdkProcess]:
    sdk = SdkProcess(NEWEST_3, live_server.url, live_server.api_key)
    yield sdk
    sdk.close()


def test_mistralai_3(sdk3: SdkProcess) -> None:
    def ok(operation: str, **kwargs: object) -> Any:
        return sdk3.call("responses." + operation, **kwargs).ok()

    answer = ok("create", model="maestrale-echo", input="from 3.x", instructions="Be brief.")
    assert answer["status"] == "completed" and answer["store"] is False
    assert answer["output"][0]["content"][0]["text"] == "echo: from 3.x"

    called = ok(
        "create",
        model="maestrale-echo",
        input='/call get_weather {"city": "Rome"}',
        tools=[WEATHER],
    )
    [call] = called["output"]
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"city": "Rome"}
    # Stateless: the exchange is sent back whole, with the function's output.
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "warm"}
    items = [{"role": "user", "content": "weather?"}, call, output]
    answered = ok("create", model="maestrale-echo", input=items, tools=[WEATHER])
    assert answered["output"][0]["content"][0]["text"] == "tool get_weather returned: warm"

    events = ok("create", model="maestrale-echo", input="streamed", stream=True)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e["data"]["sequence_number"] for e in events] == list(range(len(events)))

    counted = ok("count_input_tokens", model="maestrale-echo", input="streamed")
    assert counted["input_tokens"] == events[-1]["data"]["response"]["usage"]["input_tokens"]


def test_openai_sdk(live_server: LiveServer) -> None:
    client = OpenAI(api_key=live_server.api_key, base_url=f"{live_server.url}/v1")
    first = client.responses.create(model="maestrale-echo", input="hello", instructions="Hi.")
    assert first.output_text == "echo: hello" and first.status == "completed"
    second = client.responses.create(
        model="maestrale-echo", input="again", previous_response_id=first.id
    )
    assert second.usage is not None and first.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens
    assert client.responses.retrieve(second.id).output_text == "echo: again"
    items = client.responses.input_items.list(second.id)
    assert [item.type for item in items.data] == ["message"]

    called = client.responses.create(
        model="maestrale-echo", input='/call get_weather {"city": "Oslo"}', tools=[WEATHER]
    )
    call = called.output[0]
    assert call.type == "function_call" and call.name == "get_weather"
    answered = client.responses.create(
        model="maestrale-echo",
        previous_response_id=called.id,
        tools=[WEATHER],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "snow"}],
    )
    assert answered.output_text == "tool get_weather returned: snow"

    with client.responses.stream(model="maestrale-echo", input="streamed") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == "echo: streamed"

    queued = client.responses.create(model="maestrale-echo", input="later", background=True)
    assert queued.status in ("queued", "in_progress", "completed")
    deadline = time.monotonic() + 30
    while (done := client.responses.retrieve(queued.id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, done
        time.sleep(0.05)
    assert done.status == "completed" and done.output_text == "echo: later"
    replayed = list(client.responses.retrieve(queued.id, stream=True))
    assert replayed[-1].type == "response.completed"
    # Streamed as its job runs it (the events it keeps, read as they come).
    streamed = client.responses.create(
        model="maestrale-echo", input="watched", background=True, stream=True
    )
    kinds = [event.type for event in streamed]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds

    client.responses.delete(first.id)
    with pytest.raises(NotFoundError):
        client.responses.retrieve(first.id)


def test_json_schema_on_the_local_model(live_server: LiveServer) -> None:
    # The schema is enforced by the local engine's grammar: a valid instance on any build.
    pytest.importorskip("llama_cpp")
    client = OpenAI(api_key=live_server.api_key, base_url=f"{live_server.url}/v1")
    schema = {
        "type": "object",
        "properties": {"capital": {"type": "string", "maxLength": 20}},
        "required": ["capital"],
        "additionalProperties": False,
    }
    response = client.responses.create(
        model="smollm2-135m-instruct",
        input="What is the capital of France? Answer in JSON.",
        text={
            "format": {"type": "json_schema", "name": "capital", "schema": schema, "strict": True}
        },
        max_output_tokens=40,
        temperature=0,
    )
    answer = json.loads(response.output_text)
    assert set(answer) == {"capital"} and isinstance(answer["capital"], str)
    # A schema the grammar cannot express is a 400 before the stream opens.
    hostile = {"type": "string", "pattern": "^(a{0,100}){0,100}$"}
    with pytest.raises(BadRequestError, match="unsupported schema"):
        client.responses.create(
            model="smollm2-135m-instruct",
            input="x",
            stream=True,
            text={"format": {"type": "json_schema", "name": "h", "schema": hostile}},
        )
