"""`FairShare`: slots shared between workspaces, one of them flooding."""

from __future__ import annotations

import asyncio

import pytest

from maestrale.core.fair import BATCH, INTERACTIVE, FairShare, Priority, QueueTimeout


async def queue_up(
    fair: FairShare, key: str, priority: Priority, served: list[str], label: str
) -> asyncio.Task[None]:
    """Ask for a slot in a task; `served` records the label when it is granted. The slot is
    released by the test (through `fair.release`)."""

    async def take() -> None:
        await fair.acquire(key, priority)
        served.append(label)

    task = asyncio.create_task(take())
    await asyncio.sleep(0)  # queued in this order
    return task


async def drain(fair: FairShare, served: list[str], keys: dict[str, str], count: int) -> None:
    """Release the slot of whoever was served last, `count` times, one at a time."""
    for _ in range(count):
        fair.release(keys[served[-1]])
        await asyncio.sleep(0.01)


async def test_a_workspace_waits_one_turn_behind_a_flooding_one() -> None:
    fair = FairShare(1)
    served: list[str] = []
    await fair.acquire("b", INTERACTIVE)  # B runs
    served.append("b0")
    tasks = [await queue_up(fair, "b", INTERACTIVE, served, f"b{i}") for i in range(1, 11)]
    tasks.append(await queue_up(fair, "a", INTERACTIVE, served, "a"))
    keys = {label: label[0] for label in ["a", *(f"b{i}" for i in range(11))]}
    await drain(fair, served, keys, 11)
    await asyncio.gather(*tasks)
    # First come first served would put A after all of B's ten waiting requests.
    assert served[:3] == ["b0", "b1", "a"]
    assert fair.waiting == 0


async def test_interactive_calls_go_ahead_of_batch_work() -> None:
    fair = FairShare(1)
    served: list[str] = []
    await fair.acquire("b", BATCH)
    served.append("b0")
    tasks = [await queue_up(fair, "b", BATCH, served, f"b{i}") for i in range(1, 6)]
    tasks.append(await queue_up(fair, "c", BATCH, served, "c"))
    tasks.append(await queue_up(fair, "a", INTERACTIVE, served, "a"))
    keys = {"a": "a", "c": "c", **{f"b{i}": "b" for i in range(6)}}
    await drain(fair, served, keys, 7)
    await asyncio.gather(*tasks)
    assert served[:4] == ["b0", "a", "b1", "c"]


async def test_one_workspace_never_holds_more_than_its_share_of_slots() -> None:
    fair = FairShare(4, per_key=3)
    served: list[str] = []
    tasks = [await queue_up(fair, "b", BATCH, served, f"b{i}") for i in range(5)]
    await asyncio.sleep(0.01)
    assert served == ["b0", "b1", "b2"] and fair.held("b") == 3
    # The fourth slot stayed free for another workspace: it gets it at once.
    await asyncio.wait_for(fair.acquire("a", INTERACTIVE), 1)
    assert fair.held("a") == 1
    fair.release("b")
    await asyncio.sleep(0.01)
    assert served == ["b0", "b1", "b2", "b3"]
    for task in tasks[4:]:
        task.cancel()


async def test_a_wait_past_the_timeout_is_a_clear_error_and_leaks_nothing() -> None:
    fair = FairShare(1)
    await fair.acquire("b")
    with pytest.raises(QueueTimeout, match=r"no slot was free within 0\.05 s"):
        await fair.acquire("a", timeout=0.05)
    waiter = asyncio.create_task(fair.acquire("c"))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.sleep(0)
    assert fair.waiting == 0
    fair.release("b")
    # Neither the timed-out nor the cancelled caller kept a slot or a place.
    await asyncio.wait_for(fair.acquire("d"), 1)
    assert fair.held("a") == fair.held("c") == 0 and fair.held("d") == 1
