"""The calls the benchmark makes, through Maestrale and straight to Temporal, and how they are
driven: closed loops at a concurrency (starts per second) and interleaved sequential calls
(execute-and-wait)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from temporalio.client import Client
from temporalio.common import RawValue

from bench.gateway.processes import cpu_seconds
from bench.workflows.worker import WORKFLOW
from maestrale.workflows.temporal.payloads import start_payload

Call = Callable[[int], Awaitable[None]]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of `values`; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


@dataclass
class Result:
    """One path's latencies (ms), errors, wall time and the CPU seconds of watched processes."""

    label: str
    latencies: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)  # the index of each successful call
    errors: int = 0
    first_error: str = ""
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)

    def pct(self, q: float) -> float:
        return percentile(self.latencies, q)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def cpu_ms(self, name: str) -> float:
        """CPU time of process `name` per successful call (ms)."""
        return self.cpu.get(name, 0.0) * 1000 / max(1, len(self.latencies))

    async def timed(self, call: Call, i: int) -> None:
        started = time.perf_counter()
        try:
            await call(i)
        except Exception as exc:  # counted, the first one reported
            self.errors += 1
            self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"[:300]
            return
        self.latencies.append((time.perf_counter() - started) * 1000)
        self.rounds.append(i)


class CpuWatch:
    """CPU seconds (utime + stime) of named process trees between two points."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids
        self.start = self.read()

    def read(self) -> dict[str, float]:
        return {name: cpu_seconds(pids) for name, pids in self.pids.items()}

    def since(self) -> dict[str, float]:
        now = self.read()
        return {name: now[name] - self.start[name] for name in now}


class Paths:
    """The benchmark's calls: start (no wait) and execute-and-wait, through Maestrale's HTTP API
    and straight to Temporal with temporalio; the no-op workflow, the same payload kind and
    task queue either way."""

    def __init__(
        self, http: aiohttp.ClientSession, url: str, temporal: Client, namespace: str, queue: str
    ) -> None:
        self.http = http
        self.execute_url = f"{url}/v1/workflows/{WORKFLOW}/execute"
        self.temporal = temporal
        self.namespace = namespace
        self.queue = queue

    async def _post(self, body: dict[str, Any], status: str) -> None:
        async with self.http.post(self.execute_url, json=body) as response:
            data = await response.json()
            if response.status != 200 or data.get("status") != status:
                raise RuntimeError(f"HTTP {response.status}: {str(data)[:200]}")

    async def maestrale_start(self, i: int) -> None:
        await self._post({"input": {"i": i}}, "RUNNING")

    async def maestrale_wait(self, i: int) -> None:
        body = {"input": {"i": i}, "wait_for_result": True, "timeout_seconds": 30}
        await self._post(body, "COMPLETED")

    async def _start(self, i: int) -> Any:
        execution_id = uuid.uuid4().hex
        payload = start_payload(
            {"i": i},
            namespace=self.namespace,
            execution_id=execution_id,
            token=str(uuid.uuid4()),
            extensions=None,
        )
        return await self.temporal.start_workflow(
            WORKFLOW,
            RawValue(payload),
            id=execution_id,
            task_queue=self.queue,
            execution_timeout=None,
            result_type=RawValue,
        )

    async def temporal_start(self, i: int) -> None:
        await self._start(i)

    async def temporal_wait(self, i: int) -> None:
        handle = await self._start(i)
        await asyncio.wait_for(handle.result(), 30)


async def closed_loop(
    label: str, call: Call, concurrency: int, seconds: float, pids: dict[str, list[int]]
) -> Result:
    """`concurrency` callers in a loop for `seconds` (a call started before the end finishes)."""
    result = Result(label)
    counter = iter(range(10**9))
    end = time.perf_counter() + seconds

    async def caller() -> None:
        while time.perf_counter() < end:
            await result.timed(call, next(counter))

    watch = CpuWatch(pids)
    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    result.seconds = time.perf_counter() - started
    result.cpu = watch.since()
    return result


async def interleaved(
    calls: list[tuple[str, Call]], rounds: int, warmup: int, pids: dict[str, list[int]]
) -> list[Result]:
    """One call of each path per round, sequentially, the order rotated every round (so drift
    and order effects hit every path alike); `warmup` rounds first, not counted. The CPU of
    the watched processes is charged to the path that was running."""
    results = [Result(label) for label, _ in calls]
    for i in range(warmup):
        for _, call in calls:
            await call(-i)
    for i in range(rounds):
        shift = i % len(calls)
        order = list(range(len(calls)))[shift:] + list(range(len(calls)))[:shift]
        for k in order:
            watch = CpuWatch(pids)
            await results[k].timed(calls[k][1], i)
            for name, used in watch.since().items():
                results[k].cpu[name] = results[k].cpu.get(name, 0.0) + used
    return results


async def drain(temporal: Client, timeout: float = 60) -> int:
    """Wait until no execution is running any more (the worker caught up): how many still run."""
    deadline = time.monotonic() + timeout
    running = -1
    while time.monotonic() < deadline:
        count = await temporal.count_workflows("ExecutionStatus = 'Running'")
        running = count.count
        if running == 0:
            break
        await asyncio.sleep(0.2)
    return running
