"""Workflows, registrations and deployments as clients read and edit them."""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest
from maestrale.workflows.errors import CONFLICT, INVALID, NOT_FOUND, WorkflowError, not_found
from maestrale.workflows.registry.repository import RegistryRepository
from maestrale.workflows.registry.schemas import (
    MAX_TAGS,
    BulkArchived,
    BulkError,
    BulkUnarchived,
    DeploymentDetail,
    DeploymentList,
    DeploymentOut,
    DeploymentQuery,
    RegistrationGet,
    RegistrationList,
    RegistrationOut,
    RegistrationWithStatus,
    WorkerList,
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

    async def add_tags(self, identifier: str, tags: list[str]) -> None:
        """Add tags to a workflow's, keeping the existing ones first (a tag it has is not
        added twice)."""
        row = await self.workflow(identifier)
        merged = list(dict.fromkeys([*(row.tags or []), *tags]))
        if len(merged) > MAX_TAGS:
            raise WorkflowError(
                f"workflow {row.name!r} would have {len(merged)} tags: at most {MAX_TAGS}",
                INVALID,
            )
        if merged != row.tags:
            row.tags = merged
            row.updated_at = utcnow()
            await self.repo.session.flush()

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
        workflow_name: str | None = None,
    ) -> RegistrationList:
        offset = parse_cursor(cursor)
        workflow_ids: list[str] | None = None
        for identifier in (workflow_id, workflow_name):
            if identifier is not None:
                workflow = await self.repo.workflow(identifier)
                found = [workflow.id] if workflow is not None else []
                workflow_ids = (
                    found if workflow_ids is None else [i for i in workflow_ids if i in found]
                )
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

    def check_workspace(self, workspace_id: str | None) -> None:
        """A `workspace_id` parameter names the caller's workspace (a key is bound to one):
        another is not found."""
        if workspace_id is not None and workspace_id != self.repo.tenant.workspace_id:
            raise not_found(f"workspace {workspace_id!r}")

    async def _serving(self, workflow_name: str) -> set[str]:
        """The ids of the deployments that have a registration of the workflow."""
        workflow = await self.repo.workflow(workflow_name)
        if workflow is None:
            return set()
        return {d.id for _, d in await self.repo.registrations(workflow_ids=[workflow.id])}

    async def list_deployments(self, query: DeploymentQuery) -> DeploymentList:
        """The deployments, filtered, ordered as the platform does: by `order_by` alone when
        given, else the active ones first, each group by creation (`order`, newest first by
        default). Filters on what no deployment here has (a creator or owner, hardening, a
        managed build's repository or Dockerfile) match none."""
        offset = parse_cursor(query.cursor)
        deployments = await self.repo.deployments()
        if query.search:
            needle = query.search.lower()
            deployments = [
                d for d in deployments if needle in d.name.lower() or d.id.startswith(needle)
            ]
        if query.workflow_name is not None:
            serving = await self._serving(query.workflow_name)
            deployments = [d for d in deployments if d.id in serving]
        if query.matches_nothing():
            deployments = []
        workers = await self._workers(deployments)
        out = [DeploymentOut.of(d, workers[d.id]) for d in deployments]
        if query.active_only:
            out = [d for d in out if d.is_active]
        if query.location_types:
            wanted = set(query.location_types)
            out = [d for d in out if wanted.intersection(d.locations)]
        descending = query.order == "desc"
        if query.order_by is not None:
            field = query.order_by
            out.sort(key=lambda d: (getattr(d, field), d.id), reverse=descending)
        else:
            out.sort(key=lambda d: (d.created_at, d.id), reverse=descending)
            out.sort(key=lambda d: not d.is_active)  # stable: active first, order kept
        page = out[offset : offset + query.limit]
        return DeploymentList(
            deployments=page,
            next_cursor=next_cursor(offset, query.limit, len(page)),
            workspace_id=self.repo.tenant.workspace_id,
        )

    async def deployment(self, name: str) -> Deployment:
        deployment = await self.repo.deployment(name)
        if deployment is None:
            raise not_found(f"deployment {name!r}")
        return deployment

    async def get_deployment(self, name: str, workflow_name: str | None = None) -> DeploymentDetail:
        """A deployment and its workers; with `workflow_name`, active only while it serves
        that workflow (has a registration of it) with a live worker."""
        deployment = await self.deployment(name)
        workers = (await self._workers([deployment]))[deployment.id]
        base = DeploymentOut.of(deployment, workers)
        if workflow_name is not None and deployment.id not in await self._serving(workflow_name):
            base.is_active = False
        return DeploymentDetail(**base.model_dump(), workers=workers)

    async def list_workers(
        self, name: str, status: str | None, cursor: str | None, limit: int
    ) -> WorkerList:
        """A deployment's workers by name, the active or inactive ones only if asked."""
        offset = parse_cursor(cursor)
        deployment = await self.deployment(name)
        workers = (await self._workers([deployment]))[deployment.id]
        if status is not None:
            workers = [w for w in workers if w.is_active == (status == "active")]
        page = workers[offset : offset + limit]
        return WorkerList(workers=page, next_cursor=next_cursor(offset, limit, len(page)))

    async def archive(self, name: str) -> NoReturn:
        """The archive a managed deployment builds from: none here, and said so."""
        deployment = await self.deployment(name)
        raise WorkflowError(
            f"deployment {deployment.name!r} has no archive: it is self-hosted (its workers"
            " registered it), and this server builds no deployment from an uploaded archive",
            NOT_FOUND,
            status_code=404,
        )

    async def unharden(self, identifier: str) -> NoReturn:
        """Unharden a deployment (by id or name): none is hardened here, and said so."""
        deployment = await self.repo.deployment_by_id_or_name(identifier)
        if deployment is None:
            raise not_found(f"deployment {identifier!r}")
        raise WorkflowError(
            f"deployment {deployment.name!r} is not hardened: this server hardens no"
            " deployment (any key of the workspace may register its workers)",
            CONFLICT,
            status_code=409,
        )
