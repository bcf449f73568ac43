"""Workflows, registrations and deployments: list, read, update, archive."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Response

from maestrale.workflows.dependencies import Registry
from maestrale.workflows.registry.schemas import (
    BulkArchive,
    BulkArchived,
    BulkUnarchived,
    DeploymentArchive,
    DeploymentDetail,
    DeploymentList,
    DeploymentQuery,
    RegistrationGet,
    RegistrationList,
    WorkerList,
    WorkflowGet,
    WorkflowList,
    WorkflowOne,
    WorkflowTagsAdd,
    WorkflowUpdate,
)
from maestrale.workflows.registry.service import MAX_LIMIT
from maestrale.workflows.routing import workflows_router

router = workflows_router(prefix="/workflows", tags=["workflows"])

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
Cursor = Annotated[str | None, Query(max_length=32)]
Name = Annotated[str | None, Query(max_length=128)]
# Accepted and not used: a key is bound to one workspace, which scopes every request.
WorkspaceId = Annotated[str | None, Query(max_length=64)]
LocationType = Literal["local", "k8s", "managed"]


@router.get("", response_model=WorkflowList)
async def get_workflows(
    service: Registry,
    limit: Limit = 50,
    cursor: Cursor = None,
    order: Literal["asc", "desc"] = "asc",
    sort_by: Literal["display_name"] | None = None,
    active_only: bool = False,
    include_shared: bool = True,
    archived: bool | None = None,
    tags: Annotated[list[str] | None, Query(max_length=50)] = None,
    search: Annotated[str | None, Query(max_length=256)] = None,
    deployment_name: Annotated[list[str] | None, Query(max_length=50)] = None,
    deployment_status: Literal["active", "inactive"] | None = None,
    available_in_chat_assistant: bool | None = None,
    status: Annotated[list[str] | None, Query(max_length=10)] = None,
) -> WorkflowList:
    """The workspace's workflows (technical ones hidden), by display name; filtered by archive
    state, live workers (`active_only`), tags (all of them), a search in names, deployments."""
    return await service.list_workflows(
        cursor=cursor,
        limit=limit,
        descending=order == "desc",
        archived=archived,
        active_only=active_only,
        tags=tags or [],
        search=search,
        deployment_names=deployment_name or [],
        deployment_status=deployment_status,
        available_in_chat_assistant=available_in_chat_assistant,
    )


@router.get("/registrations", response_model=RegistrationList)
async def get_workflow_registrations(
    service: Registry,
    limit: Limit = 50,
    cursor: Cursor = None,
    workflow_id: Annotated[str | None, Query(max_length=128)] = None,
    workflow_name: Name = None,
    task_queue: Annotated[str | None, Query(max_length=200)] = None,
    active_only: bool = False,
    include_shared: bool = True,
    workflow_search: Annotated[str | None, Query(max_length=256)] = None,
    archived: bool | None = None,
    with_workflow: bool = False,
    available_in_chat_assistant: bool | None = None,
) -> RegistrationList:
    """Registrations (a workflow's definition as a deployment's workers sent it), newest first;
    `workflow_name` keeps one workflow's by its exact name."""
    return await service.list_registrations(
        cursor=cursor,
        limit=limit,
        workflow_id=workflow_id,
        workflow_name=workflow_name,
        deployment_name=task_queue,
        active_only=active_only,
        with_workflow=with_workflow,
        workflow_search=workflow_search,
        archived=archived,
    )


@router.get("/registrations/{workflow_registration_id}", response_model=RegistrationGet)
async def get_workflow_registration(
    workflow_registration_id: str,
    service: Registry,
    with_workflow: bool = False,
    include_shared: bool = True,
) -> RegistrationGet:
    """A registration, and whether its deployment has live workers."""
    return await service.get_registration(workflow_registration_id, with_workflow)


@router.put("/archive", response_model=BulkArchived)
async def bulk_archive_workflows(body: BulkArchive, service: Registry) -> BulkArchived:
    """Archive several workflows (ids or names); the unknown ones are listed in `errored`."""
    out = await service.bulk_archive(body.workflow_ids, True)
    assert isinstance(out, BulkArchived)
    return out


@router.put("/unarchive", response_model=BulkUnarchived)
async def bulk_unarchive_workflows(body: BulkArchive, service: Registry) -> BulkUnarchived:
    """Unarchive several workflows (ids or names); the unknown ones are listed in `errored`."""
    out = await service.bulk_archive(body.workflow_ids, False)
    assert isinstance(out, BulkUnarchived)
    return out


