"""Cache invalidation across replicas: revoked keys, archived workspaces, changed limits, ended
voice sessions.

Every replica keeps verified keys and organizations' limits in memory (no database read on the
hot path). A change is applied to the local caches after its transaction committed and published
on a bus that every process listens to, so a deleted key is refused by all of them at once: a
Redis channel across machines, or the hub of `serve --workers` among the processes of one
machine. Without either the caches' TTL (1 s by default) bounds the delay. A replica that loses
its subscription clears its caches when it resubscribes (it may have missed messages meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

from maestrale.core.auth.cache import KeyCache

log = logging.getLogger("maestrale.invalidation")

CHANNEL = "maestrale:invalidate"
# "audio_session": a voice session ended (its socket, on whichever replica serves it, closes).
Kind = Literal["key", "workspace", "limits", "audio_session", "all"]


@dataclass(frozen=True, slots=True)
class Invalidation:
    kind: Kind
    id: str | None = None


class Bus(Protocol):
    """Carries invalidations to the other processes."""

    async def publish(self, payload: bytes) -> None: ...

    async def listen(
        self, deliver: Callable[[bytes], None], resync: Callable[[], None], ready: asyncio.Event
    ) -> None:
        """Hand every message of the other processes to `deliver` until cancelled; call `resync`
        when messages may have been missed; set `ready` once subscribed."""
        ...


class Invalidator:
    def __init__(self, key_cache: KeyCache, bus: Bus | None = None) -> None:
        self.key_cache = key_cache
        self.bus = bus
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
        if self.bus is not None:
            payload = orjson.dumps([{"kind": i.kind, "id": i.id} for i in batch])
            try:
                await self.bus.publish(payload)
            except Exception:
                # The change is committed; other replicas still see it within the cache TTL.
                log.exception("could not publish %d invalidations", len(batch))

    def _receive(self, data: bytes | str) -> None:
        try:
            items = orjson.loads(data)
            for item in items:
                kind = item.get("kind")
                if kind in ("key", "workspace", "limits", "audio_session", "all"):
                    self.apply(Invalidation(kind, item.get("id")))
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            log.warning("ignored a malformed invalidation message")

    async def listen(self, ready: asyncio.Event) -> None:
        """Receive the other processes' invalidations until cancelled."""
        assert self.bus is not None
        await self.bus.listen(self._receive, lambda: self.apply(Invalidation("all")), ready)


class RedisBus:
    """Invalidations on one Redis channel that every replica subscribes to."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis

    async def publish(self, payload: bytes) -> None:
        await self.redis.publish(CHANNEL, payload)

    async def listen(
        self, deliver: Callable[[bytes], None], resync: Callable[[], None], ready: asyncio.Event
    ) -> None:
        """Resubscribe after failures, with a backoff."""
        backoff = 0.1
        first = True
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CHANNEL)
                if not first:
                    resync()  # messages may have been missed meanwhile
                first = False
                ready.set()
                backoff = 0.1
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        deliver(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("invalidation channel lost; resubscribing in %.1f s", backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
