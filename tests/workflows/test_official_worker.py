"""The official `mistralai-workflows` worker, unchanged, against a live `maestrale serve` and its
embedded Temporal (reached through Maestrale's worker proxy), driven by the official client
`mistralai==2.8.0`.

The worker runs in its own virtual environment (Python >= 3.12, built and cached by
`tests/support/official_worker.py`; the tests skip when no such Python exists or the packages
cannot be installed). Its workflows are `tests/workflows/official/workflows_app.py`: `chat-echo`
(an activity calling Maestrale's chat through the official plugin), `interactive` (signals, a
query, an update) and `noop`.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from mistralai.client import Mistral
from mistralai.client.models import Workflow, WorkflowExecutionResponse

from maestrale.workflows.temporal.devserver import find_binary
from tests.support import official_worker
from tests.support.app_fixtures import API_KEY
from tests.support.live import free_port, start_server, stop_server

pytestmark = [
    pytest.mark.ci_tier,
    pytest.mark.skipif(find_binary() is None, reason="the [workflows] extra is missing"),
    # The first run builds the worker's venv (about 30 s with a reachable package index).
    pytest.mark.timeout(600),
]

DEPLOYMENT = "official"


@dataclass
class Platform:
    """A live server with its embedded Temporal, and the official worker(s) serving it."""

    root: Path
    venv: Path
    temporal_port: int
    port: int = field(default_factory=free_port)  # kept across restarts: workers know it
    proxy_port: int = field(default_factory=free_port)  # the worker proxy's, likewise
    url: str = ""
    server: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def marks(self) -> Path:
        return self.root / "marks.jsonl"

    @property
    def log(self) -> Path:
        return self.root / "worker.log"

    def serve(self) -> None:
        env = {
            "MAESTRALE_TEMPORAL_EMBEDDED": "true",
            "MAESTRALE_TEMPORAL_EMBEDDED_PORT": str(self.temporal_port),
            "MAESTRALE_TEMPORAL_PROXY_PORT": str(self.proxy_port),
        }
        self.server, self.url = start_server(self.data_dir, env=env, port=self.port)

    def stop(self) -> None:
        if self.server is not None:
            stop_server(self.server)
            self.server = None

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        proc = official_worker.start_worker(
            self.venv,
            server_url=self.url,
            api_key=API_KEY,
            deployment=DEPLOYMENT,
            worker_name=name,
            log_path=self.log,
            extra_env={"WORKFLOW_TEST_MARKS": str(self.marks), **TELEMETRY},
        )
        self.workers.append(proc)
        official_worker.wait_for_log(self.log, "Starting Temporal worker", 60, proc=proc,
                                     count=len(self.workers))  # fmt: skip
        return proc

    def sdk(self) -> Mistral:
        return Mistral(api_key=API_KEY, server_url=self.url)

    def http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=60
        )


# The worker's OpenTelemetry export on, to the platform's /telemetry/v1 routes with its key (the
# SDK's default), flushed every 200 ms rather than every 5 s.
TELEMETRY = {
    "OTEL_ENABLED": "true",
    "MISTRAL_WORKFLOWS_OTEL_TRACES_EXPORT": "true",
    "MISTRAL_WORKFLOWS_OTEL_LOGS_EXPORT": "true",
    "MISTRAL_WORKFLOWS_OTEL_METRICS_EXPORT": "true",
    "OTEL_SDK_DISABLED": "false",
    "OTEL_BSP_SCHEDULE_DELAY": "200",
    "OTEL_BLRP_SCHEDULE_DELAY": "200",
}


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    venv = official_worker.require_worker_venv()
    platform = Platform(tmp_path_factory.mktemp("official"), venv, free_port())
    platform.serve()
    try:
        platform.start_worker("worker-a")
        yield platform
    finally:
        for proc in platform.workers:
            official_worker.kill_worker(proc)
        platform.stop()


def _execute(client: Mistral, **request: Any) -> WorkflowExecutionResponse:
    """`execute_workflow`, whose answer is always the full execution response here."""
    response = client.workflows.execute_workflow(**request)
    assert isinstance(response, WorkflowExecutionResponse), response
    return response


def _until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def _status(client: Mistral, execution_id: str) -> str:
    return str(client.workflows.executions.get_workflow_execution(execution_id=execution_id).status)


def _closed(client: Mistral, execution_id: str) -> str:
    return str(
        _until(lambda: _status(client, execution_id) != "RUNNING" and _status(client, execution_id))
    )


def _correlated_chats(platform: Platform, execution_id: str) -> list[str]:
    """The chat completion events recorded with the execution as their correlation id."""
    time.sleep(0.5)  # the accounting flush (0.25 s)
    with sqlite3.connect(platform.data_dir / "maestrale.db") as db:
        rows = db.execute(
            "SELECT response_messages FROM chat_completion_events WHERE correlation_id = ?",
            (execution_id,),
        ).fetchall()
    return [json.loads(r[0])[0]["content"] for r in rows]


def test_the_worker_registers_its_workflows(platform: Platform) -> None:
    client = platform.sdk()
    listed = client.workflows.get_workflows()
    assert listed is not None
    names = {w.name for w in listed.result.workflows}
    assert {"chat-echo", "interactive", "noop"} <= names
    assert "__parallel_execution__" not in names  # technical workflows are hidden
    interactive = client.workflows.get_workflow(workflow_identifier="interactive").workflow
    assert interactive.active is True and interactive.display_name == "Interactive counter"
    regs = client.workflows.get_workflow_registrations(with_workflow=True).workflow_registrations
    by_name = {r.workflow.name: r for r in regs if isinstance(r.workflow, Workflow)}
    definition = by_name["interactive"].definition
    assert [s.name for s in definition.signals or []] == ["add", "finish"]
    assert definition.execution_timeout == 1800.0
    deployment = client.workflows.deployments.get_deployment(name=DEPLOYMENT)
    assert deployment.is_active and [w.name for w in deployment.workers] == ["worker-a"]


def test_execute_and_wait_calls_chat_through_the_plugin(platform: Platform) -> None:
    client = platform.sdk()
    done = _execute(
        client,
        workflow_identifier="chat-echo",
        input={"text": "bonjour"},
        wait_for_result=True,
        timeout_seconds=60,
    )
    assert done.status == "COMPLETED", done
    assert done.result == {"result": "echo: bonjour"}
    assert done.deployment_name == DEPLOYMENT
    # The plugin's chat call is accounted with the execution as its correlation id.
    assert _correlated_chats(platform, done.execution_id) == ["echo: bonjour"]
    # The worker's spans and logs reached the telemetry store, read by the workflows' routes.
    with platform.http() as http:
        base = f"/v1/workflows/executions/{done.execution_id}"

        def spans() -> int:
            summary = http.get(f"{base}/trace/otel")
            assert summary.status_code == 200, summary.text
            data = summary.json()["otel_trace_data"] or {"batches": []}
            return sum(len(s["spans"]) for b in data["batches"] for s in b["scopeSpans"])

        assert _until(spans, timeout=20), "no span of the execution arrived"
        # Its log records (the test workflows log nothing themselves: the worker's own).
        deployment = f"/v1/workflows/deployments/{DEPLOYMENT}/logs"
        logs = _until(lambda: http.get(deployment).json()["results"], timeout=20)
        assert logs, "no log record of the worker arrived"
    refused = [
        line
        for line in platform.log.read_text().splitlines()
        if "telemetry" in line.lower() and "404" in line
    ]
    assert not refused, refused[:3]


def test_execute_without_waiting_then_get(platform: Platform) -> None:
    client = platform.sdk()
    started = _execute(
        client, workflow_identifier="noop", input={"a": 1}, execution_id="official-noop-1"
    )
    assert started.execution_id == "official-noop-1"
    assert started.status == "RUNNING" and started.result is None
    assert _closed(client, "official-noop-1") == "COMPLETED"
    got = client.workflows.executions.get_workflow_execution(execution_id="official-noop-1")
    assert got.result == {"a": 1} and got.end_time is not None


def test_signal_query_update(platform: Platform) -> None:
    client = platform.sdk()
    execution = _execute(client, workflow_identifier="interactive", input={})
    ex = client.workflows.executions
    ex.signal_workflow_execution(
        execution_id=execution.execution_id, name="add", input={"amount": 3}
    )
    total = _until(lambda: ex.query_workflow_execution(
        execution_id=execution.execution_id, name="total").result == 3)  # fmt: skip
    assert total
    old = ex.update_workflow_execution(
        execution_id=execution.execution_id, name="set_total", input={"value": 10}
    )
    assert old.update_name == "set_total" and old.result == 3
    ex.signal_workflow_execution(execution_id=execution.execution_id, name="finish")
    assert _closed(client, execution.execution_id) == "COMPLETED"
    got = ex.get_workflow_execution(execution_id=execution.execution_id)
    assert got.result == {"total": 10}


def test_cancel_and_terminate(platform: Platform) -> None:
    client = platform.sdk()
    ex = client.workflows.executions
    canceled = _execute(client, workflow_identifier="interactive", input={})
    terminated = _execute(client, workflow_identifier="interactive", input={})
    # Cancel once the run has started on the worker (a cancel before is honoured as well).
    _until(lambda: ex.query_workflow_execution(execution_id=canceled.execution_id, name="total"))
    ex.cancel_workflow_execution(execution_id=canceled.execution_id)
    ex.terminate_workflow_execution(execution_id=terminated.execution_id)
    assert _closed(client, canceled.execution_id) == "CANCELED"
    assert _closed(client, terminated.execution_id) == "TERMINATED"


def test_events_list_and_stream(platform: Platform) -> None:
    client = platform.sdk()
    done = _execute(
        client, workflow_identifier="noop", input={}, wait_for_result=True, timeout_seconds=60
    )

    def types() -> set[str]:
        page = client.workflows.events.get_workflow_events(workflow_exec_id=done.execution_id)
        return {str(getattr(e, "event_type", "")) for e in page.events}

    seen = _until(lambda: "WORKFLOW_EXECUTION_COMPLETED" in types() and types())
    assert {"WORKFLOW_EXECUTION_STARTED", "WORKFLOW_EXECUTION_COMPLETED"} <= seen
    with (
        platform.http() as http,
        http.stream("GET", f"/v1/workflows/executions/{done.execution_id}/stream") as stream,
    ):
        assert stream.status_code == 200
        data = [line for line in stream.iter_lines() if line.startswith("data:")]
    assert any("WORKFLOW_EXECUTION_COMPLETED" in line for line in data)


def _runs(client: Mistral) -> list[Any]:
    page = client.workflows.runs.list_runs(workflow_identifier="noop")
    return list(page.result.executions) if page is not None else []


def test_a_schedule_fires(platform: Platform) -> None:
    client = platform.sdk()
    schedule = client.workflows.schedules.schedule_workflow(
        workflow_identifier="noop",
        schedule={"intervals": [{"every": "PT1S"}], "input": {"from": "schedule"}},
    )
    schedule_id = schedule.schedule_id
    try:
        fired = _until(lambda: [
            r for r in _runs(client)
            if r.execution_id.startswith(schedule_id)
        ])  # fmt: skip
        assert fired, "no execution of the schedule reached the index"
    finally:
        client.workflows.schedules.unschedule_workflow(schedule_id=schedule_id)


def test_a_worker_killed_mid_activity_is_replaced(platform: Platform) -> None:
    client = platform.sdk()
    execution = _execute(
        client, workflow_identifier="chat-echo", input={"text": "once", "sleep_ms": 6000}
    )
    execution_id = execution.execution_id

    def attempts() -> list[dict[str, Any]]:
        if not platform.marks.exists():
            return []
        lines = [json.loads(x) for x in platform.marks.read_text().splitlines() if x]
        return [m for m in lines if m.get("execution_id", execution_id) == execution_id
                and m.get("text") == "once"]  # fmt: skip

    assert _until(attempts), "the activity never started"
    official_worker.kill_worker(platform.workers[0])
    platform.start_worker("worker-b")
    assert _closed(client, execution_id) == "COMPLETED"
    got = client.workflows.executions.get_workflow_execution(execution_id=execution_id)
    assert got.result == {"result": "echo: once"}
    assert len(attempts()) == 2  # Temporal retried the activity on the new worker
    assert _correlated_chats(platform, execution_id) == ["echo: once"]  # one call, once


def test_state_survives_a_restart_of_serve(platform: Platform) -> None:
    client = platform.sdk()
    running = _execute(client, workflow_identifier="interactive", input={})
    # Once its run has registered with the platform: the worker's first activity of a run calls
    # `executions/register`, which fails the run after 3 attempts if the server stays away.
    ex = client.workflows.executions
    assert _until(lambda: ex.query_workflow_execution(
        execution_id=running.execution_id, name="total").result == 0)  # fmt: skip
    registrations = {
        r.id for r in client.workflows.get_workflow_registrations().workflow_registrations
    }
    platform.stop()
    platform.serve()
    client = platform.sdk()
    after = {r.id for r in client.workflows.get_workflow_registrations().workflow_registrations}
    assert registrations <= after
    assert _status(client, running.execution_id) == "RUNNING"
    ex = client.workflows.executions
    ex.signal_workflow_execution(execution_id=running.execution_id, name="finish")
    assert _closed(client, running.execution_id) == "COMPLETED"
    # The worker went on against the restarted server and Temporal.
    done = _execute(client,
        workflow_identifier="chat-echo", input={"text": "again"}, wait_for_result=True,
        timeout_seconds=60,
    )  # fmt: skip
    assert done.result == {"result": "echo: again"}


def test_a_platform_that_lost_the_registrations_gets_them_again(platform: Platform) -> None:
    """A heartbeat naming registrations the platform no longer has answers 409: the worker
    registers again (within one heartbeat, 10 s), and executions route to it again."""
    with sqlite3.connect(platform.data_dir / "maestrale.db") as db:
        db.execute("DELETE FROM workflow_registrations")
    client = platform.sdk()

    def registered() -> bool:
        regs = client.workflows.get_workflow_registrations().workflow_registrations
        return bool(regs)

    assert not registered()
    assert _until(registered, timeout=25), "the worker did not register again"
    done = _execute(client, workflow_identifier="noop", input={"x": 1}, wait_for_result=True,
                    timeout_seconds=60)  # fmt: skip
    assert done.result == {"x": 1}
