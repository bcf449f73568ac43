"""`Gateway.count_prompt`: the engine's count of a chat's prompt, neither admitted (no limits
reserved) nor accounted; a 400 naming the model for an engine that cannot count."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import pytest

from maestrale.accounting.recorder import Recorder
from maestrale.core.db import Database
from maestrale.core.errors import AppError
from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec, load_catalog
from maestrale.engines.types import ChatChunk, ChatRequest, ChatResult, Usage
from maestrale.gateway.capabilities import CHAT
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller, CallInfo
from tests.gateway.test_release import Rows

CALLER = Caller("org", "ws")


class ChatOnly:
    """A chat engine that cannot count its prompts (the builtin engine's chat, nothing else)."""

    def __init__(self) -> None:
        self._engine = BuiltinEngine()

    async def chat(self, request: ChatRequest) -> ChatResult:
        return await self._engine.chat(request)

    def chat_stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        return self._engine.chat_stream(request)


class Hook:
    """Remembers every call it is asked to admit."""

    def __init__(self) -> None:
        self.admitted: list[CallInfo] = []

    async def before_call(self, call: CallInfo) -> object | None:
        self.admitted.append(call)
        return None

    async def after_call(
        self, call: CallInfo, reservation: object | None, usage: Usage, cost: float
    ) -> None:
        pass


@pytest.fixture
async def registry() -> AsyncIterator[EngineRegistry]:
    builtin = [s for s in load_catalog() if s.engine == "builtin"]
    chat_only = ModelSpec(id="chat-only", engine="chat_only", capabilities=["completion_chat"])
    registry = EngineRegistry([*builtin, chat_only], factories={"chat_only": lambda _: ChatOnly()})
    yield registry
    await registry.aclose()


def _request(text: str) -> ChatRequest:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]
    return ChatRequest(model="", messages=messages)


async def test_a_count_is_the_engines_neither_admitted_nor_accounted(
    db: Database, registry: EngineRegistry
) -> None:
    hook, rows = Hook(), Rows()
    gateway = Gateway(registry, cast(Recorder, rows), db, hooks=[hook])
    call = await gateway.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")

    count = await gateway.count_prompt(call, _request("how many tokens is this"))

    assert count == (2 + 1) + (5 + 1)  # the builtin engine's: each message's words, plus one
    assert hook.admitted == [] and rows.usage == []


async def test_an_engine_that_cannot_count_is_a_400_naming_the_model(
    db: Database, registry: EngineRegistry
) -> None:
    gateway = Gateway(registry, cast(Recorder, Rows()), db)
    call = await gateway.open(CALLER, "chat-only", CHAT, correlation_id="c")

    with pytest.raises(AppError) as caught:
        await gateway.count_prompt(call, _request("hello"))

    assert caught.value.status_code == 400
    assert caught.value.code == "token_count_unsupported"
    assert "'chat-only'" in caught.value.message
