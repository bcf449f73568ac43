"""FIM in both upstream dialects, and embeddings, over real HTTP."""

from __future__ import annotations

import json

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine
from maestrale.engines.types import EmbeddingRequest, EngineError
from tests.engines.openai_compat.conftest import MakeEngine
from tests.engines.openai_compat.stub_upstream import PROMPT_TOKENS, TEXT
from tests.engines.openai_compat.support import Stub, collect, content_of, fim_request, new_tag

FIM_FIELDS = {
    "suffix": "return x",
    "max_tokens": 32,
    "min_tokens": 2,
    "stop": ["\n"],
    "temperature": 0.1,
    "top_p": 0.8,
    "random_seed": 3,
}


async def test_fim_completions_api_body_and_answer(stub: Stub, engine: OpenAICompatEngine) -> None:
    tag = new_tag()

    result = await engine.fim(fim_request(f"def f(): tag:{tag}", **FIM_FIELDS))

    assert result.choices[0].message == {"role": "assistant", "content": TEXT, "tool_calls": None}
    assert result.choices[0].finish_reason == "stop"
    assert result.usage.prompt_tokens == PROMPT_TOKENS
    record = await stub.record(tag)
    assert record["path"] == "/v1/completions"
    assert record["body"] == {
        "model": "upstream-model",
        "prompt": f"def f(): tag:{tag}",
        "suffix": "return x",
        "max_tokens": 32,
        "stop": ["\n"],
        "temperature": 0.1,
        "top_p": 0.8,
        "seed": 3,
    }


async def test_fim_completions_api_stream(engine: OpenAICompatEngine) -> None:
    chunks = await collect(engine.fim_stream(fim_request("def f(): words:4", suffix="pass")))

    assert chunks[0].delta["role"] == "assistant"
    assert content_of(chunks) == "w1 w2 w3 w4"
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 4


async def test_fim_mistral_api_body_and_answer(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine(fim_api="mistral")
    tag = new_tag()

    result = await engine.fim(fim_request(f"def f(): tag:{tag}", **FIM_FIELDS))

    assert result.choices[0].message["content"] == TEXT
    assert result.usage.completion_tokens == len(TEXT.split())
    record = await stub.record(tag)
    assert record["path"] == "/v1/fim/completions"
    assert record["body"] == {
        "model": "upstream-model",
        "prompt": f"def f(): tag:{tag}",
        **FIM_FIELDS,
    }


async def test_fim_mistral_api_stream(stub: Stub, make_engine: MakeEngine) -> None:
    engine = make_engine(fim_api="mistral")
    tag = new_tag()

    chunks = await collect(engine.fim_stream(fim_request(f"tag:{tag} words:3")))

    assert content_of(chunks) == "w1 w2 w3"
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].usage is not None
    body = (await stub.record(tag))["body"]
    assert body["stream"] is True
    assert "stream_options" not in body


async def test_fim_echo_shows_no_none_fields(make_engine: MakeEngine) -> None:
    engine = make_engine(fim_api="mistral")

    result = await engine.fim(fim_request("echo"))

    assert json.loads(result.choices[0].message["content"]) == {
        "model": "upstream-model",
        "prompt": "echo",
    }


async def test_embeddings_come_back_in_input_order(stub: Stub, engine: OpenAICompatEngine) -> None:
    tag = new_tag()
    inputs = [f"reverse tag:{tag}", "a", "bb", "a much longer input"]

    result = await engine.embed(EmbeddingRequest(model="upstream-model", inputs=inputs))

    # The stub answered in reverse order; component 0 of each vector is its input's length.
    assert [vector[0] for vector in result.vectors] == [float(len(text)) for text in inputs]
    assert result.usage.prompt_tokens == sum(len(text.split()) for text in inputs)
    record = await stub.record(tag)
    assert record["path"] == "/v1/embeddings"
    assert record["body"] == {
        "model": "upstream-model",
        "input": inputs,
        "encoding_format": "float",
    }


async def test_embedding_dimension_is_passed(stub: Stub, engine: OpenAICompatEngine) -> None:
    tag = new_tag()
    request = EmbeddingRequest(model="m", inputs=[f"tag:{tag}"], output_dimension=16)

    result = await engine.embed(request)

    assert len(result.vectors[0]) == 16
    assert (await stub.record(tag))["body"]["dimensions"] == 16


async def test_embedding_dtype_other_than_float_is_refused(engine: OpenAICompatEngine) -> None:
    request = EmbeddingRequest(model="m", inputs=["x"], output_dtype="int8")

    with pytest.raises(EngineError) as caught:
        await engine.embed(request)

    assert caught.value.status == 400
