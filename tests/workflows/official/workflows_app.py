# mypy: ignore-errors
# (Runs only in the worker's own Python >=3.12 venv, where `mistralai.workflows` exists; the
# project's 3.11 venv has neither that package nor a reason to type-check it.)
"""Test workflows for the official `mistralai-workflows` worker, run unchanged against Maestrale.

This file is a standalone script for the worker's venv (see tests/support/official_worker.py);
pytest does not import it (tests/workflows/official/conftest.py). It uses only the public API of
`mistralai.workflows` and of the official `mistralai.workflows.plugins.mistralai` plugin.

Workflows:
* `chat-echo`: input {"text": str, "sleep_ms": int = 0}. One activity records its attempt (a JSON
  line appended to $WORKFLOW_TEST_MARKS, if set), sleeps `sleep_ms` while heartbeating, then asks
  the server's chat completions for model "maestrale-echo" through the plugin's
  `mistralai_chat_complete`. Result: {"result": "<answer>"} ("echo: <text>" from Maestrale).
* `interactive`: input {"target": int | null}. Signals `add` ({"amount": int}) and `finish`,
  query `total` (-> int), update `set_total` ({"value": int} -> the previous total). Returns
  {"total": n} after `finish`, or once the total reaches `target`.
* `noop`: returns its input object unchanged (benchmarks).

Environment: what the SDK reads (SERVER_URL, MISTRAL_API_KEY, DEPLOYMENT_NAME, WORKER_NAME, ...),
plus WORKFLOW_TEST_MARKS (attempt log), WORKFLOW_TEST_HEARTBEAT_TIMEOUT_S (the chat activity's
heartbeat timeout, default 3: how soon Temporal retries it after its worker was killed) and
WORKFLOW_APP_DESCRIBE=1 (print the registration body the worker would send, as one JSON line,
and exit without any network).
"""

import asyncio
import json
import os
import sys
import time
from datetime import timedelta

import mistralai.workflows as workflows
from mistralai.workflows.plugins.mistralai import (
    ChatCompletionRequest,
    UserMessage,
    mistralai_chat_complete,
)
from pydantic import BaseModel, ConfigDict, Field

ECHO_MODEL = "maestrale-echo"
HEARTBEAT_TIMEOUT_S = float(os.environ.get("WORKFLOW_TEST_HEARTBEAT_TIMEOUT_S", "3"))
_HEARTBEAT_EVERY_S = max(0.1, HEARTBEAT_TIMEOUT_S / 4)


def _mark(activity: str, **fields: object) -> None:
    """Append one JSON line per activity attempt to $WORKFLOW_TEST_MARKS (one write: atomic)."""
    path = os.environ.get("WORKFLOW_TEST_MARKS")
    if not path:
        return
    line = json.dumps(
        {
            "activity": activity,
            "worker": os.environ.get("WORKER_NAME"),
            "pid": os.getpid(),
            "time": time.time(),
            **fields,
        }
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


async def _heartbeating(awaitable):
    """Await `awaitable` while heartbeating, so a killed worker's attempt times out quickly."""
    task = asyncio.ensure_future(awaitable)
    while True:
        done, _ = await asyncio.wait({task}, timeout=_HEARTBEAT_EVERY_S)
        if done:
            return task.result()
        workflows.activity_heartbeat()


# --- chat-echo ----------------------------------------------------------------------------------


class ChatEchoInput(BaseModel):
    text: str = Field(description="The user message sent to the echo model")
    sleep_ms: int = Field(default=0, ge=0, description="How long the activity sleeps first")


@workflows.activity(
    start_to_close_timeout=timedelta(seconds=120),
    heartbeat_timeout=timedelta(seconds=HEARTBEAT_TIMEOUT_S),
    retry_policy_max_attempts=5,
    retry_policy_backoff_coefficient=1.0,
)
async def chat_echo_call(text: str, sleep_ms: int) -> str:
    _mark("chat_echo_call", text=text)
    workflows.activity_heartbeat()
    if sleep_ms:
        await _heartbeating(asyncio.sleep(sleep_ms / 1000))
    request = ChatCompletionRequest(model=ECHO_MODEL, messages=[UserMessage(content=text)])
    # The plugin's activity, called from inside this one, runs in-process with the plugin's client
    # (SERVER_URL, MISTRAL_API_KEY).
    response = await _heartbeating(mistralai_chat_complete(request))
    content = response.choices[0].message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(chunk, "text", "") or "" for chunk in content or [])


