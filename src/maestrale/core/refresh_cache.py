"""An in-memory cache whose entries are read again in the background before they go stale, so
that the hot path does no database read while it is used (docs/architecture.md §8).

A value is trusted for `ttl` seconds after it was read, never longer; once half of that has
passed, the next `get` starts one background read and still answers from memory. A key used at
least every `ttl / 2` seconds is therefore never read on the request path, and what changes in
the database is seen within `ttl`, as with a plain TTL cache. A miss (or a value past `ttl`) is
read on the caller's path, one read per key however many callers wait for it.

A read started before an invalidation (`pop`, `drop_where`, `clear`) is not stored: it may have
seen the database before the change.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

log = logging.getLogger("maestrale.cache")

K = TypeVar("K")
V = TypeVar("V")

REFRESH_AFTER = 0.5  # of the ttl


class RefreshingCache(Generic[K, V]):
    def __init__(
        self,
        ttl: float,
        *,
        max_entries: int = 100_000,
        usable: Callable[[V], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._clock = clock
        self.max_entries = max_entries
        self._usable = usable  # e.g. a key not expired yet: checked on every hit
        self._entries: dict[K, tuple[V, float]] = {}
        self._loading: dict[K, asyncio.Task[V | None]] = {}
        self._generation = 0

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, key: K) -> V | None:
        """The value of `key` if it is fresh, without reading anything."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        value, fetched = entry
        if self._clock() - fetched > self.ttl or (
            self._usable is not None and not self._usable(value)
        ):
            del self._entries[key]
            return None
        return value

    async def get(self, key: K, load: Callable[[K], Awaitable[V | None]]) -> V | None:
        """The value of `key`: from memory while fresh (read again in the background once half
        its ttl has passed), else from `load` (None: nothing to cache)."""
        entry = self._entries.get(key)
        if entry is not None:
            value = self.peek(key)
            if value is not None:
                if self._clock() - entry[1] > self.ttl * REFRESH_AFTER:
                    self._start(key, load, background=True)
                return value
        return await asyncio.shield(self._start(key, load, background=False))

    def _start(
        self, key: K, load: Callable[[K], Awaitable[V | None]], *, background: bool
    ) -> asyncio.Task[V | None]:
        task = self._loading.get(key)
        if task is None:
            # The generation and time of the request, not of the moment the task first runs.
            task = asyncio.create_task(self._load(key, load, self._generation, self._clock()))
            self._loading[key] = task
            task.add_done_callback(_logged if background else _retrieved)
        return task

    async def _load(
        self,
        key: K,
        load: Callable[[K], Awaitable[V | None]],
        generation: int,
        started: float,
    ) -> V | None:
        try:
            value = await load(key)
        finally:
            del self._loading[key]
        if generation == self._generation:  # no invalidation meanwhile
            if value is None:
                self._entries.pop(key, None)
            else:
                self._store(key, value, started)
        return value

    def put(self, key: K, value: V) -> None:
        self._store(key, value, self._clock())

    def _store(self, key: K, value: V, fetched: float) -> None:
        if self.ttl <= 0:
            return
        if len(self._entries) >= self.max_entries and key not in self._entries:
            self._entries.clear()  # bounded memory beats an LRU's bookkeeping on the hot path
        self._entries[key] = (value, fetched)

    def pop(self, key: K) -> None:
        self._generation += 1
        self._entries.pop(key, None)

    def drop_where(self, predicate: Callable[[V], bool]) -> None:
        self._generation += 1
        for key, (value, _) in list(self._entries.items()):
            if predicate(value):
                del self._entries[key]

    def clear(self) -> None:
        self._generation += 1
        self._entries.clear()


def _retrieved(task: asyncio.Task[object]) -> None:
    # Its callers got the failure (or were all cancelled): no "never retrieved" warning.
    if not task.cancelled():
        task.exception()


def _logged(task: asyncio.Task[object]) -> None:
    # A background read that failed: the value expires at its ttl and is then read on the
    # request path, which sees the failure.
    if not task.cancelled() and task.exception() is not None:
        log.warning("background cache refresh failed: %r", task.exception())
