"""Workflows, registrations and deployments: list, read, update, archive."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

from maestrale.workflows.dependencies import Registry
from maestrale.workflows.registry.schemas import (
    BulkArchive,
    BulkArchived,
    BulkUnarchived,
    DeploymentDetail,
    DeploymentList,
    RegistrationGet,
    RegistrationList,
    WorkflowGet,
    WorkflowList,
    WorkflowOne,
    WorkflowUpdate,
)
from maestrale.workflows.registry.service import MAX_LIMIT
from maestrale.workflows.routing import workflows_router

router = workflows_router(prefix="/workflows", tags=["workflows"])

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
Cursor = Annotated[str | None, Query(max_length=32)]


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
    task_queue: Annotated[str | None, Query(max_length=200)] = None,
    active_only: bool = False,
    include_shared: bool = True,
    workflow_search: Annotated[str | None, Query(max_length=256)] = None,
    archived: bool | None = None,
    with_workflow: bool = False,
    available_in_chat_assistant: bool | None = None,
) -> RegistrationList:
    """Registrations (a workflow's definition as a deployment's workers sent it), newest first."""
    return await service.list_registrations(
        cursor=cursor,
        limit=limit,
        workflow_id=workflow_id,
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
    workflow_name: Annotated[str | None, Query(max_length=128)] = None,
    search: Annotated[str | None, Query(max_length=256)] = None,
) -> DeploymentList:
    """The workspace's deployments (named groups of workers), with their worker counts."""
    return await service.list_deployments(
        cursor=cursor,
        limit=limit,
        active_only=active_only,
        workflow_name=workflow_name,
        search=search,
    )


@router.get("/deployments/{name}", response_model=DeploymentDetail)
async def get_deployment(name: str, service: Registry) -> DeploymentDetail:
    """A deployment and its workers, each active while it beats."""
    return await service.get_deployment(name)


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


@router.put("/{workflow_identifier}/archive", response_model=WorkflowOne)
async def archive_workflow(workflow_identifier: str, service: Registry) -> WorkflowOne:
    """Archive a workflow: it is listed as archived and cannot be executed."""
    return await service.set_archived(workflow_identifier, True)


@router.put("/{workflow_identifier}/unarchive", response_model=WorkflowOne)
async def unarchive_workflow(workflow_identifier: str, service: Registry) -> WorkflowOne:
    """Unarchive a workflow."""
    return await service.set_archived(workflow_identifier, False)
