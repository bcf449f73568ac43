"""Maestrale as a Temporal client: every call the workflows API makes to the engine.

One connection per process, made on first use (a Temporal that is down at start does not stop
the server; its calls answer 503 until it is back); every call is made in the caller's
workspace's namespace (`for_workspace`), made on first use (`namespaces`). A request's view
(`releasing`) ends the request's transaction before each call. Temporal errors become the
group's errors: an unknown execution is a 404 `WF_1100`, one already running a 409 `WF_1101`,
an unreachable frontend a 503 `WF_1103`.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from maestrale.core.db import Database
from maestrale.core.uow import OwnerRelease, Release
from maestrale.workflows.errors import (
    ALREADY_STARTED,
    NOT_FOUND,
    NOT_RUNNING,
    WorkflowError,
    engine_failed,
)
from maestrale.workflows.executions.tables import ExecutionStatus
from maestrale.workflows.temporal.namespaces import Connection, workspace_namespace

log = logging.getLogger("maestrale.workflows.temporal")

# Temporal's WorkflowExecutionStatus values (1..7) as the platform's statuses.
STATUSES = {
    1: ExecutionStatus.RUNNING,
    2: ExecutionStatus.COMPLETED,
    3: ExecutionStatus.FAILED,
    4: ExecutionStatus.CANCELED,
    5: ExecutionStatus.TERMINATED,
    6: ExecutionStatus.CONTINUED_AS_NEW,
    7: ExecutionStatus.TIMED_OUT,
}


# Temporal's EventType values of the events that close a run.
_CLOSE_EVENTS = {
    2: ExecutionStatus.COMPLETED,
    3: ExecutionStatus.FAILED,
    4: ExecutionStatus.TIMED_OUT,
    21: ExecutionStatus.CANCELED,
    27: ExecutionStatus.TERMINATED,
    28: ExecutionStatus.CONTINUED_AS_NEW,
}


def _search_value(value: Any) -> str | None:
    """A search attribute's value as the platform's text: a time in ISO 8601, a keyword list
    joined by commas."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True, slots=True)
class Described:
    """What Temporal says of an execution's latest run."""

    status: str
    run_id: str
    start_time: datetime | None
    close_time: datetime | None
    task_queue: str | None
    workflow_type: str | None
    parent_id: str | None
    # The run's search attributes (set by its worker, `upsert_search_attributes`), as text.
    search_keys: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Closed:
    """How a run ended: its status, run, close time, and its decoded result if it completed."""

    status: str
    run_id: str
    close_time: datetime
    result: Any


@dataclass(frozen=True, slots=True)
class TemporalTarget:
    address: str
    namespace: str  # the prefix of the workspaces' namespaces
    tls: bool = False
    api_key: str | None = None