@workflows.workflow.define(
    name="chat-echo",
    workflow_display_name="Chat echo",
    workflow_description="Asks the server's maestrale-echo chat model to echo a text.",
    execution_timeout=timedelta(minutes=10),
)
class ChatEchoWorkflow:
    @workflows.workflow.entrypoint
    async def run(self, params: ChatEchoInput) -> str:
        return await chat_echo_call(params.text, params.sleep_ms)


# --- interactive --------------------------------------------------------------------------------


class InteractiveResult(BaseModel):
    total: int


@workflows.workflow.define(
    name="interactive",
    workflow_display_name="Interactive counter",
    workflow_description="A counter driven by signals, queries and updates.",
    execution_timeout=timedelta(minutes=30),
)
class InteractiveWorkflow:
    def __init__(self) -> None:
        self._total = 0
        self._finished = False

    @workflows.workflow.entrypoint
    async def run(self, target: int | None = None) -> InteractiveResult:
        await workflows.workflow.wait_condition(
            lambda: self._finished or (target is not None and self._total >= target)
        )
        return InteractiveResult(total=self._total)

    @workflows.workflow.signal(name="add", description="Adds `amount` to the total.")
    async def add(self, amount: int) -> None:
        self._total += amount

    @workflows.workflow.signal(name="finish", description="Ends the workflow.")
    async def finish(self) -> None:
        self._finished = True

    @workflows.workflow.query(name="total", description="The current total.")
    def get_total(self) -> int:
        return self._total

    @workflows.workflow.update(name="set_total", description="Sets the total; returns the old.")
    async def set_total(self, value: int) -> int:
        old = self._total
        self._total = value
        return old


# --- noop ---------------------------------------------------------------------------------------


class NoopPayload(BaseModel):
    """Any object: every key is kept and returned."""

    model_config = ConfigDict(extra="allow")


@workflows.workflow.define(
    name="noop",
    workflow_display_name="No-op",
    workflow_description="Returns its input at once.",
    execution_timeout=timedelta(minutes=5),
)
class NoopWorkflow:
    @workflows.workflow.entrypoint
    async def run(self, payload: NoopPayload) -> NoopPayload:
        return payload


WORKFLOWS = [ChatEchoWorkflow, InteractiveWorkflow, NoopWorkflow]


# --- entry points -------------------------------------------------------------------------------


def describe() -> dict:
    """The body of POST /v1/workflows/register the worker would send, built offline.

    Mirrors the worker's start-up (the SDK's own helpers when they are there, else the public
    `get_workflow_definition`), then serialises it with the worker client's own request model.
    """
    config = workflows.config
    deployment = config.get_effective_task_queue()
    try:
        from mistralai.workflows.core import worker as sdk_worker

        definitions = sdk_worker._get_workflow_definitions(WORKFLOWS, deployment)
        definitions += sdk_worker._get_workflow_definitions(
            sdk_worker._get_parallel_execution_workflows(WORKFLOWS), deployment
        )
    except (ImportError, AttributeError):
        from mistralai.workflows.models import WorkflowSpecWithTaskQueue

        definitions = [
            WorkflowSpecWithTaskQueue.model_validate(
                {**workflows.get_workflow_definition(cls).model_dump(), "task_queue": deployment}
            )
            for cls in WORKFLOWS
        ]
    location = config.worker.deployment_location
    body = {
        "definitions": [d.model_dump(mode="json") for d in definitions],
        "deployment_name": deployment,
        "worker_name": config.worker.worker_name,
        "deployment_location": location.model_dump(mode="json"),
    }
    try:
        from mistralai.workflows.client import translate_model
        from mistralai.workflows.worker_client import models as wc_models
        from mistralai.workflows.worker_client.utils.serializers import marshal_json

        request = wc_models.WorkflowSpecsRegisterRequest(
            definitions=[
                translate_model(wc_models.WorkflowSpecWithTaskQueue, d) for d in definitions
            ],
            deployment_name=deployment,
            worker_name=config.worker.worker_name,
            deployment_location=wc_models.DeploymentLocation(**location.model_dump(mode="json")),
        )
        body = json.loads(marshal_json(request, wc_models.WorkflowSpecsRegisterRequest))
    except (ImportError, AttributeError):
        pass
    activities: list[str] = []
    try:
        from mistralai.workflows.core.activity import get_all_temporal_activities

        activities = sorted(fn.__name__ for fn in get_all_temporal_activities())
    except ImportError:
        pass
    return {"sdk_version": workflows.__version__, "register_body": body, "activities": activities}


def main() -> None:
    if os.environ.get("WORKFLOW_APP_DESCRIBE") == "1":
        sys.stdout.write(json.dumps(describe(), sort_keys=True) + "\n")
        return
    asyncio.run(workflows.run_worker(WORKFLOWS))


if __name__ == "__main__":
    main()
