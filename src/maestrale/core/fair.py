"""Slots shared fairly between tenants: the one primitive of the sandbox's slots and the local
engines' queues.

A caller asks for a slot with its key (its workspace) and its class: `INTERACTIVE` (an API call
someone waits on) or `BATCH` (library ingestion, jobs). When a slot frees, the longest-waiting
caller of the best class gets it, and among the keys of that class the one served least recently
goes first (round-robin), so a key that queued a hundred requests waits behind every other key
once per turn instead of ahead of them all. `per_key` bounds the slots one key holds at once, so
long runs of one tenant always leave room for the others. A wait longer than `timeout` raises
`QueueTimeout`.

The state is guarded by a thread lock and waiters are woken on their own event loop, because the
local engines are shared by requests of several loops (tests, a TestClient portal).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import IntEnum

__all__ = ["BATCH", "INTERACTIVE", "FairShare", "Priority", "QueueTimeout", "Share", "current"]


class Priority(IntEnum):
    """Lower runs first."""

    INTERACTIVE = 0
    BATCH = 1


INTERACTIVE, BATCH = Priority.INTERACTIVE, Priority.BATCH


@dataclass(frozen=True, slots=True)
class Share:
    """Who a piece of work is for: the key slots are shared by, and its class."""

    key: str = ""
    priority: Priority = INTERACTIVE


# Set by whoever starts the work (the job worker for a job's handler, the gateway for an API
# call), read where it queues (an engine, the sandbox): the layers between need not pass it.
_CURRENT: contextvars.ContextVar[Share] = contextvars.ContextVar("maestrale_share")


def current() -> Share:
    """The share of the running work; outside any, an anonymous interactive one."""
    return _CURRENT.get(Share())


def set_current(share: Share) -> contextvars.Token[Share]:
    """Make `share` the running work's share (in this context and the tasks it starts)."""
    return _CURRENT.set(share)


def reset_current(token: contextvars.Token[Share]) -> None:
    _CURRENT.reset(token)


class QueueTimeout(TimeoutError):
    """No slot was free within the wait allowed."""

    def __init__(self, waited: float) -> None:
        super().__init__(f"no slot was free within {waited:g} s")
        self.waited = waited


@dataclass(eq=False, slots=True)
class _Waiter:
    key: str
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    granted: bool = False


@dataclass(slots=True)
class _Class:
    # Keys in round-robin order (the next to serve first), each with its waiters in order.
    keys: OrderedDict[str, deque[_Waiter]] = field(default_factory=OrderedDict)


class FairShare:
    """`slots` shared between keys; see the module's docstring."""

    def __init__(self, slots: int, *, per_key: int | None = None) -> None:
        if slots < 1 or (per_key is not None and per_key < 1):
            raise ValueError("slots and per_key must be positive")
        self.slots = slots
        self.per_key = min(per_key or slots, slots)
        self._lock = threading.Lock()
        self._free = slots
        self._held: Counter[str] = Counter()
        self._classes = {priority: _Class() for priority in Priority}

    @property
    def waiting(self) -> int:
        """Callers waiting for a slot."""
        with self._lock:
            return sum(len(q) for c in self._classes.values() for q in c.keys.values())

    def held(self, key: str) -> int:
        """Slots `key` holds now."""
        with self._lock:
            return self._held[key]

    @asynccontextmanager
    async def slot(
        self, share: Share | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[None]:
        """Hold a slot for `share` (default: `current()`) for the block."""
        share = share or current()
        await self.acquire(share.key, share.priority, timeout=timeout)
        try:
            yield
        finally:
            self.release(share.key)

    async def acquire(
        self, key: str, priority: Priority = INTERACTIVE, *, timeout: float | None = None
    ) -> None:
        """Wait for a slot (`QueueTimeout` after `timeout` s); `release(key)` gives it back."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(key, loop, loop.create_future())
        with self._lock:
            queue = self._classes[Priority(priority)].keys.setdefault(key, deque())
            queue.append(waiter)
            woken = self._dispatch()
        self._wake(woken, skip=waiter)
        if waiter.granted:
            return
        try:
            async with asyncio.timeout(timeout):
                await waiter.future
        except BaseException as exc:
            with self._lock:
                if waiter.granted:  # granted as the wait ended: hand the slot on
                    granted = True
                else:
                    granted = False
                    self._forget(waiter, Priority(priority))
            if granted:
                self.release(key)
            if isinstance(exc, TimeoutError) and not isinstance(exc, QueueTimeout):
                raise QueueTimeout(timeout or 0.0) from None
            raise

    def release(self, key: str) -> None:
        """Give back a slot `key` holds; the next waiter (if any) gets it."""
        with self._lock:
            if self._held[key] <= 0:
                raise RuntimeError(f"release of a slot {key!r} does not hold")
            self._held[key] -= 1
            if not self._held[key]:
                del self._held[key]
            self._free += 1
            woken = self._dispatch()
        self._wake(woken)

    def _forget(self, waiter: _Waiter, priority: Priority) -> None:
        keys = self._classes[priority].keys
        queue = keys.get(waiter.key)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del keys[waiter.key]

    def _dispatch(self) -> list[_Waiter]:
        """Grant free slots (under the lock): best class first, round-robin between its keys,
        skipping keys at their `per_key` bound."""
        woken: list[_Waiter] = []
        for priority in Priority:
            keys = self._classes[priority].keys
            served = True
            while self._free and served:
                served = False
                for key in list(keys):
                    if self._held[key] >= self.per_key:
                        continue
                    queue = keys[key]
                    waiter = queue.popleft()
                    if queue:
                        keys.move_to_end(key)  # its next waiter goes behind the other keys
                    else:
                        del keys[key]
                    waiter.granted = True
                    self._held[key] += 1
                    self._free -= 1
                    woken.append(waiter)
                    served = True
                    break
            if not self._free:
                break
        return woken

    def _wake(self, woken: list[_Waiter], skip: _Waiter | None = None) -> None:
        for waiter in woken:
            if waiter is not skip:
                try:
                    waiter.loop.call_soon_threadsafe(_resolve, waiter.future)
                except RuntimeError:  # its loop is closed: nobody waits; the slot goes on
                    self.release(waiter.key)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
