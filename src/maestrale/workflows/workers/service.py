"""What workers tell the platform: who they are, what they run, that they are alive, and each
execution they start. The worker's key decides the workspace of everything it registers."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.uow import UnitOfWork
from maestrale.workflows.errors import WorkflowError
from maestrale.workflows.executions.repository import ExecutionRepository
from maestrale.workflows.registry.repository import RegistryRepository, is_uuid
from maestrale.workflows.workers.schemas import (
    ExecutionRegisterRequest,
    ExecutionRegisterResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    RegisterRequest,
    RegisterResponse,
    RegistrationRef,
)

# The answer to a heartbeat naming a registration the platform does not know (it lost it, or it
# belongs to another workspace): the official worker then registers again in full and goes on
# beating. Not a 404: on a 404 (or 405) it takes the endpoint for missing and stops beating.
UNKNOWN_REGISTRATION = "WF_1100"
UNKNOWN_REGISTRATION_STATUS = 409


def digest(definition: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()


class WorkerService:
    def __init__(self, work: UnitOfWork, tenant: Tenant, liveness_seconds: float) -> None:
        self.work = work
        self.tenant = tenant
        self.registry = RegistryRepository(
            work.session, tenant, timedelta(seconds=liveness_seconds)
        )

    async def register(self, body: RegisterRequest) -> RegisterResponse:
        location = body.deployment_location.model_dump() if body.deployment_location else None
        deployment = await self.registry.ensure_deployment(body.deployment_name, location)
        await self.registry.beat(deployment, body.worker_name, location)
        refs: list[RegistrationRef] = []
        warnings: list[str] = []
        for spec in body.definitions:
            workflow = await self.registry.ensure_workflow(
                spec.name,
                is_technical=spec.is_technical,
                description=spec.description,
            )
            if spec.display_name and workflow.display_name == workflow.name:
                workflow.display_name = spec.display_name
            if spec.description and not workflow.description:
                workflow.description = spec.description
            definition = spec.definition()
            registration = await self.registry.ensure_registration(
                workflow, deployment, digest(definition), definition
            )
            serving = {
                d.id: d.name
                for _, d in await self.registry.registrations(workflow_ids=[workflow.id])
                if d.id != deployment.id
            }
            live_others = await self.registry.live_deployment_ids(list(serving))
            if live_others and not spec.is_technical:
                names = ", ".join(sorted(serving[i] for i in live_others))
                warnings.append(
                    f"workflow {spec.name!r} is also served by deployment(s) {names}:"
                    " executions must name a deployment_name"
                )
            refs.append(
                RegistrationRef(
                    workflow_id=workflow.id,
                    workflow_registration_id=registration.id,
                    workflow_version_id=registration.id,
                )
            )
        await self.work.session.flush()
        return RegisterResponse(
            has_conflicts=bool(warnings),
            workflow_registration_ids=[r.workflow_registration_id for r in refs],
            workflow_registration_refs=refs,
            warnings=warnings,
        )

    async def heartbeat(self, body: HeartbeatRequest) -> HeartbeatResponse:
        """Mark the worker alive. A registration this workspace does not hold is a 409, which
        makes the worker register again (after a platform that lost its state, say)."""
        deployment = await self.registry.deployment(body.deployment_name)
        if deployment is None:
            raise WorkflowError(
                f"deployment {body.deployment_name!r} is not registered",
                UNKNOWN_REGISTRATION,
                status_code=UNKNOWN_REGISTRATION_STATUS,
            )
        for ref in body.workflow_registration_refs:
            found = (
                await self.registry.registration(ref.workflow_registration_id)
                if ref.workflow_registration_id and is_uuid(ref.workflow_registration_id)
                else None
            )
            if found is None or found[1].id != deployment.id:
                raise WorkflowError(
                    f"registration {ref.workflow_registration_id!r} is not known",
                    UNKNOWN_REGISTRATION,
                    status_code=UNKNOWN_REGISTRATION_STATUS,
                )
        await self.registry.beat(deployment, body.worker_name, None)
        return HeartbeatResponse(all_active=True)

    async def register_execution(self, body: ExecutionRegisterRequest) -> ExecutionRegisterResponse:
        """The first thing every run does: tie it to this workspace's index. An execution the
        platform started is matched by its token; one started elsewhere (a schedule, a child
        workflow, a client straight to Temporal) is indexed now."""
        executions = ExecutionRepository(self.work.session, self.tenant)
        execution_id = body.temporal_workflow_id
        owner = await executions.owner_of(execution_id)
        if owner is not None and owner != self.tenant.workspace_id:
            raise WorkflowError(
                f"execution {execution_id!r} belongs to another workspace",
                "WF_1003",
                status_code=403,
            )
        row = await executions.get(execution_id)
        if row is not None and row.run_id == body.temporal_run_id:
            if row.token_hash and row.token_hash != body.execution_token_hash:
                raise WorkflowError(
                    "the execution token does not match", "WF_1003", status_code=403
                )
            return ExecutionRegisterResponse(execution_id=execution_id, created=False)
        workflow = await self.registry.workflow(body.workflow_name)
        root = body.temporal_root_workflow_id or execution_id
        if row is not None and row.status == "RUNNING":
            # A new run of the same execution (reset, continue-as-new, retry).
            row.run_id = body.temporal_run_id
            row.token_hash = body.execution_token_hash
            row.updated_at = utcnow()
            await self.work.session.flush()
            return ExecutionRegisterResponse(execution_id=execution_id, created=False)
        await executions.started(
            execution_id,
            workflow_id=workflow.id if workflow is not None else None,
            workflow_name=body.workflow_name,
            deployment_name=body.task_queue,
            run_id=body.temporal_run_id,
            root_execution_id=root,
            parent_execution_id=body.temporal_parent_workflow_id,
            user_id=None,
            token_hash=body.execution_token_hash,
        )
        return ExecutionRegisterResponse(execution_id=execution_id, created=True)
