"""The builtin engine's chat and FIM contract (docs/architecture.md §6)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.builtin.directives import MAX_SLEEP_MS, parse_directives
from maestrale.engines.builtin.tokens import count_tokens, tokenize
from maestrale.engines.protocols import ChatEngine, Closeable, EmbeddingsEngine, FimEngine
from maestrale.engines.types import ChatChunk, ChatRequest, ChatResult, EngineError, FimRequest

ONLY_TIME = {"type": "function", "function": {"name": "get_time"}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {}}}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def request(content: Any, **kwargs: Any) -> ChatRequest:
    return ChatRequest(model="maestrale-echo", messages=[user(content)], **kwargs)


async def chat(content: Any, **kwargs: Any) -> ChatResult:
    return await BuiltinEngine().chat(request(content, **kwargs))


async def collect(stream: Any) -> list[ChatChunk]:
    return [chunk async for chunk in stream]


def streamed_content(chunks: list[ChatChunk], index: int = 0) -> str:
    return "".join(c.delta.get("content", "") for c in chunks if c.index == index)


# --- plain echo ---------------------------------------------------------------------------


async def test_plain_text_is_echoed() -> None:
    result = await chat("hello there")
    [choice] = result.choices
    assert choice.index == 0
    assert choice.message == {
        "role": "assistant",
        "content": "echo: hello there",
        "tool_calls": None,
    }
    assert choice.finish_reason == "stop"


async def test_text_chunks_are_joined_and_other_chunks_ignored() -> None:
    content = [
        {"type": "text", "text": "hi"},
        {"type": "image_url", "image_url": "https://example.com/cat.png"},
        {"type": "text", "text": "there"},
    ]
    result = await chat(content)
    assert result.choices[0].message["content"] == "echo: hi\nthere"


async def test_answers_the_last_user_message() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        user("first"),
        {"role": "assistant", "content": "echo: first"},
        user("second"),
        {"role": "assistant", "content": "prefix", "prefix": True},
    ]
    result = await BuiltinEngine().chat(ChatRequest(model="m", messages=messages))
    assert result.choices[0].message["content"] == "echo: second"


async def test_conversation_without_user_message_echoes_empty_text() -> None:
    messages = [{"role": "system", "content": "only a system prompt"}]
    result = await BuiltinEngine().chat(ChatRequest(model="m", messages=messages))
    assert result.choices[0].message["content"] == "echo: "


# --- /respond -----------------------------------------------------------------------------


async def test_respond_gives_exactly_the_text() -> None:
    result = await chat("ignored text\n/respond  exactly this ")
    assert result.choices[0].message["content"] == " exactly this "


async def test_several_respond_lines_are_joined() -> None:
    result = await chat("/respond line one\nnoise\n/respond line two")
    assert result.choices[0].message["content"] == "line one\nline two"


async def test_respond_wins_over_response_format() -> None:
    result = await chat("/respond not json", response_format={"type": "json_object"})
    assert result.choices[0].message["content"] == "not json"


async def test_directive_needs_a_word_boundary() -> None:
    result = await chat("/responder x")
    assert result.choices[0].message["content"] == "echo: /responder x"


# --- /call --------------------------------------------------------------------------------


async def test_single_tool_call() -> None:
    result = await chat('/call get_weather {"city": "Paris"}', tools=[WEATHER])
    [choice] = result.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message["content"] == ""
    [call] = choice.message["tool_calls"]
    assert call["type"] == "function"
    assert call["index"] == 0
    assert call["function"]["name"] == "get_weather"
    assert isinstance(call["function"]["arguments"], str)
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert len(call["id"]) == 9
    assert call["id"].isalnum()
    assert call["id"].isascii()


async def test_tool_call_ids_are_deterministic() -> None:
    first = await chat('/call get_weather {"city": "Paris"}', tools=[WEATHER])
    second = await chat('/call get_weather {"city": "Paris"}', tools=[WEATHER])
    assert first.choices[0].message["tool_calls"] == second.choices[0].message["tool_calls"]


async def test_call_without_json_has_empty_arguments() -> None:
    result = await chat("/call get_time", tools=[TIME])
    assert result.choices[0].message["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_parallel_tool_calls() -> None:
    text = 'let me check\n/call get_weather {"city": "Rome"}\n/call get_time {"tz": "UTC"}'
    result = await chat(text, tools=[WEATHER, TIME])
    calls = result.choices[0].message["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_time"]
    assert [c["index"] for c in calls] == [0, 1]
    assert calls[0]["id"] != calls[1]["id"]
    assert result.choices[0].finish_reason == "tool_calls"


async def test_parallel_tool_calls_false_keeps_only_the_first() -> None:
    text = "/call get_weather {}\n/call get_time {}"
    result = await chat(text, tools=[WEATHER, TIME], parallel_tool_calls=False)
    calls = result.choices[0].message["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]


@pytest.mark.parametrize(
    ("text", "tools", "tool_choice"),
    [
        ("/call get_stock {}", [WEATHER], None),  # not offered
        ("/call get_weather {city: Paris}", [WEATHER], None),  # invalid JSON
        ("/call get_weather [1, 2]", [WEATHER], None),  # arguments not an object
        ("/call get_weather {}", None, None),  # no tools at all
        ("/call get_weather {}", [WEATHER], "none"),
        (
            "/call get_weather {}",
            [WEATHER, TIME],
            {"type": "function", "function": {"name": "get_time"}},
        ),
    ],
)
async def test_call_that_cannot_be_made_is_text(
    text: str, tools: list[dict[str, Any]] | None, tool_choice: Any
) -> None:
    result = await chat(text, tools=tools, tool_choice=tool_choice)
    [choice] = result.choices
    assert choice.message["content"] == f"echo: {text}"
    assert choice.message["tool_calls"] is None
    assert choice.finish_reason == "stop"


async def test_tool_choice_naming_a_function_allows_that_one() -> None:
    choice = {"type": "function", "function": {"name": "get_time"}}
    text = "/call get_weather {}\n/call get_time {}"
    result = await chat(text, tools=[WEATHER, TIME], tool_choice=choice)
    calls = result.choices[0].message["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_time"]
    # The refused /call stays visible as text but a tool call wins: content is empty.
    assert result.choices[0].message["content"] == ""


# --- tool results -------------------------------------------------------------------------


def after_tool(tool_message: dict[str, Any]) -> ChatRequest:
    call = {
        "id": "abc123XYZ",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
    }
    messages = [
        user("/call get_weather {}"),
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", **tool_message},
    ]
    return ChatRequest(model="m", messages=messages, tools=[WEATHER])


async def test_tool_result_is_reported_by_name() -> None:
    req = after_tool({"name": "get_time", "tool_call_id": "abc123XYZ", "content": "noon"})
    result = await BuiltinEngine().chat(req)
    assert result.choices[0].message["content"] == "tool get_time returned: noon"
    assert result.choices[0].finish_reason == "stop"


async def test_tool_result_name_found_by_tool_call_id() -> None:
    req = after_tool({"tool_call_id": "abc123XYZ", "content": [{"type": "text", "text": "sunny"}]})
    result = await BuiltinEngine().chat(req)
    assert result.choices[0].message["content"] == "tool get_weather returned: sunny"


async def test_tool_result_of_unknown_call() -> None:
    req = after_tool({"tool_call_id": "nope", "content": "42"})
    result = await BuiltinEngine().chat(req)
    assert result.choices[0].message["content"] == "tool unknown returned: 42"


async def test_tool_result_directives_are_not_obeyed() -> None:
    req = after_tool({"name": "get_weather", "content": "/fail 500"})
    result = await BuiltinEngine().chat(req)
    assert result.choices[0].message["content"] == "tool get_weather returned: /fail 500"


async def test_parallel_tool_results_are_all_reported() -> None:
    messages = [
        user("go"),
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "tool", "name": "a", "content": "1"},
        {"role": "tool", "name": "b", "content": "2"},
    ]
    result = await BuiltinEngine().chat(ChatRequest(model="m", messages=messages))
    assert result.choices[0].message["content"] == "tool a returned: 1\ntool b returned: 2"


# --- /sleep and /fail ---------------------------------------------------------------------


async def test_sleep_waits_and_is_removed_from_the_text() -> None:
    start = time.monotonic()
    result = await chat("/sleep 200\nhello")
    assert time.monotonic() - start >= 0.18
    assert result.choices[0].message["content"] == "echo: hello"


def test_sleep_is_capped_and_invalid_sleep_is_text() -> None:
    assert parse_directives("/sleep 999999").sleep_ms == MAX_SLEEP_MS
    parsed = parse_directives("/sleep soon\n/sleep -5")
    assert parsed.sleep_ms == 0
    assert parsed.text == "/sleep soon\n/sleep -5"


@pytest.mark.parametrize("status", [400, 429, 503, 599])
async def test_fail_raises_an_upstream_error(status: int) -> None:
    with pytest.raises(EngineError) as info:
        await chat(f"hello\n/fail {status}")
    assert info.value.status == status
    assert info.value.code == "upstream_error"
    assert info.value.message == f"builtin engine failure requested: {status}"


@pytest.mark.parametrize("line", ["/fail 200", "/fail 600", "/fail boom", "/fail"])
async def test_fail_with_invalid_status_is_text(line: str) -> None:
    result = await chat(line)
    assert result.choices[0].message["content"] == f"echo: {line}"


async def test_fail_in_stream_raises_before_any_chunk() -> None:
    stream = BuiltinEngine().chat_stream(request("/fail 502"))
    with pytest.raises(EngineError) as info:
        await anext(stream)
    assert info.value.status == 502


# --- response formats ---------------------------------------------------------------------


async def test_json_object_format() -> None:
    result = await chat("hi there", response_format={"type": "json_object"})
    assert json.loads(result.choices[0].message["content"]) == {"echo": "hi there"}


async def test_json_object_after_a_tool_result() -> None:
    req = after_tool({"name": "get_weather", "content": "sunny"})
    req.response_format = {"type": "json_object"}
    result = await BuiltinEngine().chat(req)
    content = json.loads(result.choices[0].message["content"])
    assert content == {"echo": "tool get_weather returned: sunny"}


async def test_text_format_is_plain_echo() -> None:
    result = await chat("hi", response_format={"type": "text"})
    assert result.choices[0].message["content"] == "echo: hi"


# --- limits, n and usage ------------------------------------------------------------------


async def test_max_tokens_truncates_with_finish_reason_length() -> None:
    result = await chat("one two three", max_tokens=2)
    assert result.choices[0].message["content"] == "echo: one"
    assert result.choices[0].finish_reason == "length"
    assert result.usage.completion_tokens == 2


async def test_max_tokens_not_reached_finishes_with_stop() -> None:
    result = await chat("one two", max_tokens=3)
    assert result.choices[0].message["content"] == "echo: one two"
    assert result.choices[0].finish_reason == "stop"


async def test_stop_cuts_before_the_earliest_stop_string() -> None:
    result = await chat("alpha beta gamma", stop=["gamma", "ta"])
    assert result.choices[0].message["content"] == "echo: alpha be"
    assert result.choices[0].finish_reason == "stop"


async def test_stop_before_the_token_limit_wins() -> None:
    result = await chat("a b c d e", stop=[" b"], max_tokens=3)
    assert result.choices[0].message["content"] == "echo: a"
    assert result.choices[0].finish_reason == "stop"


async def test_n_gives_identical_choices_and_counts_them_all() -> None:
    result = await chat("hi there", n=3)
    assert [c.index for c in result.choices] == [0, 1, 2]
    assert {c.message["content"] for c in result.choices} == {"echo: hi there"}
    assert result.usage.completion_tokens == 3 * count_tokens("echo: hi there")
    result.choices[0].message["content"] = "changed"
    assert result.choices[1].message["content"] == "echo: hi there"


async def test_usage_counts_every_message() -> None:
    messages = [{"role": "system", "content": "be brief"}, user("hello world again")]
    result = await BuiltinEngine().chat(ChatRequest(model="m", messages=messages))
    assert result.usage.prompt_tokens == (2 + 1) + (3 + 1)
    assert result.usage.completion_tokens == 4  # "echo:", " hello", " world", " again"
    assert result.usage.total_tokens == 11


async def test_usage_of_tool_calls_counts_their_json() -> None:
    result = await chat('/call get_weather {"city": "Oslo"}', tools=[WEATHER])
    calls = result.choices[0].message["tool_calls"]
    assert result.usage.completion_tokens == count_tokens(json.dumps(calls))
    assert result.usage.completion_tokens > 0


async def test_prompt_count_is_the_chats_prompt_tokens() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "You answer in one line."},
        user("what time is it?"),
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "noon"},
        user("/call get_weather {} and then?"),
    ]
    engine = BuiltinEngine()
    asked = ChatRequest(model="m", messages=messages, tools=[WEATHER, TIME], tool_choice="any")

    count = await engine.count_prompt(asked)

    assert count == (await engine.chat(asked)).usage.prompt_tokens
    assert count > len(messages)  # every message's text and the call's JSON, not just one each


# --- streaming ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "kwargs"),
    [
        ("hello   wide\n\nworld  ", {}),
        ("one two three four", {"max_tokens": 3}),
        ("alpha beta", {"stop": ["eta"]}),
        ("x", {"response_format": {"type": "json_object"}}),
        ("/respond   spaced out  ", {}),
    ],
)
async def test_stream_concatenates_to_the_non_streamed_content(
    content: str, kwargs: dict[str, Any]
) -> None:
    engine = BuiltinEngine()
    result = await engine.chat(request(content, **kwargs))
    chunks = await collect(engine.chat_stream(request(content, **kwargs)))
    expected = result.choices[0].message["content"]
    assert streamed_content(chunks) == expected
    assert chunks[0].delta == {"role": "assistant", "content": ""}
    token_chunks = [c for c in chunks[1:-1] if c.delta.get("content")]
    assert len(token_chunks) == count_tokens(expected)
    assert chunks[-1].finish_reason == result.choices[0].finish_reason
    assert chunks[-1].usage == result.usage
    assert all(c.usage is None and c.finish_reason is None for c in chunks[:-1])


async def test_stream_tool_calls_in_one_chunk() -> None:
    engine = BuiltinEngine()
    req = request("/call get_weather {}\n/call get_time {}", tools=[WEATHER, TIME])
    result = await engine.chat(req)
    chunks = await collect(engine.chat_stream(req))
    with_calls = [c for c in chunks if "tool_calls" in c.delta]
    assert len(with_calls) == 1
    assert with_calls[0].delta["tool_calls"] == result.choices[0].message["tool_calls"]
    assert streamed_content(chunks) == ""
    assert chunks[-1].finish_reason == "tool_calls"
    assert chunks[-1].usage == result.usage


async def test_stream_with_n_streams_choices_in_turn() -> None:
    chunks = await collect(BuiltinEngine().chat_stream(request("a b", n=2)))
    indices = [c.index for c in chunks]
    assert indices == sorted(indices)
    assert set(indices) == {0, 1}
    assert streamed_content(chunks, 0) == streamed_content(chunks, 1) == "echo: a b"
    finishes = [c for c in chunks if c.finish_reason is not None]
    assert [c.index for c in finishes] == [0, 1]
    assert [c.usage is not None for c in chunks] == [False] * (len(chunks) - 1) + [True]
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.completion_tokens == 2 * count_tokens("echo: a b")


async def test_stream_sleeps_before_the_first_chunk() -> None:
    start = time.monotonic()
    stream = BuiltinEngine().chat_stream(request("/sleep 150\nhi"))
    first = await anext(stream)
    assert time.monotonic() - start >= 0.13
    assert first.delta == {"role": "assistant", "content": ""}
    rest = await collect(stream)
    assert streamed_content([first, *rest]) == "echo: hi"


# --- FIM ----------------------------------------------------------------------------------


async def test_fim_echoes_the_prompt_and_counts_the_suffix() -> None:
    engine = BuiltinEngine()
    bare = await engine.fim(FimRequest(model="m", prompt="def add(a, b):"))
    result = await engine.fim(FimRequest(model="m", prompt="def add(a, b):", suffix="return x"))
    assert result.choices[0].message["content"] == "echo: def add(a, b):"
    assert result.choices[0].finish_reason == "stop"
    assert bare.usage.prompt_tokens == count_tokens("def add(a, b):") + 1
    assert result.usage.prompt_tokens == bare.usage.prompt_tokens + 2


async def test_fim_obeys_directives_and_limits() -> None:
    engine = BuiltinEngine()
    responded = await engine.fim(FimRequest(model="m", prompt="x = 1\n/respond    return a + b"))
    assert responded.choices[0].message["content"] == "   return a + b"
    limited = await engine.fim(FimRequest(model="m", prompt="a b c d", max_tokens=2, min_tokens=5))
    assert limited.choices[0].message["content"] == "echo: a"
    assert limited.choices[0].finish_reason == "length"
    stopped = await engine.fim(FimRequest(model="m", prompt="a b c d", stop=[" c"]))
    assert stopped.choices[0].message["content"] == "echo: a b"
    called = await engine.fim(FimRequest(model="m", prompt="/call f {}"))
    assert called.choices[0].message["content"] == "echo: /call f {}"
    with pytest.raises(EngineError) as info:
        await engine.fim(FimRequest(model="m", prompt="/fail 504"))
    assert info.value.status == 504


async def test_fim_stream_matches_fim() -> None:
    engine = BuiltinEngine()
    req = FimRequest(model="m", prompt="def f():\n    pass", max_tokens=3)
    result = await engine.fim(req)
    chunks = await collect(engine.fim_stream(req))
    assert streamed_content(chunks) == result.choices[0].message["content"]
    assert chunks[-1].finish_reason == "length"
    assert chunks[-1].usage == result.usage


# --- tokenizer and protocols --------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "a", "  lead", "trail  ", "a  b\n\tc", "\n\n", "été  ü"])
def test_tokens_concatenate_back_to_the_text(text: str) -> None:
    assert "".join(tokenize(text)) == text


def test_tokens_attach_leading_whitespace() -> None:
    assert tokenize(" a  b c ") == [" a", "  b", " c", " "]
    assert count_tokens("") == 0


async def test_engine_satisfies_the_protocols() -> None:
    engine = BuiltinEngine()
    assert isinstance(engine, ChatEngine)
    assert isinstance(engine, FimEngine)
    assert isinstance(engine, EmbeddingsEngine)
    assert isinstance(engine, Closeable)
    await engine.aclose()
