"""Streamed calls: the engine's items, passed on and tallied, and the tally that turns what the
stream carried into the call's accounting report when it ends, fails or is abandoned."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

from maestrale.engines.types import ChatChunk, EngineError, Usage
from maestrale.gateway.call import CLIENT_CLOSED, Call, Report, engine_failure
from maestrale.tracing import engine_span

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
E = TypeVar("E")

# Accounts for a call with a status and a report (bound to the gateway and the call's event).
Account = Callable[[int, Report], Awaitable[None]]


class Tally(Protocol[T_contra]):
    """What the accounting of a stream learns from its items."""

    def add(self, item: T_contra) -> None:
        """Take in one item the stream carried (the first one included)."""
        ...

    def report(self) -> Report:
        """The call's report, from the items taken in so far (also after a failure)."""
        ...


class ChatTally:
    """Rebuilds the assistant messages of a chat (or FIM) stream, and its usage: the last chunk's,
    or the number of content deltas as completion tokens when the engine sent none."""

    __slots__ = ("content", "deltas", "tool_calls", "usage")

    def __init__(self) -> None:
        self.content: dict[int, list[str]] = {}
        self.tool_calls: dict[int, list[dict[str, Any]]] = {}
        self.usage: Usage | None = None
        self.deltas = 0

    def add(self, item: ChatChunk) -> None:
        content = item.delta.get("content")
        if isinstance(content, str) and content:
            self.content.setdefault(item.index, []).append(content)
            self.deltas += 1
        if item.delta.get("tool_calls"):
            self.tool_calls.setdefault(item.index, []).extend(item.delta["tool_calls"])
        if item.usage is not None:
            self.usage = item.usage

    def report(self) -> Report:
        return Report(self.usage or Usage(completion_tokens=self.deltas), self.messages())

    def messages(self) -> list[dict[str, Any]]:
        indexes = sorted(set(self.content) | set(self.tool_calls))
        return [
            {
                "role": "assistant",
                "content": "".join(self.content.get(i, [])),
                **({"tool_calls": self.tool_calls[i]} if i in self.tool_calls else {}),
            }
            for i in indexes
        ]


async def accounted(
    call: Call[E],
    start: Callable[[E], AsyncIterator[T]],
    tally: Tally[T],
    account: Account,
) -> AsyncGenerator[T, None]:
    """The items of the stream `start` opens on the call's engine, tallied. The call is
    accounted when the stream ends (200), fails (the engine's status; the failure is raised
    mapped as the client sees it) or is closed before its end (499: the client went away)."""
    status = CLIENT_CLOSED  # unless the stream reaches its end or fails
    started = time.perf_counter()
    items: AsyncIterator[T] | None = None
    traced = engine_span(call.endpoint, call.model, call.spec.engine)
    try:
        items = traced.follow(start(call.engine))
        async for item in items:
            tally.add(item)
            yield item
        status = 200
    except EngineError as exc:
        status = exc.status
        raise engine_failure(exc, call.model) from exc
    finally:
        call.engine_seconds = time.perf_counter() - started
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()
        report = tally.report()
        traced.tokens(report.usage)
        traced.end(status)
        await account(status, report)
