"""Projects and their evaluations v2: create (slug from the name unless given; a taken slug is a
409), get by slug, list, update, soft delete. An evaluation's evaluators are judges of the
workspace, named by id or by name."""

from __future__ import annotations

from maestrale.core.auth.principal import Principal
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams
from maestrale.observability.datasets.slugs import slug_of
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.evaluations.evaluators import evaluator_out, snapshot
from maestrale.observability.evaluations.projects.repository import (
    EvaluationRepository,
    ProjectRepository,
)
from maestrale.observability.evaluations.projects.schemas import (
    EvaluationCreate,
    EvaluationOut,
    EvaluationSummary,
    ProjectCreate,
    ProjectOut,
    ProjectUpdate,
)
from maestrale.observability.evaluations.tables import EvalEvaluation, EvalProject
from maestrale.observability.pages import page_links

BASE = "/v1/observability"


def creator_of(principal: Principal) -> str:
    return principal.user_id or principal.key_id


class ProjectService:
    def __init__(self, projects: ProjectRepository, evaluations: EvaluationRepository) -> None:
        self.projects = projects
        self.evaluations = evaluations

    # -- projects ---------------------------------------------------------------------------
    async def create_project(self, body: ProjectCreate, principal: Principal) -> EvalProject:
        project = EvalProject(
            id=new_id(),
            creator_id=creator_of(principal),
            name=body.name,
            slug=body.slug or slug_of(body.name),
            description=body.description,
            is_favorite=body.is_favorite,
        )
        if not await self.projects.add_unique(project):
            raise ObservabilityError(
                f"project slug {project.slug!r} is taken", "PROJECT_ALREADY_EXISTS", status_code=409
            )
        return project

    async def project(self, slug: str) -> EvalProject:
        project = await self.projects.by_slug(slug)
        if project is None:
            raise ObservabilityError(
                f"project {slug!r} not found", "PROJECT_NOT_FOUND", status_code=404
            )
        return project

    async def update_project(self, slug: str, body: ProjectUpdate) -> EvalProject:
        project = await self.project(slug)
        for name in body.model_fields_set:
            value = getattr(body, name)
            if value is not None or name == "description":
                setattr(project, name, value)
        project.updated_at = utcnow()
        await self.projects.flush()
        return project

    async def delete_project(self, slug: str) -> None:
        project = await self.project(slug)
        project.deleted_at = project.updated_at = utcnow()
        await self.projects.flush()

    async def list_projects(
        self, page: PageParams, q: str | None
    ) -> tuple[list[ProjectOut], int, str | None, str | None]:
        rows, count = await self.projects.page(q, page.offset, page.limit)
        return await self.project_outs(rows), count, *page_links(f"{BASE}/projects", page, count)

    async def project_outs(self, rows: list[EvalProject]) -> list[ProjectOut]:
        evaluations = await self.evaluations.of_projects([p.id for p in rows])
        return [
            ProjectOut(
                id=p.id,
                created_at=p.created_at,
                updated_at=p.updated_at,
                deleted_at=p.deleted_at,
                workspace_id=p.workspace_id,
                creator_id=p.creator_id,
                name=p.name,
                slug=p.slug,
                description=p.description,
                is_favorite=p.is_favorite,
                evaluations=[
                    EvaluationSummary(id=e.id, name=e.name, slug=e.slug)
                    for e in evaluations
                    if e.project_id == p.id
                ],
            )
            for p in rows
        ]

    # -- evaluations ------------------------------------------------------------------------
    async def create_evaluation(
        self, project_slug: str, body: EvaluationCreate, principal: Principal
    ) -> EvalEvaluation:
        project = await self.project(project_slug)
        keys = list(dict.fromkeys(body.evaluators))
        judges = await self.evaluations.judges(keys)
        found = {j.id: j for j in judges} | {j.name: j for j in judges}
        missing = [k for k in keys if k not in found]
        if missing:
            raise ObservabilityError(
                f"no judge has the id or name {missing}", "JUDGE_NOT_FOUND", status_code=404
            )
        judge_ids = list(dict.fromkeys(found[k].id for k in keys))
        evaluation = EvalEvaluation(
            id=new_id(),
            project_id=project.id,
            creator_id=creator_of(principal),
            name=body.name,
            slug=body.slug or slug_of(body.name),
            description=body.description,
            tags=list(dict.fromkeys(body.tags)),
            meta=body.metadata,
            judge_ids=judge_ids,
        )
        if not await self.evaluations.add_unique(evaluation):
            raise ObservabilityError(
                f"evaluation slug {evaluation.slug!r} is taken",
                "EVALUATION_ALREADY_EXISTS",
                status_code=409,
            )
        return evaluation

    async def evaluation(self, slug: str) -> EvalEvaluation:
        evaluation = await self.evaluations.by_slug(slug)
        if evaluation is None:
            raise ObservabilityError(
                f"evaluation {slug!r} not found", "EVALUATION_NOT_FOUND", status_code=404
            )
        return evaluation

    async def list_evaluations(
        self, project_slug: str, page: PageParams
    ) -> tuple[list[EvaluationOut], int, str | None, str | None]:
        project = await self.project(project_slug)
        rows, count = await self.evaluations.page(project.id, page.offset, page.limit)
        url = f"{BASE}/projects/{project.slug}/evaluations_v2"
        return [await self.evaluation_out(e) for e in rows], count, *page_links(url, page, count)

    async def evaluation_out(self, e: EvalEvaluation) -> EvaluationOut:
        judges = {j.id: j for j in await self.evaluations.judges_by_id(e.judge_ids)}
        return EvaluationOut(
            id=e.id,
            created_at=e.created_at,
            updated_at=e.updated_at,
            deleted_at=e.deleted_at,
            workspace_id=e.workspace_id,
            creator_id=e.creator_id,
            project_id=e.project_id,
            name=e.name,
            slug=e.slug,
            description=e.description,
            tags=e.tags,
            metadata=e.meta,
            evaluators=[evaluator_out(snapshot(judges[i])) for i in e.judge_ids if i in judges],
        )
