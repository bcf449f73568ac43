"""Cache invalidation across replicas: revoked keys, archived workspaces, changed limits.

Every replica keeps verified keys and organizations' limits in memory (no database read on the
hot path). A change is applied to the local caches after its transaction committed and, when
Redis is configured, published on one channel that every replica listens to, so a deleted key is
refused by all replicas at once. Without Redis the caches' TTL (1 s by default) bounds the delay.
A replica that loses its subscription clears its caches when it resubscribes (it may have missed
messages meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from maestrale.core.auth.cache import KeyCache

log = logging.getLogger("maestrale.invalidation")

CHANNEL = "maestrale:invalidate"
Kind = Literal["key", "workspace", "limits", "all"]


@dataclass(frozen=True, slots=True)
class Invalidation:
    kind: Kind
    id: str | None = None


class Invalidator:
    def __init__(self, key_cache: KeyCache, redis: Any | None = None) -> None:
        self.key_cache = key_cache
        self.redis = redis
        self._listeners: list[Callable[[Invalidation], None]] = []

    def subscribe_local(self, listener: Callable[[Invalidation], None]) -> None:
        """Another in-memory cache (e.g. the limits) that must see invalidations too."""
        self._listeners.append(listener)

    def apply(self, item: Invalidation) -> None:
        if item.kind == "key" and item.id:
            self.key_cache.invalidate_key(item.id)
        elif item.kind == "workspace" and item.id:
            self.key_cache.invalidate_workspace(item.id)
        elif item.kind == "all":
            self.key_cache.clear()
        for listener in self._listeners:
            listener(item)

    async def publish(self, items: Iterable[Invalidation]) -> None:
        """Apply locally, then tell the other replicas. Call only after the change committed."""
        batch = list(dict.fromkeys(items))
        if not batch:
            return
        for item in batch:
            self.apply(item)
        if self.redis is not None:
            payload = orjson.dumps([{"kind": i.kind, "id": i.id} for i in batch])
            try:
                await self.redis.publish(CHANNEL, payload)
            except Exception:
                # The change is committed; other replicas still see it within the cache TTL.
                log.exception("could not publish %d invalidations", len(batch))

    def _receive(self, data: bytes | str) -> None:
        try:
            items = orjson.loads(data)
            for item in items:
                kind = item.get("kind")
                if kind in ("key", "workspace", "limits", "all"):
                    self.apply(Invalidation(kind, item.get("id")))
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            log.warning("ignored a malformed invalidation message")

    async def listen(self, ready: asyncio.Event) -> None:
        """Receive other replicas' invalidations until cancelled; resubscribe after failures."""
        assert self.redis is not None
        backoff = 0.1
        first = True
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CHANNEL)
                if not first:
                    self.apply(Invalidation("all"))  # messages may have been missed meanwhile
                first = False
                ready.set()
                backoff = 0.1
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._receive(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("invalidation channel lost; resubscribing in %.1f s", backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()


async def publish_once(redis_url: str | None, items: Iterable[Invalidation]) -> None:
    """From a command-line process: tell the running replicas (no-op without Redis; they then
    see the change within their cache TTL)."""
    if not redis_url:
        return
    from redis.asyncio import Redis

    redis = Redis.from_url(redis_url)
    try:
        await Invalidator(KeyCache(0), redis).publish(items)
    finally:
        await redis.aclose()
