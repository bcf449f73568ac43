"""In-process counters: exact for one process, no I/O on the request path."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from maestrale.limits.counters import CounterCheck, Decision, RateCheck

_SWEEP_EVERY = 4096


@dataclass(slots=True)
class _Counter:
    committed: float
    expires_at: float
    reserved: dict[str, tuple[float, float]] = field(default_factory=dict)  # id: amount, expiry

    def in_flight(self, now: float) -> float:
        stale = [rid for rid, (_, expiry) in self.reserved.items() if expiry <= now]
        for rid in stale:
            del self.reserved[rid]
        return sum(amount for amount, _ in self.reserved.values())


class MemoryCounters:
    def __init__(
        self, *, reservation_ttl: float = 900.0, clock: Callable[[], float] = time.time
    ) -> None:
        self.reservation_ttl = reservation_ttl
        self.clock = clock
        self._logs: dict[str, deque[float]] = {}
        self._counters: dict[str, _Counter] = {}
        self._admits = 0

    def _counter(self, key: str, now: float) -> _Counter | None:
        counter = self._counters.get(key)
        if counter is not None and counter.expires_at <= now:
            del self._counters[key]
            return None
        return counter

    async def admit(
        self,
        reservation_id: str,
        rate: RateCheck | None,
        counters: Sequence[CounterCheck],
        seeds: Mapping[str, float],
    ) -> Decision:
        # No await below: check-then-record is atomic on the event loop.
        now = self.clock()
        self._admits += 1
        if self._admits % _SWEEP_EVERY == 0:
            self._sweep(now)
        log: deque[float] | None = None
        if rate is not None:
            window = rate.window_ms / 1000
            log = self._logs.setdefault(rate.key, deque())
            while log and log[0] <= now - window:
                log.popleft()
            if len(log) >= rate.limit:
                return Decision(False, refused_rate=True, retry_after=log[0] + window - now)
        missing = [
            i
            for i, check in enumerate(counters)
            if check.seedable and check.key not in seeds and self._counter(check.key, now) is None
        ]
        if missing:
            return Decision(False, missing=missing)
        found: list[_Counter] = []
        for i, check in enumerate(counters):
            counter = self._counter(check.key, now) or _Counter(
                seeds.get(check.key, 0.0), now + check.ttl_s
            )
            if counter.committed + counter.in_flight(now) + check.amount > check.limit:
                return Decision(False, refused_counter=i, retry_after=check.window_end - now)
            found.append(counter)
        if log is not None:
            log.append(now)
        expiry = now + self.reservation_ttl
        for check, counter in zip(counters, found, strict=True):
            counter.reserved[reservation_id] = (check.amount, expiry)
            self._counters.setdefault(check.key, counter)
        return Decision(True)

    async def settle(self, reservation_id: str, usage: Sequence[tuple[str, float]]) -> None:
        now = self.clock()
        for key, used in usage:
            counter = self._counter(key, now)
            if counter is not None:
                counter.reserved.pop(reservation_id, None)
                counter.committed += used

    def value(self, key: str) -> float | None:
        """Committed amount of a counter (tests, diagnostics)."""
        counter = self._counter(key, self.clock())
        return None if counter is None else counter.committed

    def _sweep(self, now: float) -> None:
        for key in [k for k, c in self._counters.items() if c.expires_at <= now]:
            del self._counters[key]
        for key in [k for k, log in self._logs.items() if not log or log[-1] <= now - 60]:
            del self._logs[key]

    async def aclose(self) -> None:
        return None
