"""Starting executions and reading them back.

Temporal is the authority on an execution; the index row is what the platform knows around it
(workspace, workflow, deployment, caller) and a copy of its last known state, refreshed from
Temporal whenever a caller reads a running one. No database transaction is open while Temporal
is called (docs/architecture.md §3): each operation reads, calls (the request's engine ends the
transaction first), then writes.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.uow import UnitOfWork
from maestrale.workflows.errors import AMBIGUOUS, NOT_FOUND, WorkflowError, not_found
from maestrale.workflows.executions.repository import ExecutionRepository
from maestrale.workflows.executions.schemas import ExecutionOut, ExecutionRequest
from maestrale.workflows.executions.tables import Execution, ExecutionStatus
from maestrale.workflows.registry.repository import RegistryRepository
from maestrale.workflows.registry.tables import Deployment, Registration, Workflow
from maestrale.workflows.temporal.engine import TemporalEngine
from maestrale.workflows.temporal.payloads import start_payload


@dataclass(frozen=True, slots=True)
class ExecutionSettings:
    namespace: str
    wait_seconds: float
    max_wait_seconds: float
    liveness_seconds: float


def id_taken(execution_id: str) -> WorkflowError:
    return WorkflowError(f"execution id {execution_id!r} is taken", "WF_1101", status_code=409)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ExecutionService:
    def __init__(
        self,
        work: UnitOfWork,
        tenant: Tenant,
        engine: TemporalEngine,
        settings: ExecutionSettings,
        user_id: str | None = None,
    ) -> None:
        self.work = work
        self.tenant = tenant
        self.engine = engine
        self.settings = settings
        self.user_id = user_id

    @property
    def executions(self) -> ExecutionRepository:
        return ExecutionRepository(self.work.session, self.tenant)

    @property
    def registry(self) -> RegistryRepository:
        liveness = timedelta(seconds=self.settings.liveness_seconds)
        return RegistryRepository(self.work.session, self.tenant, liveness)

    # -- execute ----------------------------------------------------------------------------

    async def route(
        self, identifier: str, deployment_name: str | None
    ) -> tuple[Workflow, Registration, Deployment]:
        """The workflow `identifier` names and the registration an execution of it runs: the
        given deployment's, else the one of the only deployment with live workers, else (none
        live) the newest; two live ones are ambiguous (409)."""
        registry = self.registry
        workflow = await registry.workflow(identifier)
        if workflow is None:
            raise not_found(f"workflow {identifier!r}")
        if workflow.archived:
            raise WorkflowError(
                f"workflow {workflow.name!r} is archived", NOT_FOUND, status_code=404
            )
        serving = await registry.serving(workflow.id)
        if deployment_name is not None:
            named = [(r, d) for r, d, _ in serving if d.name == deployment_name]
            if not named:
                raise not_found(f"deployment {deployment_name!r} of workflow {workflow.name!r}")
            return workflow, *named[0]
        if not serving:
            raise not_found(f"registration of workflow {workflow.name!r}")
        live = [(r, d) for r, d, alive in serving if alive]
        if len(live) > 1:
            names = sorted(d.name for _, d in live)
            raise WorkflowError(
                f"workflow {workflow.name!r} runs in several deployments ({', '.join(names)}):"
                " name one with deployment_name",
                AMBIGUOUS,
                status_code=409,
                deployments=names,
            )
        registration, deployment, _ = serving[0]
        return workflow, *(live[0] if live else (registration, deployment))

    async def execute(self, identifier: str, body: ExecutionRequest) -> ExecutionOut:
        workflow, registration, deployment = await self.route(
            identifier, body.deployment_name or body.task_queue
        )
        execution_id = body.execution_id or uuid.uuid4().hex
        if body.execution_id is not None:  # a generated id is nobody's
            owner = await self.executions.owner_of(execution_id)
            if owner is not None and owner != self.tenant.workspace_id:
                raise id_taken(execution_id)
        timeout = registration.definition.get("execution_timeout")

        token = str(uuid.uuid4())
        payload = start_payload(
            body.input,
            namespace=self.settings.namespace,
            execution_id=execution_id,
            token=token,
            extensions=body.extensions,
        )
        run_id = await self.engine.start(
            workflow.name,
            payload,
            execution_id=execution_id,
            task_queue=deployment.name,
            execution_timeout=float(timeout) if timeout else None,
        )
        try:
            row = await self.executions.started(
                execution_id,
                workflow_id=workflow.id,
                workflow_name=workflow.name,
                deployment_name=deployment.name,
                run_id=run_id,
                root_execution_id=execution_id,
                parent_execution_id=None,
                user_id=self.user_id,
                token_hash=token_hash(token),
            )
        except LookupError:
            raise id_taken(execution_id) from None
        if not body.wait_for_result:
            return ExecutionOut.of(row)
        wait = min(
            body.timeout_seconds or self.settings.wait_seconds, self.settings.max_wait_seconds
        )
        closed = await self.engine.wait_closed(execution_id, run_id, wait)
        if closed is not None:
            # The row read back above, written with what closed it: one UPDATE.
            row.status, row.run_id = closed.status, closed.run_id
            row.end_time, row.result = closed.close_time, closed.result
            row.updated_at = utcnow()
            await self.work.session.flush()
        return ExecutionOut.of(row)

    # -- read -------------------------------------------------------------------------------

    async def row(self, execution_id: str) -> Execution:
        row = await self.executions.get(execution_id)
        if row is None:
            raise not_found(f"execution {execution_id!r}")
        return row

    async def get(self, execution_id: str, include_search_keys: bool = False) -> ExecutionOut:
        """The execution, its state refreshed from Temporal unless it is known closed; with
        `include_search_keys`, its latest run's search attributes, as Temporal has them
        (null once Temporal no longer has the execution)."""
        row = await self.row(execution_id)
        if row.status not in ExecutionStatus.CLOSED:
            row = await self.refresh(row)
        out = ExecutionOut.of(row)
        if include_search_keys:
            try:
                out.search_keys = (await self.engine.describe(execution_id)).search_keys
            except WorkflowError as exc:
                if exc.status_code != 404:
                    raise
        return out

    async def refresh(self, row: Execution) -> Execution:
        """Ask Temporal for `row`'s state (the transaction ends first), then write it back."""
        execution_id = row.id
        try:
            described = await self.engine.describe(execution_id)
        except WorkflowError as exc:
            if exc.status_code == 404:  # gone from Temporal (retention): the index stands
                return await self.row(execution_id)
            raise
        result: Any = None
        if described.status == ExecutionStatus.COMPLETED:
            result = await self.engine.outcome(execution_id, described.run_id)
        row = await self.row(execution_id)
        row.status = described.status
        row.run_id = described.run_id
        if described.close_time is not None:
            row.end_time = described.close_time
        row.result = result
        row.updated_at = utcnow()
        await self.work.session.flush()
        return row
