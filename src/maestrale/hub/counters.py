"""The limits counters of the server processes of one machine without Redis: one
`MemoryCounters` in the hub, so that a budget is one budget whichever process admits the call
(the same atomic check-then-reserve, done on the hub's event loop)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from maestrale.hub.client import HubClient
from maestrale.hub.server import CallHandler
from maestrale.limits.counters import CounterCheck, Decision, RateCheck
from maestrale.limits.memory import MemoryCounters


class HubCounters:
    def __init__(self, client: HubClient) -> None:
        self.client = client

    async def admit(
        self,
        reservation_id: str,
        rate: RateCheck | None,
        counters: Sequence[CounterCheck],
        seeds: Mapping[str, float],
    ) -> Decision:
        decision: Decision = await self.client.call(
            "counters.admit", reservation_id, rate, list(counters), dict(seeds)
        )
        return decision

    async def settle(self, reservation_id: str, usage: Sequence[tuple[str, float]]) -> None:
        await self.client.call("counters.settle", reservation_id, list(usage))

    async def aclose(self) -> None:
        return None


def counter_handlers(counters: MemoryCounters) -> dict[str, CallHandler]:
    """The hub's side of `HubCounters`."""
    return {"counters.admit": counters.admit, "counters.settle": counters.settle}
