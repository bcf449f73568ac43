"""Projects and evaluations v2 (mistralai 3.x `beta.observability.evaluations` reads, with the
create, update and delete extensions the SDK lacks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Response

from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work
from maestrale.observability.errors import observability_router
from maestrale.observability.evaluations.projects.repository import (
    EvaluationRepository,
    ProjectRepository,
)
from maestrale.observability.evaluations.projects.schemas import (
    EvaluationCreate,
    EvaluationOut,
    EvaluationPage,
    EvaluationsV2,
    ProjectCreate,
    ProjectOut,
    ProjectPage,
    Projects,
    ProjectUpdate,
)
from maestrale.observability.evaluations.projects.service import ProjectService

router = observability_router(prefix="/observability", tags=["observability"])


def project_service(work: Work, tenant: CurrentTenant) -> ProjectService:
    return ProjectService(
        ProjectRepository(work.session, tenant), EvaluationRepository(work.session, tenant)
    )


Service = Annotated[ProjectService, Depends(project_service)]
IntQuery = Annotated[int, Query()]


@router.get("/projects")
async def list_projects(
    service: Service,
    q: Annotated[str | None, Query()] = None,
    page_size: IntQuery = 50,
    page: IntQuery = 1,
) -> Projects:
    """The workspace's projects, newest first, each with its evaluations; `q` keeps those whose
    name or slug contains it (case-insensitive)."""
    rows, count, nxt, prev = await service.list_projects(
        PageParams(page, page_size, first_page=1), q
    )
    return Projects(projects=ProjectPage(count=count, results=rows, next=nxt, previous=prev))


@router.post("/projects", status_code=201)
async def create_project(
    body: ProjectCreate, service: Service, principal: StandardAuth
) -> ProjectOut:
    """Create a project (extension: the SDK has no create). Its slug is `slug`, or made from
    its name; a slug taken in the workspace is a 409."""
    project = await service.create_project(body, principal)
    return (await service.project_outs([project]))[0]


@router.get("/projects/{project_slug}")
async def get_project(project_slug: str, service: Service) -> ProjectOut:
    """One project, by slug, with its evaluations."""
    return (await service.project_outs([await service.project(project_slug)]))[0]


@router.patch("/projects/{project_slug}")
async def update_project(project_slug: str, body: ProjectUpdate, service: Service) -> ProjectOut:
    """Change a project's name, description or favorite flag (extension); its slug is kept."""
    project = await service.update_project(project_slug, body)
    return (await service.project_outs([project]))[0]


@router.delete("/projects/{project_slug}", status_code=204)
async def delete_project(project_slug: str, service: Service) -> Response:
    """Delete a project (extension); its slug stays taken."""
    await service.delete_project(project_slug)
    return Response(status_code=204)


@router.get("/projects/{project_slug}/evaluations_v2")
async def list_evaluations(
    project_slug: str, service: Service, page_size: IntQuery = 50, page: IntQuery = 1
) -> EvaluationsV2:
    """A project's evaluations, newest first."""
    rows, count, nxt, prev = await service.list_evaluations(
        project_slug, PageParams(page, page_size, first_page=1)
    )
    return EvaluationsV2(
        evaluations=EvaluationPage(count=count, results=rows, next=nxt, previous=prev)
    )


@router.post("/projects/{project_slug}/evaluations_v2", status_code=201)
async def create_evaluation(
    project_slug: str, body: EvaluationCreate, service: Service, principal: StandardAuth
) -> EvaluationOut:
    """Create an evaluation in a project (extension): `evaluators` names judges of the
    workspace by id or name; each run scores every input with each of them."""
    evaluation = await service.create_evaluation(project_slug, body, principal)
    return await service.evaluation_out(evaluation)


@router.get("/evaluations_v2/{evaluation_slug}")
async def get_evaluation(evaluation_slug: str, service: Service) -> EvaluationOut:
    """One evaluation, by slug, with its evaluators."""
    return await service.evaluation_out(await service.evaluation(evaluation_slug))
