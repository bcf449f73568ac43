"""A dedicated worker thread per loaded model, with a bounded queue and cancellable jobs.

In-process models are not thread-safe (a llama.cpp context holds one KV cache) and compute-bound,
so their work runs one job at a time on a thread of its own, off the event loop. Waiting jobs
queue in a `FairShare` of one slot (`maestrale.core.fair`), not in threads blocked on a lock: a
waiting request holds no thread, interactive calls go ahead of batch work (library ingestion,
jobs), and workspaces take turns, so one tenant's flood does not stand in front of another's
call. The worker is not tied to one event loop: jobs submitted from different loops (tests, a
TestClient portal) are still serialised.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from maestrale.core.fair import FairShare, Share, current
from maestrale.engines.types import EngineError

T = TypeVar("T")
Item = TypeVar("Item")

Emit = Callable[[Item], None]


@dataclass(slots=True, frozen=True)
class _Failure:
    error: Exception


class _Done:
    """Marks the end of a stream."""


class SerialWorker(Generic[Item]):
    """Runs jobs one at a time on one thread; at most `max_queue` jobs wait behind the running one.

    Every job receives a `threading.Event` that is set when its caller goes away (the awaiting task
    is cancelled, the stream is closed) or the worker shuts down; long jobs check it between steps
    (tokens) and return early, so that the next job starts at once. A request of several steps
    (batches of texts) is admitted once (`admission`) and takes a `turn` per step, so others'
    calls get in between its steps.
    """

    def __init__(self, name: str, max_queue: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._max_queue = max_queue
        self._lock = threading.Lock()
        self._pending = 0
        self._cancels: set[threading.Event] = set()
        self._closed = False
        self._turns = FairShare(1)

    @property
    def pending(self) -> int:
        """Jobs admitted and not finished yet: the running one plus those waiting."""
        with self._lock:
            return self._pending

    def _release(self, cancel: threading.Event) -> None:
        with self._lock:
            self._pending -= 1
            self._cancels.discard(cancel)

    def _enter(self, cancel: threading.Event) -> None:
        with self._lock:
            if self._closed:
                raise EngineError(503, "local model is shutting down", code="engine_unavailable")
            # `_pending` includes the running job: the queue is full when `max_queue` others wait.
            if self._pending > self._max_queue:
                raise EngineError(503, "local model busy", code="engine_overloaded")
            self._pending += 1
            self._cancels.add(cancel)

    @asynccontextmanager
    async def admission(self) -> AsyncIterator[threading.Event]:
        """Count one request against `max_queue` for the block (`EngineError(503,
        code="engine_overloaded")` at once when the queue is full); yields its cancel event,
        set when the block ends or the worker shuts down."""
        cancel = threading.Event()
        self._enter(cancel)
        try:
            yield cancel
        finally:
            cancel.set()
            self._release(cancel)

    def _submit(self, body: Callable[[], T]) -> Future[T]:
        try:
            return self._executor.submit(body)
        except RuntimeError as exc:  # shut down while the job waited for its turn
            raise EngineError(
                503, "local model is shutting down", code="engine_unavailable"
            ) from exc

    async def turn(self, body: Callable[[], T], share: Share | None = None) -> T:
        """Run `body()` on the worker thread once it is `share`'s turn (default: the running
        work's share) and return its result; call it inside `admission`."""
        async with self._turns.slot(share or current()):
            future = self._submit(body)
            try:
                return await asyncio.wrap_future(future)
            finally:
                future.cancel()  # a no-op once it has started

    async def run(self, job: Callable[[threading.Event], T], share: Share | None = None) -> T:
        """Run `job(cancel)` on the worker thread and return its result.

        Raises `EngineError(503, code="engine_overloaded")` at once when the queue is full.
        """
        async with self.admission() as cancel:
            return await self.turn(lambda: job(cancel), share)

    async def stream(
        self, job: Callable[[Emit[Item], threading.Event], object]
    ) -> AsyncGenerator[Item, None]:
        """Run `job(emit, cancel)` on the worker thread and yield what it emits, as it emits it.

        Closing the iterator (or cancelling the task consuming it) sets `cancel`, and drops the job
        if it has not started yet. An exception raised by the job is raised here after the items
        emitted before it. The queue bound is checked when iteration starts.
        """
        loop = asyncio.get_running_loop()
        # Items go through a list under a lock; the loop is woken once per batch, not per item: a
        # wake-up costs a system call and a turn of the loop (which holds the GIL), and items that
        # come while the consumer is busy are taken together at its next turn.
        lock = threading.Lock()
        pending: list[Item | _Failure | _Done] = []
        woken = asyncio.Event()
        waking = False  # a wake-up is scheduled and has not been consumed yet
        cancel = threading.Event()

        def put(item: Item | _Failure | _Done) -> None:
            nonlocal waking
            with lock:
                pending.append(item)
                if waking:
                    return
                waking = True
            try:
                loop.call_soon_threadsafe(woken.set)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                cancel.set()

        def take() -> list[Item | _Failure | _Done]:
            nonlocal waking
            with lock:
                items = pending.copy()
                pending.clear()
                waking = False
                woken.clear()
            return items

        def body() -> None:
            try:
                job(put, cancel)
            except Exception as exc:
                put(_Failure(exc))
            else:
                put(_Done())

        share = current()
        self._enter(cancel)
        try:
            # The turn is held while the stream runs: the thread is busy with it till it ends.
            async with self._turns.slot(share):
                future = self._submit(body)
                try:
                    while True:
                        await woken.wait()
                        for item in take():
                            if isinstance(item, _Done):
                                return
                            if isinstance(item, _Failure):
                                raise item.error
                            yield item
                finally:
                    cancel.set()
                    future.cancel()
        finally:
            cancel.set()
            self._release(cancel)

    async def aclose(self) -> None:
        """Refuse new jobs, stop the running one, drop the waiting ones and wait for the thread."""
        with self._lock:
            self._closed = True
            cancels = list(self._cancels)
        for cancel in cancels:
            cancel.set()
        await asyncio.to_thread(self._executor.shutdown, wait=True, cancel_futures=True)
