"""Streamed chat over real HTTP: chunks pass as they arrive, usage rides on the last chunk, and a
consumer that stops early closes the upstream response."""

from __future__ import annotations

import contextlib

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine
from maestrale.engines.types import ChatChunk, EngineError
from tests.engines.openai_compat.stub_upstream import PROMPT_TOKENS, TEXT
from tests.engines.openai_compat.support import (
    Stub,
    chat_request,
    collect,
    content_of,
    drain,
    eventually,
    new_tag,
)

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}


async def test_stream_follows_the_platform_conventions(engine: OpenAICompatEngine) -> None:
    chunks = await collect(engine.chat_stream(chat_request("hello")))

    assert chunks[0].delta == {"role": "assistant", "content": ""}
    assert content_of(chunks) == TEXT
    assert chunks[-1].finish_reason == "stop"
    assert all(chunk.finish_reason is None for chunk in chunks[:-1])
    assert all(chunk.index == 0 for chunk in chunks)


async def test_usage_is_on_the_last_chunk_only(stub: Stub, engine: OpenAICompatEngine) -> None:
    tag = new_tag()

    chunks = await collect(engine.chat_stream(chat_request(f"tag:{tag}")))

    usage = chunks[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (PROMPT_TOKENS, len(TEXT.split()))
    assert all(chunk.usage is None for chunk in chunks[:-1])
    body = (await stub.record(tag))["body"]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_usage_inside_the_finish_chunk_is_kept(engine: OpenAICompatEngine) -> None:
    chunks = await collect(engine.chat_stream(chat_request("usage-in-last words:3")))

    assert content_of(chunks) == "w1 w2 w3"
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 3


async def test_no_usage_upstream_gives_none(engine: OpenAICompatEngine) -> None:
    chunks = await collect(engine.chat_stream(chat_request("no-usage")))

    assert chunks[-1].finish_reason == "stop"
    assert all(chunk.usage is None for chunk in chunks)


async def test_n_streamed_choices_and_one_usage(engine: OpenAICompatEngine) -> None:
    chunks = await collect(engine.chat_stream(chat_request("words:2", n=2)))

    for index in (0, 1):
        mine = [chunk for chunk in chunks if chunk.index == index]
        assert mine[0].delta["role"] == "assistant"
        assert content_of(mine) == "w1 w2"
        assert mine[-1].finish_reason == "stop"
    assert [chunk.usage is not None for chunk in chunks].count(True) == 1
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 4


async def test_chunks_arrive_before_the_stream_ends(stub: Stub, engine: OpenAICompatEngine) -> None:
    tag = new_tag()
    stream = engine.chat_stream(chat_request(f"tag:{tag} words:6 chunk-delay:200"))
    async with contextlib.aclosing(stream):
        first = await anext(stream)
        second = await anext(stream)
        # The upstream is still sending (about a second to go): nothing was buffered.
        assert (await stub.record(tag))["stream"] == "open"
        rest = [chunk async for chunk in stream]

    assert first.delta["role"] == "assistant"
    assert content_of([first, second, *rest]) == "w1 w2 w3 w4 w5 w6"
    assert (await stub.record(tag))["stream"] == "completed"


async def test_closing_the_stream_closes_the_upstream_response(
    stub: Stub, engine: OpenAICompatEngine
) -> None:
    tag = new_tag()
    stream = engine.chat_stream(chat_request(f"tag:{tag} words:100 chunk-delay:100"))
    await anext(stream)
    await anext(stream)

    await stream.aclose()

    async def cut() -> bool:
        return bool((await stub.record(tag))["stream"] == "cut")

    await eventually(cut, "the stub saw its stream cut")
    # The engine is still fine for the next request.
    result = await engine.chat(chat_request("hello"))
    assert result.choices[0].message["content"] == TEXT


async def test_streamed_tool_calls(engine: OpenAICompatEngine) -> None:
    chunks = await collect(engine.chat_stream(chat_request("tool-call", tools=[WEATHER])))

    calls = [chunk.delta["tool_calls"] for chunk in chunks if "tool_calls" in chunk.delta]
    assert calls[0][0]["function"]["name"] == "get_weather"
    assert "".join(call[0]["function"]["arguments"] for call in calls) == "{}"
    assert chunks[-1].finish_reason == "tool_calls"


async def test_invalid_json_midway_is_a_502(engine: OpenAICompatEngine) -> None:
    received: list[ChatChunk] = []
    with pytest.raises(EngineError) as caught:
        await drain(engine.chat_stream(chat_request("invalid-json")), received)

    assert caught.value.status == 502
    assert len(received) == 1  # the role chunk came before the broken one
