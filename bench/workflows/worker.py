"""The benchmark's worker process: a plain `temporalio` worker polling one task queue with the
no-op workflow, which returns its start payload at once (the platform's `json/wf_v1` payload,
taken as `RawValue` as `tests/workflows/plain_worker.py` does, and handed back untouched).

    .venv/bin/python -m bench.workflows.worker ADDRESS NAMESPACE TASK_QUEUE [API_KEY]

With API_KEY, ADDRESS is Maestrale's worker proxy, which the key opens (as the official worker
dials it); without, Temporal itself.

Prints `ready` once it polls, then runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.worker import Worker

WORKFLOW = "noop"


@workflow.defn(name=WORKFLOW, sandboxed=False)
class Noop:
    @workflow.run
    async def run(self, arg: RawValue) -> RawValue:
        return arg


def definitions(task_queue: str) -> list[dict[str, object]]:
    """The register body's definition of the no-op workflow."""
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    return [
        {
            "name": WORKFLOW,
            "task_queue": task_queue,
            "input_schema": schema,
            "execution_timeout": "PT1H",
            "display_name": "No-op",
        }
    ]


async def main(address: str, namespace: str, task_queue: str, api_key: str | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    client = await Client.connect(address, namespace=namespace, api_key=api_key, tls=False)
    async with Worker(client, task_queue=task_queue, workflows=[Noop]):
        print("ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
