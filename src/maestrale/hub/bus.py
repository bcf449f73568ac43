"""The invalidation bus among the server processes of one machine without Redis: the hub passes
each process's message on to every other one (and to none across machines: that takes Redis)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable

from maestrale.config import Settings
from maestrale.core.auth.cache import KeyCache
from maestrale.core.auth.invalidation import Bus, Invalidation, Invalidator, RedisBus
from maestrale.hub import frames
from maestrale.hub.client import HubClient


class HubBus:
    def __init__(self, client: HubClient) -> None:
        self.client = client

    async def publish(self, payload: bytes) -> None:
        self.client.publish(payload)

    async def listen(
        self, deliver: Callable[[bytes], None], resync: Callable[[], None], ready: asyncio.Event
    ) -> None:
        """The hub connection lives as long as the process (its loss stops the process), so
        nothing is missed between subscription and end."""
        self.client.listen(deliver)
        ready.set()
        await asyncio.Event().wait()


async def publish_once(settings: Settings, items: Iterable[Invalidation]) -> None:
    """From a command-line process: tell the running servers at once, through Redis when it is
    configured, else through the hub of a `serve --workers` on the same data directory. With
    neither, they see the change within their caches' TTL."""
    if settings.redis_url:
        from redis.asyncio import Redis

        redis = Redis.from_url(settings.redis_url)
        try:
            await Invalidator(KeyCache(0), RedisBus(redis)).publish(items)
        finally:
            await redis.aclose()
        return
    path = frames.hub_path(settings.data_dir)
    if not path.exists():
        return
    try:
        client = await HubClient.connect(path)
    except OSError:  # a socket left by a server that has stopped
        return
    bus: Bus = HubBus(client)
    try:
        await Invalidator(KeyCache(0), bus).publish(items)
        with contextlib.suppress(frames.HubClosed):
            await client.drain()
    finally:
        await client.aclose()
