"""Plain chat completions over real HTTP: the body sent upstream and the result parsed back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine
from maestrale.engines.protocols import ChatEngine, Closeable, EmbeddingsEngine, FimEngine
from maestrale.engines.types import EngineError
from tests.engines.openai_compat.conftest import MakeEngine
from tests.engines.openai_compat.stub_upstream import PROMPT_TOKENS, TEXT
from tests.engines.openai_compat.support import Stub, chat_request, new_tag

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}


async def echoed(engine: OpenAICompatEngine, text: str = "echo", **kwargs: Any) -> dict[str, Any]:
    """The body the upstream received (the stub answers it back as the content)."""
    result = await engine.chat(chat_request(text, **kwargs))
    content = result.choices[0].message["content"]
    body: dict[str, Any] = json.loads(content)
    return body


def test_engine_offers_every_capability(engine: OpenAICompatEngine) -> None:
    assert isinstance(engine, ChatEngine)
    assert isinstance(engine, FimEngine)
    assert isinstance(engine, EmbeddingsEngine)
    assert isinstance(engine, Closeable)


async def test_plain_chat(engine: OpenAICompatEngine) -> None:
    result = await engine.chat(chat_request("hello"))

    assert len(result.choices) == 1
    choice = result.choices[0]
    assert choice.index == 0
    assert choice.message == {"role": "assistant", "content": TEXT, "tool_calls": None}
    assert choice.finish_reason == "stop"
    assert result.usage.prompt_tokens == PROMPT_TOKENS
    assert result.usage.completion_tokens == len(TEXT.split())


async def test_body_is_the_openai_body_without_none_fields(engine: OpenAICompatEngine) -> None:
    # Messages are already wire dicts: they go upstream exactly as they are.
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "echo"}]},
    ]
    request = chat_request("unused")
    request.messages = messages

    result = await engine.chat(request)

    received = json.loads(result.choices[0].message["content"])
    assert received == {"model": "upstream-model", "messages": messages}


async def test_sampling_fields_are_mapped(engine: OpenAICompatEngine) -> None:
    body = await echoed(
        engine,
        temperature=0.2,
        top_p=0.9,
        max_tokens=50,
        stop=["\n\n", "END"],
        random_seed=7,
        n=1,
        presence_penalty=0.5,
        frequency_penalty=0.25,
        response_format={"type": "json_object"},
    )

    assert body["temperature"] == 0.2
    assert body["top_p"] == 0.9
    assert body["max_tokens"] == 50
    assert body["stop"] == ["\n\n", "END"]
    assert body["seed"] == 7
    assert "random_seed" not in body
    assert "n" not in body
    assert body["presence_penalty"] == 0.5
    assert body["frequency_penalty"] == 0.25
    assert body["response_format"] == {"type": "json_object"}
    assert "stream" not in body


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ("any", "required"),
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            {"type": "function", "function": {"name": "get_weather"}},
        ),
    ],
)
async def test_tool_choice_is_mapped(
    engine: OpenAICompatEngine, sent: str | dict[str, Any], expected: str | dict[str, Any]
) -> None:
    body = await echoed(engine, tools=[WEATHER], tool_choice=sent, parallel_tool_calls=False)

    assert body["tools"] == [WEATHER]
    assert body["tool_choice"] == expected
    assert body["parallel_tool_calls"] is False


async def test_no_tool_fields_without_tools(engine: OpenAICompatEngine) -> None:
    body = await echoed(engine)

    assert "tools" not in body
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body


async def test_json_schema_and_extra_fields_pass_through(engine: OpenAICompatEngine) -> None:
    schema = {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
    }
    extra = {"safe_prompt": True, "top_k": 5, "model": "not-this-one"}

    body = await echoed(engine, response_format=schema, extra=extra, n=2)

    assert body["response_format"] == schema
    assert body["safe_prompt"] is True
    assert body["top_k"] == 5
    assert body["n"] == 2
    # An extra entry never overrides what the engine decided.
    assert body["model"] == "upstream-model"


async def test_n_choices_come_back_in_order(engine: OpenAICompatEngine) -> None:
    result = await engine.chat(chat_request("hello", n=3))

    assert [choice.index for choice in result.choices] == [0, 1, 2]
    assert result.usage.completion_tokens == 3 * len(TEXT.split())


async def test_tool_call_answer_is_parsed(engine: OpenAICompatEngine) -> None:
    result = await engine.chat(chat_request("tool-call", tools=[WEATHER]))

    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message["content"] is None
    assert choice.message["tool_calls"] == [
        {
            "id": "call_stub_0",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{}"},
        }
    ]


async def test_invalid_json_from_upstream_is_a_502(engine: OpenAICompatEngine) -> None:
    with pytest.raises(EngineError) as caught:
        await engine.chat(chat_request("invalid-json"))

    assert caught.value.status == 502
    assert caught.value.code == "upstream_error"


async def test_stream_option_is_only_on_streams(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine()
    tag = new_tag()

    await engine.chat(chat_request(f"tag:{tag}"))

    record = await stub.record(tag)
    assert record["path"] == "/v1/chat/completions"
    assert "stream_options" not in record["body"]
    assert record["headers"]["content-type"] == "application/json"
