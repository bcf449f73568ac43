"""Workflow events as the official worker sends them, and event streams as clients read them:
shared by the events tests."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import FastAPI

from tests.support.live import on_socket
from tests.workflows.plain_worker import register

_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "WORKFLOW_EXECUTION_STARTED": {
        "task_id": "wf", "workflow_name": "echo", "input": {"type": "json", "value": {"x": 1}},
    },
    "ACTIVITY_TASK_STARTED": {
        "task_id": "a1", "activity_name": "shout", "input": {"type": "json", "value": "hi"},
    },
    "ACTIVITY_TASK_COMPLETED": {
        "task_id": "a1", "activity_name": "shout", "result": {"type": "json", "value": "HI"},
    },
    "WORKFLOW_EXECUTION_COMPLETED": {
        "task_id": "wf", "result": {"type": "json", "value": {"result": "HI"}},
    },
    "WORKFLOW_EXECUTION_FAILED": {"task_id": "wf", "failure": {"message": "boom"}},
}  # fmt: skip
LIFECYCLE = [
    "WORKFLOW_EXECUTION_STARTED",
    "ACTIVITY_TASK_STARTED",
    "ACTIVITY_TASK_COMPLETED",
    "WORKFLOW_EXECUTION_COMPLETED",
]


def event(execution_id: str, kind: str, run_id: str = "run-1", **extra: Any) -> dict[str, Any]:
    """An event as the official worker sends it."""
    return {
        "event_id": uuid.uuid4().hex,
        "event_type": kind,
        "event_timestamp": time.time_ns(),
        "workflow_exec_id": execution_id,
        "workflow_run_id": run_id,
        "workflow_name": "echo",
        "root_workflow_exec_id": execution_id,
        "parent_workflow_exec_id": None,
        "attributes": _ATTRIBUTES[kind],
        **extra,
    }


def sse(text: str) -> list[dict[str, Any]]:
    """The messages of an event stream: {"id", "event", "data"} each."""
    messages = []
    for block in text.split("\n\n"):
        message: dict[str, Any] = {}
        for line in block.splitlines():
            field, _, value = line.partition(": ")
            if field in ("id", "event"):
                message[field] = value
            elif field == "data":
                message["data"] = json.loads(value)
        if message:
            messages.append(message)
    return messages


async def post_batch(client: httpx.AsyncClient, events: list[dict[str, Any]]) -> httpx.Response:
    return await client.post("/v1/workflows/events/batch", json={"events": events})


async def started_execution(client: httpx.AsyncClient) -> str:
    """An execution indexed in the caller's workspace (no worker: it stays RUNNING)."""
    queue = f"dep-{uuid.uuid4().hex[:8]}"
    await register(client, queue)
    response = await client.post("/v1/workflows/echo/execute", json={"input": {"x": 1}})
    assert response.status_code == 200, response.text
    return str(response.json()["execution_id"])


@contextlib.asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[str]:
    """`app` on a real socket: the in-process transport does not stream responses."""
    async with on_socket(app) as port:
        yield f"http://127.0.0.1:{port}"
