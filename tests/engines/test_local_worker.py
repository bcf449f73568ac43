"""`SerialWorker`, the thread of the in-process engines: how a stream reaches the event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from maestrale.engines.local.worker import Emit, SerialWorker

ITEMS = 200


def emit_all(emitted: threading.Event) -> Any:
    def job(emit: Emit[int], cancel: threading.Event) -> None:
        for item in range(ITEMS):
            emit(item)
        emitted.set()

    return job


async def test_a_stream_wakes_the_loop_per_batch_not_per_item(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each wake-up of the loop from the worker thread costs a system call and a turn of the loop
    # (holding the GIL the generation needs): items that come while the consumer is busy must be
    # taken together at its next turn, not one wake-up each.
    loop = asyncio.get_running_loop()
    wakeups = 0
    real = loop.call_soon_threadsafe

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal wakeups
        wakeups += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    worker: SerialWorker[int] = SerialWorker("test-stream", max_queue=1)
    emitted = threading.Event()
    stream = worker.stream(emit_all(emitted))
    try:
        items = [await anext(stream)]
        assert emitted.wait(10)  # the consumer is busy (the loop blocked) while the rest comes
        items += [item async for item in stream]
    finally:
        await stream.aclose()
        monkeypatch.undo()
        await worker.aclose()
    assert items == list(range(ITEMS))
    assert wakeups <= 4, wakeups  # one per item would be 200


async def test_every_item_arrives_in_order_when_the_consumer_keeps_up() -> None:
    worker: SerialWorker[int] = SerialWorker("test-stream", max_queue=1)
    try:
        items = [item async for item in worker.stream(emit_all(threading.Event()))]
        assert items == list(range(ITEMS))

        def failing(emit: Emit[int], cancel: threading.Event) -> None:
            emit(1)
            raise ValueError("boom")

        seen: list[int] = []

        async def consume() -> None:
            async for item in worker.stream(failing):
                seen.append(item)

        with pytest.raises(ValueError, match="boom"):
            await consume()
        assert seen == [1]  # what was emitted before the failure arrives first
    finally:
        await worker.aclose()
