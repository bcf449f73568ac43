"""Workflows, registrations and deployments as clients read and edit them."""

from __future__ import annotations

from datetime import timedelta

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest
from maestrale.workflows.errors import not_found
from maestrale.workflows.registry.repository import RegistryRepository
from maestrale.workflows.registry.schemas import (
    BulkArchived,
    BulkError,
    BulkUnarchived,
    DeploymentDetail,
    DeploymentList,
    DeploymentOut,
    RegistrationGet,
    RegistrationList,
    RegistrationOut,
    RegistrationWithStatus,
    WorkerOut,
    WorkflowBasic,
    WorkflowGet,
    WorkflowList,
    WorkflowOne,
    WorkflowOut,
    WorkflowUpdate,
    WorkflowWithStatus,
)
from maestrale.workflows.registry.tables import Deployment, Workflow

MAX_LIMIT = 1000
_MAX_OFFSET = 1 << 31


def parse_cursor(cursor: str | None) -> int:
    """A page cursor (an offset this API handed out) as an int; a foreign one is a 400."""
    if not cursor:
        return 0
    if not cursor.isdigit() or len(cursor) > 10 or int(cursor) > _MAX_OFFSET:
        raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor")
    return int(cursor)


def next_cursor(offset: int, limit: int, returned: int) -> str | None:
    return str(offset + limit) if returned >= limit else None


