"""The hub's wire: calls, streams with and without input, errors, cancellation, broadcasts and
the loss of the connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from maestrale.engines.types import EngineError
from maestrale.hub import frames
from maestrale.hub.client import HubClient
from maestrale.hub.server import CallHandler, HubError
from tests.hub.hubs import running_hub


@pytest.fixture
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hub")  # short: a Unix socket's path has 107 bytes at most


async def _add(a: int, b: int) -> int:
    return a + b


async def _refuse(status: int) -> None:
    raise EngineError(status, "model busy", code="engine_overloaded")


async def _crash() -> None:
    raise ValueError("secret internals")


async def _count(args: tuple[Any, ...], feed: asyncio.Queue[Any]) -> AsyncIterator[int]:
    for i in range(args[0]):
        yield i
    if args[0] < 0:
        raise EngineError(400, "negative")


async def _echo_input(args: tuple[Any, ...], feed: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    while (item := await feed.get()) is not None:
        yield item.upper()


async def test_calls_and_their_errors_cross(folder: Path) -> None:
    calls: dict[str, CallHandler] = {"add": _add, "refuse": _refuse, "crash": _crash}
    async with running_hub(folder, calls) as (_, client):
        assert await asyncio.gather(*(client.call("add", i, i) for i in range(50))) == [
            2 * i for i in range(50)
        ]
        with pytest.raises(EngineError) as refused:
            await client.call("refuse", 503)
        assert (refused.value.status, refused.value.code) == (503, "engine_overloaded")
        with pytest.raises(HubError, match="ValueError: secret internals"):
            await client.call("crash")
        with pytest.raises(HubError, match="KeyError"):
            await client.call("no-such-call")


async def test_streams_end_fail_and_read_their_input(folder: Path) -> None:
    streams = {"count": _count, "echo": _echo_input}
    async with running_hub(folder, {}, streams) as (_, client):
        assert [i async for i in client.stream("count", 5)] == [0, 1, 2, 3, 4]
        with pytest.raises(EngineError, match="negative"):
            [i async for i in client.stream("count", -1)]
        feed: asyncio.Queue[Any] = asyncio.Queue()
        for word in ("a", "b", None):
            feed.put_nowait(word)
        assert [i async for i in client.stream("echo", feed=feed)] == ["A", "B"]


async def test_a_caller_that_goes_away_cancels_its_work(folder: Path) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def endless(args: tuple[Any, ...], feed: asyncio.Queue[Any]) -> AsyncIterator[int]:
        try:
            while True:
                yield 1
                await asyncio.sleep(0.01)
        finally:
            cancelled.set()

    async with running_hub(folder, {"slow": slow}, {"endless": endless}) as (_, client):
        task = asyncio.create_task(client.call("slow"))
        await started.wait()
        task.cancel()
        await asyncio.wait_for(cancelled.wait(), 5)
        cancelled.clear()
        items = client.stream("endless")
        assert await anext(items) == 1
        await items.aclose()  # type: ignore[attr-defined]
        await asyncio.wait_for(cancelled.wait(), 5)


async def test_a_broadcast_reaches_every_other_process(folder: Path) -> None:
    async with running_hub(folder, {}) as (_, first):
        others = [await HubClient.connect(folder / "hub.sock") for _ in range(2)]
        heard: list[list[bytes]] = [[], [], []]
        for i, client in enumerate([first, *others]):
            client.listen(heard[i].append)
        first.publish(b"revoked")
        await first.drain()
        for _ in range(100):
            if all(heard[1:]):
                break
            await asyncio.sleep(0.01)
        assert heard == [[], [b"revoked"], [b"revoked"]]
        for client in others:
            await client.aclose()


async def test_losing_the_hub_fails_pending_calls_and_tells_the_process(folder: Path) -> None:
    never = asyncio.Event()

    async def hang() -> None:
        await never.wait()

    lost = asyncio.Event()
    async with running_hub(folder, {"hang": hang}) as (hub, client):
        client.on_lost = lost.set
        pending = asyncio.create_task(client.call("hang"))
        await asyncio.sleep(0.05)
        await hub.close()
        with pytest.raises(frames.HubClosed):
            await asyncio.wait_for(pending, 5)
        await asyncio.wait_for(lost.wait(), 5)
        with pytest.raises(frames.HubClosed):
            await client.call("hang")


async def test_the_socket_is_private_and_bounded(folder: Path) -> None:
    async with running_hub(folder, {}):
        assert (folder / "hub.sock").stat().st_mode & 0o777 == 0o600
    reader = asyncio.StreamReader()
    reader.feed_data((frames.MAX_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(frames.HubClosed, match="refused"):
        await frames.read_frame(reader)


def test_a_long_data_directory_gets_a_short_private_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    path = frames.hub_path(deep)
    assert len(str(path)) <= 107
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert frames.hub_path(deep) == path  # the CLI finds the server's hub again
    assert frames.hub_path(tmp_path) == tmp_path.resolve() / "hub.sock"
