"""Both counter backends: the sliding request log, reservations, seeds and their expiry."""

from __future__ import annotations

import asyncio
import time

from maestrale.limits.counters import CounterBackend, CounterCheck, RateCheck


def check(key: str, amount: float, limit: float, *, seedable: bool = False) -> CounterCheck:
    return CounterCheck(key, amount, limit, 60, time.time() + 60, "tokens_per_minute", seedable)


async def test_sliding_request_log(counters: CounterBackend, prefix: str) -> None:
    rate = RateCheck(f"{prefix}:rps", 3, window_ms=400)
    results = [(await counters.admit(f"r{i}", rate, [], {})).allowed for i in range(5)]
    assert results == [True, True, True, False, False]
    refused = await counters.admit("late", rate, [], {})
    assert refused.refused_rate and 0 < refused.retry_after <= 0.4
    await asyncio.sleep(0.45)
    assert (await counters.admit("again", rate, [], {})).allowed


async def test_reserve_up_to_the_limit_then_settle(counters: CounterBackend, prefix: str) -> None:
    key = f"{prefix}:tpm"
    assert (await counters.admit("a", None, [check(key, 60, 100)], {})).allowed
    assert (await counters.admit("b", None, [check(key, 40, 100)], {})).allowed  # exactly 100
    refused = await counters.admit("c", None, [check(key, 1, 100)], {})
    assert not refused.allowed and refused.refused_counter == 0
    await counters.settle("a", [(key, 10.0)])  # a used 10 of its 60: 50 free again
    assert (await counters.admit("d", None, [check(key, 50, 100)], {})).allowed
    assert not (await counters.admit("e", None, [check(key, 1, 100)], {})).allowed


async def test_all_or_nothing(counters: CounterBackend, prefix: str) -> None:
    small, big = f"{prefix}:small", f"{prefix}:big"
    rate = RateCheck(f"{prefix}:rps", 100)
    decision = await counters.admit("a", rate, [check(big, 5, 1000), check(small, 5, 4)], {})
    assert not decision.allowed and decision.refused_counter == 1
    # nothing of the refused call was recorded: the whole budget of `big` is still free
    assert (await counters.admit("b", rate, [check(big, 1000, 1000)], {})).allowed


async def test_month_counters_need_a_seed(counters: CounterBackend, prefix: str) -> None:
    key = f"{prefix}:month"
    missing = await counters.admit("a", None, [check(key, 5, 100, seedable=True)], {})
    assert not missing.allowed and missing.missing == [0]
    seeded = await counters.admit("a", None, [check(key, 5, 100, seedable=True)], {key: 94.0})
    assert seeded.allowed  # 94 recorded + 5
    assert not (await counters.admit("b", None, [check(key, 2, 100, seedable=True)], {})).allowed
    await counters.settle("a", [(key, 1.0)])
    assert (await counters.admit("c", None, [check(key, 5, 100, seedable=True)], {})).allowed


async def test_an_unsettled_reservation_expires(counters: CounterBackend, prefix: str) -> None:
    """A call that crashed never settles; its reservation must not hold the budget forever."""
    key = f"{prefix}:leak"
    assert (await counters.admit("crashed", None, [check(key, 100, 100)], {})).allowed
    assert not (await counters.admit("next", None, [check(key, 1, 100)], {})).allowed
    await asyncio.sleep(0.35)  # reservation_ttl is 0.3 s in these tests
    assert (await counters.admit("next", None, [check(key, 100, 100)], {})).allowed


async def test_settling_a_vanished_counter_is_harmless(
    counters: CounterBackend, prefix: str
) -> None:
    await counters.settle("nobody", [(f"{prefix}:gone", 5.0)])
    assert (await counters.admit("a", None, [check(f"{prefix}:gone", 5, 5)], {})).allowed
