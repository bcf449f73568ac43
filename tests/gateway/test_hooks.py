"""The gateway's call hooks: each hook's reservation goes back to that hook, whatever the number
of hooks, after a success, a failure, a stream, or a refusal by a later hook."""

from __future__ import annotations

from typing import Any, cast

import pytest

from maestrale.accounting.recorder import Recorder
from maestrale.core.db import Database
from maestrale.core.errors import AppError, TooManyRequests
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import load_catalog
from maestrale.engines.types import ChatRequest, Usage
from maestrale.gateway.capabilities import CHAT
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller, CallInfo


class Hook:
    """Reserves a token of its own; remembers what it is handed back."""

    def __init__(self, name: str, *, refuse: bool = False) -> None:
        self.name = name
        self.refuse = refuse
        self.reserved: list[object] = []
        self.settled: list[tuple[object | None, int, float]] = []

    async def before_call(self, call: CallInfo) -> object | None:
        if self.refuse:
            raise TooManyRequests(f"{self.name} refuses", code="refused")
        reservation = (self.name, len(self.reserved))
        self.reserved.append(reservation)
        return reservation

    async def after_call(
        self, call: CallInfo, reservation: object | None, usage: Usage, cost: float
    ) -> None:
        self.settled.append((reservation, usage.total_tokens, cost))


class Rows:
    """Stands in for the Recorder: keeps the usage rows."""

    def __init__(self) -> None:
        self.usage: list[dict[str, Any]] = []

    def record(self, usage: dict[str, Any], event: dict[str, Any] | None = None) -> None:
        self.usage.append(usage)


class NoDatabase:
    def check_released(self, what: str) -> None:
        pass


@pytest.fixture
async def registry() -> Any:
    registry = EngineRegistry([s for s in load_catalog() if s.engine == "builtin"])
    yield registry
    await registry.aclose()


def _gateway(registry: EngineRegistry, rows: Rows, *hooks: Hook) -> Gateway:
    return Gateway(registry, cast(Recorder, rows), cast(Database, NoDatabase()), hooks=hooks)


def _request(text: str) -> ChatRequest:
    return ChatRequest(model="", messages=[{"role": "user", "content": text}])


CALLER = Caller("org", "ws")


async def test_each_hook_gets_its_own_reservation_back(registry: EngineRegistry) -> None:
    first, second, rows = Hook("first"), Hook("second"), Rows()
    gateway = _gateway(registry, rows, first, second)
    call = await gateway.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")
    await gateway.admit(call, 10)
    result = await gateway.chat(call, _request("hello there"))
    tokens = result.usage.total_tokens
    assert first.settled == [(("first", 0), tokens, 0.0)]
    assert second.settled == [(("second", 0), tokens, 0.0)]
    assert [row["status_code"] for row in rows.usage] == [200]


async def test_a_failed_call_hands_every_reservation_back(registry: EngineRegistry) -> None:
    first, second, rows = Hook("first"), Hook("second"), Rows()
    gateway = _gateway(registry, rows, first, second)
    call = await gateway.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")
    await gateway.admit(call, 10)
    with pytest.raises(AppError) as info:
        await gateway.chat(call, _request("/fail 500"))
    assert info.value.status_code == 502
    assert first.settled == [(("first", 0), 0, 0.0)]
    assert second.settled == [(("second", 0), 0, 0.0)]
    assert [row["status_code"] for row in rows.usage] == [500]


async def test_a_stream_hands_every_reservation_back(registry: EngineRegistry) -> None:
    first, second, rows = Hook("first"), Hook("second"), Rows()
    gateway = _gateway(registry, rows, first, second)
    call = await gateway.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")
    await gateway.admit(call, 10)
    head, rest = await gateway.stream_chat(call, _request("one two three"))
    chunks = [head, *[chunk async for chunk in rest]]
    usage = next(chunk.usage for chunk in reversed(chunks) if chunk.usage is not None)
    assert first.settled == [(("first", 0), usage.total_tokens, 0.0)]
    assert second.settled == [(("second", 0), usage.total_tokens, 0.0)]
    assert [row["status_code"] for row in rows.usage] == [200]


async def test_an_abandoned_stream_hands_every_reservation_back(registry: EngineRegistry) -> None:
    first, second, rows = Hook("first"), Hook("second"), Rows()
    gateway = _gateway(registry, rows, first, second)
    call = await gateway.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")
    await gateway.admit(call, 10)
    _, rest = await gateway.stream_chat(call, _request("one two three four"))
    await rest.aclose()  # the client went away after the first chunk
    assert [settled[0] for settled in first.settled] == [("first", 0)]
    assert [settled[0] for settled in second.settled] == [("second", 0)]
    assert [row["status_code"] for row in rows.usage] == [499]


async def test_a_refusal_hands_back_what_earlier_hooks_reserved(registry: EngineRegistry) -> None:
    first, refusing, rows = Hook("first"), Hook("second", refuse=True), Rows()
    gateway = _gateway(registry, rows, first, refusing)
    call = await gateway.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")
    with pytest.raises(TooManyRequests):
        await gateway.admit(call, 10)
    assert first.settled == [(("first", 0), 0, 0.0)]
    assert refusing.settled == []
    assert rows.usage == []  # a refused call is not accounted
