"""Counter backends of the limits hook: what is checked, and the one atomic step that checks it.

`admit` checks a request against every limit that applies (a sliding one-second request log,
token and spend counters) and, only if all pass, records the request and a reservation of its
worst case on each counter; `settle` replaces the reservation with what the call really used.
A reservation that is never settled (a crashed or cancelled call) expires after
`reservation_ttl` seconds instead of holding the budget for the rest of the month.

Counters of a month (tokens, spend) are seeded from the recorded usage the first time a process
(or Redis, after losing its data) sees them, so neither a restart nor a flushed Redis resets a
monthly quota. Two implementations: in-process (`MemoryCounters`, one node) and Redis
(`RedisCounters`, N replicas share one budget).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class RateCheck:
    """At most `limit` requests in any window of `window_ms` (a sliding log, not fixed slots)."""

    key: str
    limit: int
    window_ms: int = 1000


@dataclass(frozen=True, slots=True)
class CounterCheck:
    """Reserve `amount` on `key` unless committed + reserved + amount would pass `limit`."""

    key: str
    amount: float
    limit: float
    ttl_s: int  # lifetime of the counter (its window and a margin)
    window_end: float  # UNIX time when the window ends: the Retry-After of a refusal
    name: str  # the limit, for the error message
    seedable: bool = False  # a month window: needs its recorded usage when missing


@dataclass(slots=True)
class Decision:
    allowed: bool
    refused_rate: bool = False
    refused_counter: int | None = None  # index into the checks
    retry_after: float = 0.0
    missing: list[int] = field(default_factory=list)  # counters that need a seed


class CounterBackend(Protocol):
    async def admit(
        self,
        reservation_id: str,
        rate: RateCheck | None,
        counters: Sequence[CounterCheck],
        seeds: Mapping[str, float],
    ) -> Decision:
        """Check every limit, then (all passing) record the request and reserve atomically.

        A seedable counter that does not exist yet and has no entry in `seeds` is reported in
        `Decision.missing`; nothing is recorded then.
        """
        ...

    async def settle(self, reservation_id: str, usage: Sequence[tuple[str, float]]) -> None:
        """Drop the reservation and add what the call used to each counter that still exists."""
        ...

    async def aclose(self) -> None: ...
