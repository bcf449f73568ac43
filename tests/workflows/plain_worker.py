"""A plain `temporalio` worker for the API tests (the official worker needs Python 3.12 and has
tests of its own, `test_official_worker.py`): workflows that read the platform's `json/wf_v1`
start payload as raw JSON, and the register call the official worker would make for them."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import Any

import httpx
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.worker import Worker


def _input(arg: RawValue) -> Any:
    data = arg.payload.data
    return json.loads(data) if data else None


@activity.defn(name="shout")
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn(name="echo", sandboxed=False)
class Echo:
    """Returns `{"result": <input>}`; `{"shout": text}` goes through an activity, `{"sleep": s}`
    sleeps first, `{"fail": message}` fails the workflow."""

    @workflow.run
    async def run(self, arg: RawValue) -> Any:
        value = _input(arg)
        if isinstance(value, dict):
            if "sleep" in value:
                await asyncio.sleep(float(value["sleep"]))
            if "fail" in value:
                from temporalio.exceptions import ApplicationError

                raise ApplicationError(str(value["fail"]), non_retryable=True)
            if "shout" in value:
                return {
                    "result": await workflow.execute_activity(
                        shout, str(value["shout"]), start_to_close_timeout=timedelta(seconds=10)
                    )
                }
        return {"result": value}


@workflow.defn(name="counter", sandboxed=False)
class Counter:
    """Adds the signals `add` to a total, answers the query `total` and the update `set_total`
    (which returns the old total), and returns `{"total": n}` on the signal `finish`."""

    @workflow.init
    def __init__(self, arg: RawValue) -> None:
        # Set before any handler runs: a signal delivered with the first task is not lost.
        self.total = int((_input(arg) or {}).get("start", 0))
        self.finished = False

    @workflow.run
    async def run(self, arg: RawValue) -> Any:
        await workflow.wait_condition(lambda: self.finished)
        return {"total": self.total}

    @workflow.signal(name="add")
    def add(self, value: Any) -> None:
        self.total += int((value or {}).get("value", 1))

    @workflow.signal(name="finish")
    def finish(self, value: Any) -> None:
        self.finished = True

    @workflow.query(name="total")
    def get_total(self, value: Any) -> int:
        return self.total

    @workflow.update(name="set_total")
    def set_total(self, value: Any) -> int:
        old, self.total = self.total, int((value or {}).get("value", 0))
        return old


def definitions(task_queue: str) -> list[dict[str, Any]]:
    """The register body's definitions of these workflows, as the official worker sends them."""
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    handler = {"input_schema": schema}
    return [
        {"name": "echo", "task_queue": task_queue, "input_schema": schema,
         "execution_timeout": "PT1H", "display_name": "Echo"},
        {"name": "counter", "task_queue": task_queue, "input_schema": schema,
         "execution_timeout": "PT1H",
         "signals": [{"name": "add", **handler}, {"name": "finish", **handler}],
         "queries": [{"name": "total", **handler}],
         "updates": [{"name": "set_total", **handler}]},
    ]  # fmt: skip


async def register(
    client: httpx.AsyncClient, deployment: str, worker: str = "worker-1"
) -> dict[str, Any]:
    response = await client.post(
        "/v1/workflows/register",
        json={
            "definitions": definitions(deployment),
            "deployment_name": deployment,
            "worker_name": worker,
            "deployment_location": {"location_type": "local"},
        },
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@asynccontextmanager
async def running_worker(
    address: str, namespace: str, task_queue: str, api_key: str | None = None
) -> AsyncIterator[None]:
    """A worker polling `task_queue` for the life of the block (through the worker proxy when
    given a key, as the official worker dials it)."""
    client = await Client.connect(address, namespace=namespace, api_key=api_key, tls=False)
    async with Worker(client, task_queue=task_queue, workflows=[Echo, Counter], activities=[shout]):
        yield


@contextmanager
def worker_thread(address: str, namespace: str, task_queue: str) -> Iterator[None]:
    """`running_worker` on an event loop of its own thread, for callers that have no loop to
    share (the schema fuzz drives the app from schemathesis' thread)."""
    ready, done = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    async def main() -> None:
        try:
            async with running_worker(address, namespace, task_queue):
                ready.set()
                await asyncio.to_thread(done.wait)
        except BaseException as exc:
            failure.append(exc)
            ready.set()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    ready.wait(30)
    if failure:
        raise failure[0]
    try:
        yield
    finally:
        done.set()
        thread.join(30)