class RegistryService:
    def __init__(self, repo: RegistryRepository) -> None:
        self.repo = repo

    @classmethod
    def of(cls, session: object, tenant: Tenant, liveness_seconds: float) -> RegistryService:
        return cls(RegistryRepository(session, tenant, timedelta(seconds=liveness_seconds)))  # type: ignore[arg-type]

    async def workflow(self, identifier: str) -> Workflow:
        row = await self.repo.workflow(identifier)
        if row is None:
            raise not_found(f"workflow {identifier!r}")
        return row

    async def list_workflows(
        self,
        *,
        cursor: str | None,
        limit: int,
        descending: bool,
        archived: bool | None,
        active_only: bool,
        tags: list[str],
        search: str | None,
        deployment_names: list[str],
        deployment_status: str | None,
        available_in_chat_assistant: bool | None,
    ) -> WorkflowList:
        offset = parse_cursor(cursor)
        if deployment_status == "active":
            active_only = True
        rows = await self.repo.list_workflows(
            offset=offset,
            limit=limit,
            descending=descending,
            archived=archived,
            active_only=active_only,
            include_technical=False,
            tags=tags,
            search=search,
            deployment_names=deployment_names,
            available_in_chat_assistant=available_in_chat_assistant,
        )
        if deployment_status == "inactive":
            live = {row.id for row in rows if await self.repo.is_workflow_active(row.id)}
            rows = [row for row in rows if row.id not in live]
        return WorkflowList(
            workflows=[WorkflowBasic.of(row) for row in rows],
            next_cursor=next_cursor(offset, limit, len(rows)),
        )

    async def get_workflow(self, identifier: str) -> WorkflowGet:
        row = await self.workflow(identifier)
        active = await self.repo.is_workflow_active(row.id)
        return WorkflowGet(
            workflow=WorkflowWithStatus(**WorkflowOut.of(row).model_dump(), active=active)
        )

    async def update_workflow(self, identifier: str, body: WorkflowUpdate) -> WorkflowOne:
        row = await self.workflow(identifier)
        for field in body.model_fields_set:
            value = getattr(body, field)
            if value is not None or field == "description":
                setattr(row, field, value)
        row.updated_at = utcnow()
        await self.repo.session.flush()
        return WorkflowOne(workflow=WorkflowOut.of(row))

    async def set_archived(self, identifier: str, archived: bool) -> WorkflowOne:
        row = await self.workflow(identifier)
        row.archived = archived
        row.updated_at = utcnow()
        await self.repo.session.flush()
        return WorkflowOne(workflow=WorkflowOut.of(row))

    async def bulk_archive(self, ids: list[str], archived: bool) -> BulkArchived | BulkUnarchived:
        done: list[WorkflowOut] = []
        errored: list[BulkError] = []
        for identifier in ids:
            row = await self.repo.workflow(identifier)
            if row is None:
                errored.append(BulkError(workflow_id=identifier, message="workflow not found"))
                continue
            row.archived = archived
            row.updated_at = utcnow()
            done.append(WorkflowOut.of(row))
        await self.repo.session.flush()
        if archived:
            return BulkArchived(archived=done, errored=errored)
        return BulkUnarchived(unarchived=done, errored=errored)

    # -- registrations ----------------------------------------------------------------------

    async def list_registrations(
        self,
        *,
        cursor: str | None,
        limit: int,
        workflow_id: str | None,
        deployment_name: str | None,
        active_only: bool,
        with_workflow: bool,
        workflow_search: str | None,
        archived: bool | None,
    ) -> RegistrationList:
        offset = parse_cursor(cursor)
        workflow_ids = None
        if workflow_id is not None:
            workflow = await self.repo.workflow(workflow_id)
            workflow_ids = [workflow.id] if workflow is not None else []
        pairs = await self.repo.registrations(
            workflow_ids=workflow_ids, deployment_name=deployment_name
        )
        ids = list({r.workflow_id for r, _ in pairs})
        workflows = {w.id: w for w in await self.repo.workflows_by_ids(ids)}
        if active_only:
            live = await self.repo.live_deployment_ids([d.id for _, d in pairs])
            pairs = [(r, d) for r, d in pairs if d.id in live]
        needle = (workflow_search or "").lower()
        pairs = [
            (r, d)
            for r, d in pairs
            if not workflows[r.workflow_id].is_technical
            and (archived is None or workflows[r.workflow_id].archived == archived)
            and (
                not needle
                or needle in workflows[r.workflow_id].name.lower()
                or needle in workflows[r.workflow_id].display_name.lower()
            )
        ]
        page = pairs[offset : offset + limit]
        items = [
            RegistrationOut.of(r, d.name, workflows[r.workflow_id] if with_workflow else None)
            for r, d in page
        ]
        return RegistrationList(
            workflow_registrations=items,
            workflow_versions=items,
            next_cursor=next_cursor(offset, limit, len(page)),
        )

    async def get_registration(self, id_: str, with_workflow: bool) -> RegistrationGet:
        found = await self.repo.registration(id_)
        if found is None:
            raise not_found(f"workflow registration {id_!r}")
        registration, deployment = found
        workflow = None
        if with_workflow:
            workflow = (await self.repo.workflows_by_ids([registration.workflow_id]))[0]
        active = bool(await self.repo.live_deployment_ids([deployment.id]))
        out = RegistrationWithStatus(
            **RegistrationOut.of(registration, deployment.name, workflow).model_dump(),
            active=active,
        )
        return RegistrationGet(workflow_registration=out, workflow_version=out)

    # -- deployments ------------------------------------------------------------------------

    async def _workers(self, deployments: list[Deployment]) -> dict[str, list[WorkerOut]]:
        workers: dict[str, list[WorkerOut]] = {d.id: [] for d in deployments}
        for worker in await self.repo.workers_of(list(workers)):
            workers[worker.deployment_id].append(
                WorkerOut.of(worker, self.repo.worker_is_alive(worker))
            )
        return workers

    async def list_deployments(
        self,
        *,
        cursor: str | None,
        limit: int,
        active_only: bool,
        workflow_name: str | None,
        search: str | None,
    ) -> DeploymentList:
        offset = parse_cursor(cursor)
        deployments = await self.repo.deployments()
        if search:
            deployments = [d for d in deployments if search.lower() in d.name.lower()]
        if workflow_name is not None:
            workflow = await self.repo.workflow(workflow_name)
            serving: set[str] = set()
            if workflow is not None:
                pairs = await self.repo.registrations(workflow_ids=[workflow.id])
                serving = {d.id for _, d in pairs}
            deployments = [d for d in deployments if d.id in serving]
        workers = await self._workers(deployments)
        out = [DeploymentOut.of(d, workers[d.id]) for d in deployments]
        if active_only:
            out = [d for d in out if d.is_active]
        page = out[offset : offset + limit]
        return DeploymentList(
            deployments=page,
            next_cursor=next_cursor(offset, limit, len(page)),
            workspace_id=self.repo.tenant.workspace_id,
        )

    async def get_deployment(self, name: str) -> DeploymentDetail:
        deployment = await self.repo.deployment(name)
        if deployment is None:
            raise not_found(f"deployment {name!r}")
        workers = (await self._workers([deployment]))[deployment.id]
        base = DeploymentOut.of(deployment, workers)
        return DeploymentDetail(**base.model_dump(), workers=workers)
