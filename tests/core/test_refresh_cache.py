"""The refresh-ahead cache of the hot path (keys, limits): a value in use is read again in the
background, never on the request path; misses share one read; an invalidation wins over a read
that started before it."""

from __future__ import annotations

import asyncio

from maestrale.core.refresh_cache import RefreshingCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Loader:
    def __init__(self) -> None:
        self.calls = 0
        self.value = "v1"
        self.gate: asyncio.Event | None = None

    async def __call__(self, key: str) -> str | None:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.value


async def test_concurrent_misses_share_one_read() -> None:
    cache: RefreshingCache[str, str] = RefreshingCache(1.0, clock=Clock())
    load = Loader()
    load.gate = asyncio.Event()
    waiting = [asyncio.create_task(cache.get("k", load)) for _ in range(20)]
    await asyncio.sleep(0)
    load.gate.set()
    assert await asyncio.gather(*waiting) == ["v1"] * 20
    assert load.calls == 1


async def test_a_value_in_use_is_refreshed_in_the_background() -> None:
    clock = Clock()
    cache: RefreshingCache[str, str] = RefreshingCache(1.0, clock=clock)
    load = Loader()
    assert await cache.get("k", load) == "v1"
    clock.now += 0.4  # fresh: no read at all
    assert await cache.get("k", load) == "v1"
    assert load.calls == 1
    clock.now += 0.2  # past half the ttl: answered from memory, one read started behind
    load.value, load.gate = "v2", asyncio.Event()
    answers = [await cache.get("k", load) for _ in range(5)]
    assert answers == ["v1"] * 5  # nobody waited for the read
    await asyncio.sleep(0)
    assert load.calls == 2  # one read for the five
    load.gate.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert await cache.get("k", load) == "v2"
    assert load.calls == 2


async def test_nothing_older_than_the_ttl_is_served() -> None:
    clock = Clock()
    cache: RefreshingCache[str, str] = RefreshingCache(1.0, clock=clock)
    load = Loader()
    await cache.get("k", load)
    clock.now += 1.5
    load.value = "v2"
    assert await cache.get("k", load) == "v2"  # read on the caller's path
    assert load.calls == 2


async def test_an_invalidation_wins_over_a_read_under_way() -> None:
    clock = Clock()
    cache: RefreshingCache[str, str] = RefreshingCache(1.0, clock=clock)
    load = Loader()
    await cache.get("k", load)
    clock.now += 0.6
    load.gate = asyncio.Event()
    await cache.get("k", load)  # starts a background read that will answer "v1" again
    cache.pop("k")  # revoked meanwhile
    load.gate.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert cache.peek("k") is None  # the stale read was not stored


async def test_a_zero_ttl_reads_every_time() -> None:
    cache: RefreshingCache[str, str] = RefreshingCache(0.0, clock=Clock())
    load = Loader()
    for _ in range(3):
        await cache.get("k", load)
    assert load.calls == 3


async def test_none_is_not_cached_and_a_failed_read_raises_to_its_callers() -> None:
    cache: RefreshingCache[str, str] = RefreshingCache(1.0, clock=Clock())
    load = Loader()
    load.value = None  # type: ignore[assignment]
    assert await cache.get("k", load) is None
    assert len(cache) == 0

    async def failing(key: str) -> str | None:
        raise ConnectionError("database down")

    try:
        await cache.get("k", failing)
    except ConnectionError:
        pass
    else:
        raise AssertionError("the failure was swallowed")
