"""mistralai 3.x's sampling fields and logprobs forwarded to the upstream, and the raw text
completion (the legacy /v1/completions) on its classic /completions."""

from __future__ import annotations

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine
from maestrale.engines.types import EngineError, TextRequest
from tests.engines.openai_compat.conftest import MakeEngine
from tests.engines.openai_compat.stub_upstream import LOGPROB
from tests.engines.openai_compat.support import Stub, chat_request, collect, content_of, new_tag


async def test_options_are_forwarded_and_logprobs_parsed(
    stub: Stub, engine: OpenAICompatEngine
) -> None:
    tag = new_tag()
    request = chat_request(
        f"words:3 tag:{tag}", top_k=5, repetition_penalty=1.1, min_tokens=2, logprobs=1
    )
    result = await engine.chat(request)
    body = (await stub.record(tag))["body"]
    assert (body["top_k"], body["repetition_penalty"], body["min_tokens"]) == (5, 1.1, 2)
    assert (body["logprobs"], body["top_logprobs"]) == (True, 1)
    [choice] = result.choices
    entries = choice.logprobs or []
    assert "".join(e["token"] for e in entries) == choice.message["content"] == "w1 w2 w3"
    assert entries[0] == {
        "token": "w1 ",
        "logprob": LOGPROB,
        "bytes": list(b"w1 "),
        "token_id": -1,  # OpenAI's answers carry none
        "top_logprobs": [
            {"token": "w1 ", "logprob": LOGPROB, "bytes": list(b"w1 "), "token_id": -1}
        ],
    }
    chunks = await collect(engine.chat_stream(chat_request("words:3", logprobs=0)))
    streamed = [e for c in chunks for e in c.logprobs or []]
    assert [e["token"] for e in streamed] == ["w1 ", "w2 ", "w3"]
    assert all(e["top_logprobs"] == [] for e in streamed)


async def test_raw_text_completion(
    stub: Stub, engine: OpenAICompatEngine, make_engine: MakeEngine
) -> None:
    tag = new_tag()
    request = TextRequest(model="m", prompt=f"words:2 tag:{tag}", n=2, max_tokens=9, logprobs=1)
    result = await engine.complete(request)
    record = await stub.record(tag)
    assert record["path"] == "/v1/completions"
    assert record["body"] == {
        "model": "m",
        "prompt": f"words:2 tag:{tag}",
        "max_tokens": 9,
        "n": 2,
        "logprobs": 1,
    }
    assert [c.message["content"] for c in result.choices] == ["w1 w2"] * 2
    entries = result.choices[0].logprobs or []
    assert [(e["token"], e["logprob"]) for e in entries] == [("w1 ", LOGPROB), ("w2", LOGPROB)]
    assert entries[0]["top_logprobs"][0]["token"] == "w1 "
    chunks = await collect(engine.complete_stream(TextRequest(model="m", prompt="words:4")))
    assert content_of(chunks) == "w1 w2 w3 w4" and chunks[-1].usage is not None
    with pytest.raises(EngineError) as refused:
        await make_engine(fim_api="mistral").complete(TextRequest(model="m", prompt="x"))
    assert refused.value.status == 400