@router.get("/deployments", response_model=DeploymentList)
async def list_deployments(
    service: Registry,
    limit: Limit = 50,
    cursor: Cursor = None,
    active_only: bool = False,
    workflow_name: Name = None,
    search: Annotated[str | None, Query(max_length=256)] = None,
    is_hardened: bool | None = None,
    created_by: Name = None,
    owner: Name = None,
    location_types: Annotated[list[LocationType] | None, Query(max_length=10)] = None,
    order_by: Literal["updated_at", "created_at"] | None = None,
    order: Literal["asc", "desc"] = "desc",
    repository_url: Annotated[str | None, Query(max_length=2048)] = None,
    dockerfile_path: Annotated[str | None, Query(max_length=1024)] = None,
    workspace_id: WorkspaceId = None,
) -> DeploymentList:
    """The workspace's deployments (named groups of workers), with their worker counts: the
    active ones first, newest first, unless `order_by` names the only order. Deployments here are
    self-hosted: filters on hardening, creator, owner or a managed build match none."""
    service.check_workspace(workspace_id)
    query = DeploymentQuery(
        limit=limit,
        cursor=cursor,
        active_only=active_only,
        workflow_name=workflow_name,
        search=search,
        is_hardened=is_hardened,
        created_by=created_by,
        owner=owner,
        location_types=location_types or [],
        order_by=order_by,
        order=order,
        repository_url=repository_url,
        dockerfile_path=dockerfile_path,
    )
    return await service.list_deployments(query)


@router.get("/deployments/{name}", response_model=DeploymentDetail)
async def get_deployment(
    name: str, service: Registry, workflow_name: Name = None
) -> DeploymentDetail:
    """A deployment and its workers, each active while it beats; with `workflow_name`, the
    deployment is active only while it also serves that workflow."""
    return await service.get_deployment(name, workflow_name)


@router.get("/deployments/{name}/workers", response_model=WorkerList)
async def list_deployment_workers(
    name: str,
    service: Registry,
    worker_status: Literal["active", "inactive"] | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> WorkerList:
    """A deployment's workers by name; `worker_status` keeps the active (beating) or inactive
    ones."""
    return await service.list_workers(name, worker_status, cursor, limit)


@router.get(
    "/deployments/{name}/archive",
    response_model=DeploymentArchive,
    responses={404: {"description": "Unknown deployment, or one that builds from no archive"}},
)
async def get_deployment_archive(name: str, service: Registry) -> DeploymentArchive:
    """The archive a managed deployment builds from. Deployments here are self-hosted (their
    workers register them) and build from no archive: a known one answers 404 saying so."""
    await service.archive(name)


@router.post(
    "/deployments/{deployment_id}/unharden",
    status_code=204,
    response_class=Response,
    responses={409: {"description": "The deployment is not hardened"}},
)
async def unharden_deployment(
    deployment_id: str, service: Registry, workspace_id: WorkspaceId = None
) -> Response:
    """Let any principal of the workspace register workers of a hardened deployment (by id or
    name). No deployment is hardened here: a known one answers 409 saying so."""
    service.check_workspace(workspace_id)
    await service.unharden(deployment_id)


@router.get("/{workflow_identifier}", response_model=WorkflowGet)
async def get_workflow(workflow_identifier: str, service: Registry) -> WorkflowGet:
    """A workflow (by id or name), active while a live worker serves it."""
    return await service.get_workflow(workflow_identifier)


@router.put("/{workflow_identifier}", response_model=WorkflowOne)
async def update_workflow(
    workflow_identifier: str, body: WorkflowUpdate, service: Registry
) -> WorkflowOne:
    """Edit a workflow's display name, description, tags and chat-assistant availability."""
    return await service.update_workflow(workflow_identifier, body)


@router.post("/{workflow_identifier}/tags", status_code=204, response_class=Response)
async def add_workflow_tags(
    workflow_identifier: str, body: WorkflowTagsAdd, service: Registry
) -> Response:
    """Add tags to a workflow (by id or name); its existing tags are kept. The list filters by
    tags (`GET /v1/workflows?tags=...`)."""
    await service.add_tags(workflow_identifier, body.tags)
    return Response(status_code=204)


@router.put("/{workflow_identifier}/archive", response_model=WorkflowOne)
async def archive_workflow(workflow_identifier: str, service: Registry) -> WorkflowOne:
    """Archive a workflow: it is listed as archived and cannot be executed."""
    return await service.set_archived(workflow_identifier, True)


@router.put("/{workflow_identifier}/unarchive", response_model=WorkflowOne)
async def unarchive_workflow(workflow_identifier: str, service: Registry) -> WorkflowOne:
    """Unarchive a workflow."""
    return await service.set_archived(workflow_identifier, False)
