"""The calls the benchmark makes, through Maestrale and straight to Temporal, and how they are
driven: closed loops at a concurrency (starts per second) and interleaved sequential calls
(execute-and-wait)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import aiohttp
from temporalio.client import Client
from temporalio.common import RawValue

from bench.workflows.worker import WORKFLOW
from maestrale.workflows.temporal.payloads import start_payload


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
