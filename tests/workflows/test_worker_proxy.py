"""Workspace B's key against workspace A's work, through the Temporal frontend workers are given.

The official worker, unchanged, serves workspace A's deployment `svc` through Maestrale's worker
proxy. B registers a deployment of the same name, asks `workers/whoami` where Temporal is, and
then, with a raw `temporalio` client holding its own key, tries everything on A's namespace: list,
describe, poll A's task queue, signal, terminate, start on A's queue, and complete a task with a
token minted for A's namespace. Every attempt is refused, and A's execution completes untouched.
It runs on the embedded Temporal and on one started apart and configured as a cluster
(`MAESTRALE_TEMPORAL_ADDRESS`), on each database backend.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from maestrale.workflows.temporal.devserver import find_binary
from tests.support import official_worker
from tests.support.app_fixtures import API_KEY, create_tenant
from tests.support.live import start_server, stop_server

pytestmark = [
    pytest.mark.both_databases(),
    pytest.mark.skipif(find_binary() is None, reason="the [workflows] extra is missing"),
    pytest.mark.timeout(600),
]

DEPLOYMENT = "svc"


@dataclass
class Served:
    url: str
    temporal: str  # the real frontend, which only Maestrale (and this test) may know
    log: Path


@pytest.fixture(params=["embedded", "cluster"])
def served(request: pytest.FixtureRequest, database_url: str, tmp_path: Path) -> Iterator[Served]:
    venv = official_worker.require_worker_venv()
    env = {"MAESTRALE_DATABASE_URL": database_url, "MAESTRALE_TEMPORAL_PROXY_PORT": "0"}
    if request.param == "embedded":
        env["MAESTRALE_TEMPORAL_EMBEDDED"] = "true"
    else:  # the session's dev server, standing in for a Temporal cluster
        env["MAESTRALE_TEMPORAL_ADDRESS"] = request.getfixturevalue("temporal_address")
    proc, url = start_server(tmp_path / "data", env=env)
    worker: subprocess.Popen[bytes] | None = None
    try:
        log = tmp_path / "worker.log"
        worker = official_worker.start_worker(
            venv, server_url=url, api_key=API_KEY, deployment=DEPLOYMENT, worker_name="a-1",
            log_path=log,
        )  # fmt: skip
        official_worker.wait_for_log(log, "Starting Temporal worker", 90, proc=worker)
        if request.param == "embedded":
            started = (tmp_path / "data" / "temporal" / "temporal.log").read_text()
            temporal = re.findall(r"maestrale: starting (\S+)", started)[-1]
        else:
            temporal = env["MAESTRALE_TEMPORAL_ADDRESS"]
        yield Served(url, temporal, log)
    finally:
        if worker is not None:
            official_worker.kill_worker(worker)
        stop_server(proc)


def _http(url: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


async def _refused(attempt: Callable[[], Awaitable[Any]]) -> str:
    """The gRPC status an attempt was refused with (it must be refused)."""
    from temporalio.client import RPCError as ClientRPCError
    from temporalio.service import RPCError

    try:
        await attempt()
    except (RPCError, ClientRPCError) as exc:
        return str(getattr(exc, "status", None) or exc)
    except Exception as exc:  # the high-level client wraps some refusals
        cause = exc.__cause__
        if isinstance(cause, RPCError):
            return str(cause.status)
        raise
    raise AssertionError("the attempt was not refused")


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


async def test_another_workspace_reaches_nothing_of_a_workspace(
    served: Served, database_url: str
) -> None:
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import (
        DescribeNamespaceRequest,
        ListNamespacesRequest,
        PollActivityTaskQueueRequest,
        PollWorkflowTaskQueueRequest,
        RespondActivityTaskCompletedRequest,
        TerminateWorkflowExecutionRequest,
    )
    from temporalio.client import Client
    from temporalio.service import RPCStatusCode

    from maestrale.core.db import Database
    from tests.workflows.plain_worker import definitions

    database = Database(database_url)
    try:
        attacker = await create_tenant(database, "attacker")
    finally:
        await database.dispose()
    async with _http(served.url, API_KEY) as a, _http(served.url, attacker.key) as b:
        a_who = (await a.get("/v1/workflows/workers/whoami")).json()
        b_who = (await b.get("/v1/workflows/workers/whoami")).json()
        # Never the real frontend; one namespace per workspace.
        assert b_who["scheduler_url"] != served.temporal
        assert a_who["scheduler_url"] == b_who["scheduler_url"]
        assert a_who["namespace"] != b_who["namespace"]
        a_ns, proxy = a_who["namespace"], b_who["scheduler_url"]
        # B's `svc` serves a `noop` too: were the namespaces one, A's worker would run B's.
        noop = {"name": "noop", "task_queue": DEPLOYMENT, "input_schema": {"type": "object"}}
        body = {"definitions": [*definitions(DEPLOYMENT), noop], "deployment_name": DEPLOYMENT,
                "worker_name": "b-1"}  # fmt: skip
        assert (await b.post("/v1/workflows/register", json=body)).status_code == 200

        started = await a.post(
            "/v1/workflows/interactive/execute",
            json={"input": {}, "deployment_name": DEPLOYMENT},
        )
        assert started.status_code == 200, started.text
        victim = started.json()["execution_id"]

        async def total_is(n: int) -> bool:
            answer = await a.post(
                f"/v1/workflows/executions/{victim}/queries", json={"name": "total"}
            )
            return answer.status_code == 200 and answer.json()["result"] == n

        assert await _until(lambda: total_is(0)), "A's worker never ran A's execution"

        # A token for A's namespace, as if it had leaked.
        direct = await Client.connect(served.temporal, namespace=a_ns)
        described = await direct.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=a_ns)
        )
        a_ns_id = described.namespace_info.id
        forged = b"\x0a" + bytes([len(a_ns_id)]) + a_ns_id.encode() + b"\x12\x01x"

        # B dials what whoami gave it, with its own key, naming A's namespace.
        evil = await Client.connect(proxy, namespace=a_ns, api_key=attacker.key, tls=False)
        svc = evil.workflow_service
        handle = evil.get_workflow_handle(victim)
        denied = str(RPCStatusCode.PERMISSION_DENIED)
        attempts: dict[str, Callable[[], Awaitable[Any]]] = {
            "list": lambda: anext(aiter(evil.list_workflows())),
            "describe": handle.describe,
            "poll workflow tasks": lambda: svc.poll_workflow_task_queue(
                PollWorkflowTaskQueueRequest(namespace=a_ns, task_queue=TaskQueue(name="svc"))
            ),
            "poll activity tasks": lambda: svc.poll_activity_task_queue(
                PollActivityTaskQueueRequest(namespace=a_ns, task_queue=TaskQueue(name="svc"))
            ),
            "signal": lambda: handle.signal("add", {"amount": 666}),
            "terminate": lambda: svc.terminate_workflow_execution(
                TerminateWorkflowExecutionRequest(
                    namespace=a_ns, workflow_execution=WorkflowExecution(workflow_id=victim)
                )
            ),
            "start on A's queue": lambda: evil.start_workflow(
                "noop", {"forged": True}, id="forged", task_queue=DEPLOYMENT
            ),
            "complete a task": lambda: svc.respond_activity_task_completed(
                RespondActivityTaskCompletedRequest(namespace=a_ns, task_token=forged)
            ),
            "complete a task from its own namespace": lambda: svc.respond_activity_task_completed(
                RespondActivityTaskCompletedRequest(namespace=b_who["namespace"], task_token=forged)
            ),
            "list namespaces": lambda: svc.list_namespaces(ListNamespacesRequest()),
        }
        for name, attempt in attempts.items():
            assert await _refused(attempt) == denied, name
        # No key, or a key that is not one: not even a connection's first call.
        for key in (None, "msk_not_a_key"):
            with pytest.raises(RuntimeError, match="Unauthenticated"):
                await Client.connect(proxy, namespace=a_ns, api_key=key, tls=False)

        # B's own execution of `svc` stays in B's namespace: A's worker never picks it up.
        mine = await b.post(
            "/v1/workflows/noop/execute", json={"input": {"b": 1}, "deployment_name": DEPLOYMENT}
        )
        assert mine.status_code == 200, mine.text

        # A's execution went on untouched: the total is A's, and it completes as A says.
        assert await total_is(0)
        signal = {"name": "add", "input": {"amount": 2}}
        assert (await a.post(f"/v1/workflows/executions/{victim}/signals", json=signal)).is_success
        finish = {"name": "finish"}
        assert (await a.post(f"/v1/workflows/executions/{victim}/signals", json=finish)).is_success

        async def completed() -> bool:
            got = (await a.get(f"/v1/workflows/executions/{victim}")).json()
            return bool(got["status"] == "COMPLETED")

        assert await _until(completed)
        got = (await a.get(f"/v1/workflows/executions/{victim}")).json()
        assert got["result"] == {"total": 2}
        b_run = (await b.get(f"/v1/workflows/executions/{mine.json()['execution_id']}")).json()
        assert b_run["status"] == "RUNNING"
        assert (await a.get(f"/v1/workflows/executions/{b_run['execution_id']}")).status_code == 404
