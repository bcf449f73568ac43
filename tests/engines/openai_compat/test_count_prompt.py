"""Counting a chat's prompt with vLLM's POST /tokenize (at the server's root), over real HTTP;
a server without it cannot count."""

from __future__ import annotations

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine
from maestrale.engines.types import ChatRequest, EngineError
from tests.engines.openai_compat.stub_upstream import PROMPT_TOKENS
from tests.engines.openai_compat.support import Stub, chat_request, new_tag

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}


async def test_the_count_is_vllms_for_the_chats_messages_and_tools(
    engine: OpenAICompatEngine, stub: Stub
) -> None:
    tag = new_tag()
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": f"weather in Oslo? tag:{tag}"},
    ]
    request = ChatRequest(
        model="upstream-model",
        messages=messages,
        tools=[WEATHER],
        tool_choice="any",
        max_tokens=5,
        extra={"chat_template_kwargs": {"enable_thinking": False}, "user": "u1"},
    )

    count = await engine.count_prompt(request)

    assert count == PROMPT_TOKENS == (await engine.chat(request)).usage.prompt_tokens
    [counted, _chat] = await stub.records(tag)
    assert counted["path"] == "/tokenize"  # the server's root, not the base URL's /v1
    assert counted["body"] == {
        "model": "upstream-model",
        "messages": messages,
        "tools": [WEATHER],
        "add_generation_prompt": True,
        "chat_template_kwargs": {"enable_thinking": False},
    }


@pytest.mark.parametrize("steer", ["status:404", "status:405", "no-count"])
async def test_a_server_without_vllms_tokenize_cannot_count(
    engine: OpenAICompatEngine, steer: str
) -> None:
    with pytest.raises(EngineError) as caught:
        await engine.count_prompt(chat_request(steer))

    assert caught.value.status == 400
    assert caught.value.code == "token_count_unsupported"
    assert caught.value.message.startswith("this engine cannot count tokens")