class TemporalEngine:
    """Maestrale's Temporal client (`temporalio`), connected lazily: the process's engine, and
    the views of it bound to one workspace's namespace (`for_workspace`), which every call of
    the workflows API goes through, and to a request's transaction (`releasing`)."""

    def __init__(
        self,
        target: TemporalTarget,
        *,
        namespace: str | None = None,
        connection: Connection | None = None,
    ) -> None:
        self.target = target
        self._namespace = namespace
        # Where this process serves the worker proxy (`workers/whoami` hands it out); None
        # until it listens, and why it does not when it could not.
        self.proxy_port: int | None = None
        self.proxy_failure: str | None = None
        self.connection = connection or Connection(
            target.address, tls=target.tls, api_key=target.api_key
        )
        # Ends the transaction owner's transaction (`releasing`); None: the caller holds none.
        self.release: OwnerRelease | None = None

    def releasing(self, release: Release, db: Database) -> TemporalEngine:
        """This (workspace's) engine for the owner of a unit of work (a request): before each
        call to Temporal it ends the owner's transaction (`release`), so that none is open
        while Temporal answers (docs/architecture.md §3), and no caller has to remember to."""
        view = copy.copy(self)
        view.release = OwnerRelease(release, db)
        return view

    async def _release_owner(self) -> None:
        if self.release is not None:
            await self.release("a call to Temporal")

    def for_workspace(self, workspace_id: str) -> TemporalEngine:
        """The engine bound to the workspace's namespace (one connection for all)."""
        namespace = workspace_namespace(self.target.namespace, workspace_id)
        return TemporalEngine(self.target, namespace=namespace, connection=self.connection)

    @property
    def namespace(self) -> str:
        if self._namespace is None:
            raise RuntimeError("the process's engine has no namespace: use for_workspace()")
        return self._namespace

    async def client(self) -> Any:
        """A client of the workspace's namespace, which exists once this returns; every call
        to Temporal starts here, so the owner's transaction ends here (`releasing`)."""
        await self._release_owner()
        return await self.connection.client(self.namespace)

    async def handle(self, execution_id: str, run_id: str | None = None) -> Any:
        from temporalio.common import RawValue

        client = await self.client()
        return client.get_workflow_handle(execution_id, run_id=run_id, result_type=RawValue)

    async def start(
        self,
        workflow_name: str,
        payload: Any,
        *,
        execution_id: str,
        task_queue: str,
        execution_timeout: float | None,
    ) -> str:
        """Start an execution; its first run's id. A running one with that id: 409."""
        from temporalio.common import RawValue
        from temporalio.exceptions import WorkflowAlreadyStartedError

        client = await self.client()
        try:
            handle = await client.start_workflow(
                workflow_name,
                RawValue(payload),
                id=execution_id,
                task_queue=task_queue,
                execution_timeout=(
                    timedelta(seconds=execution_timeout) if execution_timeout else None
                ),
            )
        except WorkflowAlreadyStartedError as exc:
            raise WorkflowError(
                f"execution {execution_id} is already running", ALREADY_STARTED, status_code=409
            ) from exc
        except Exception as exc:
            raise translated(exc, execution_id) from exc
        return str(handle.result_run_id)

    async def describe(self, execution_id: str, run_id: str | None = None) -> Described:
        """The state of a run of `execution_id` (its latest when `run_id` is None)."""
        handle = await self.handle(execution_id, run_id)
        try:
            described = await handle.describe()
        except Exception as exc:
            raise translated(exc, execution_id) from exc
        return Described(
            status=STATUSES.get(int(described.status or 1), ExecutionStatus.RUNNING),
            run_id=str(described.run_id),
            start_time=described.start_time,
            close_time=described.close_time,
            task_queue=described.task_queue,
            workflow_type=described.workflow_type,
            parent_id=described.parent_id,
            search_keys={
                pair.key.name: _search_value(pair.value)
                for pair in described.typed_search_attributes
            },
        )

    async def wait_closed(self, execution_id: str, run_id: str, timeout: float) -> Closed | None:
        """Wait up to `timeout` seconds for the execution to close, following its runs
        (continue-as-new); what closed it, or None if it still runs. One long poll of the
        run's close event gives its status, time and result: no describe, no second call.
        Never cancels it."""
        # Ended here, in the caller's task, rather than in the one `wait_for` runs the poll in.
        await self._release_owner()
        try:
            return await asyncio.wait_for(self._close_event(execution_id, run_id), timeout)
        except TimeoutError:
            return None

    async def _close_event(self, execution_id: str, run_id: str) -> Closed:
        from temporalio.api.common.v1 import WorkflowExecution
        from temporalio.api.enums.v1 import HistoryEventFilterType
        from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest

        from maestrale.workflows.temporal.payloads import decode_all

        client = await self.client()
        token = b""
        while True:
            request = GetWorkflowExecutionHistoryRequest(
                namespace=self.namespace,
                execution=WorkflowExecution(workflow_id=execution_id, run_id=run_id),
                wait_new_event=True,
                history_event_filter_type=HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
                skip_archival=True,
                next_page_token=token,
            )
            try:
                response = await client.workflow_service.get_workflow_execution_history(
                    request, retry=True
                )
            except Exception as exc:
                raise translated(exc, execution_id) from exc
            for event in response.history.events:
                status = _CLOSE_EVENTS.get(int(event.event_type))
                if status is None:
                    continue
                if status == ExecutionStatus.CONTINUED_AS_NEW:
                    attributes = event.workflow_execution_continued_as_new_event_attributes
                    run_id, token = attributes.new_execution_run_id, b""
                    break
                result = None
                if status == ExecutionStatus.COMPLETED:
                    attributes = event.workflow_execution_completed_event_attributes
                    result = decode_all(attributes.result)
                return Closed(status, run_id, event.event_time.ToDatetime(tzinfo=UTC), result)
            else:
                # The server's long poll ended with nothing (or a page): ask again.
                token = response.next_page_token

    async def outcome(self, execution_id: str, run_id: str) -> Any:
        """The result of a completed run, decoded."""
        from maestrale.workflows.temporal.payloads import decode

        handle = await self.handle(execution_id, run_id)
        try:
            raw = await handle.result(follow_runs=False)
        except Exception as exc:
            raise translated(exc, execution_id) from exc
        return decode(raw.payload)


def translated(exc: Exception, execution_id: str) -> WorkflowError:
    """A Temporal error as the group's: not found, not running, unreachable, else failed."""
    if isinstance(exc, WorkflowError):
        return exc
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(exc, RPCError):
        if exc.status == RPCStatusCode.NOT_FOUND:
            if "completed" in exc.message or "closed" in exc.message:
                return WorkflowError(
                    f"execution {execution_id} is not running", NOT_RUNNING, status_code=409
                )
            return WorkflowError(f"execution {execution_id} not found", NOT_FOUND, status_code=404)
        if exc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
            return engine_failed("the workflow engine (Temporal) is unreachable", status_code=503)
        if exc.status == RPCStatusCode.INVALID_ARGUMENT:
            return WorkflowError(exc.message, "WF_1000", status_code=400)
        return engine_failed(f"the workflow engine refused the call: {exc.message}")
    log.warning("Temporal call failed for %s: %r", execution_id, exc)
    return engine_failed(f"the workflow engine failed: {type(exc).__name__}")
