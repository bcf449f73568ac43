"""All SQL of projects and evaluations v2, scoped to the caller's workspace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from sqlalchemy import Select, desc, or_, select

from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.evaluations.tables import EvalEvaluation, EvalProject
from maestrale.observability.judges.tables import Judge

S = TypeVar("S", EvalProject, EvalEvaluation)


class _SluggedRepository(WorkspaceRepository[S]):
    """Rows whose slug is unique in the workspace (deleted ones included) and that deleting
    only marks (`deleted_at`)."""

    def alive(self) -> Select[S]:
        return self.select().where(self.model.deleted_at.is_(None))

    async def by_slug(self, slug: str) -> S | None:
        found = await self.list(self.alive().where(self.model.slug == slug))
        return found[0] if found else None

    async def by_ids(self, ids: Sequence[str]) -> list[S]:
        return await self.list(self.select().where(self.model.id.in_(list(ids))))

    async def flush(self) -> None:
        await self.session.flush()


class ProjectRepository(_SluggedRepository[EvalProject]):
    model = EvalProject

    async def page(self, q: str | None, offset: int, limit: int) -> tuple[list[EvalProject], int]:
        """A page of the live projects, newest first, and their total."""
        stmt = self.alive()
        if q:
            stmt = stmt.where(
                or_(
                    EvalProject.name.icontains(q, autoescape=True),
                    EvalProject.slug.icontains(q, autoescape=True),
                )
            )
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(EvalProject.created_at), desc(EvalProject.id))
        return await self.list(stmt.offset(offset).limit(limit)), count


class EvaluationRepository(_SluggedRepository[EvalEvaluation]):
    model = EvalEvaluation

    async def of_projects(self, project_ids: Sequence[str]) -> list[EvalEvaluation]:
        """The live evaluations of these projects, oldest first."""
        stmt = self.alive().where(EvalEvaluation.project_id.in_(list(project_ids)))
        return await self.list(stmt.order_by(EvalEvaluation.created_at, EvalEvaluation.id))

    async def page(
        self, project_id: str, offset: int, limit: int
    ) -> tuple[list[EvalEvaluation], int]:
        stmt = self.alive().where(EvalEvaluation.project_id == project_id)
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(EvalEvaluation.created_at), desc(EvalEvaluation.id))
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def judges(self, keys: Sequence[str]) -> list[Judge]:
        """The live judges (latest revisions) whose id or name is one of `keys`."""
        stmt = select(Judge).where(
            Judge.workspace_id == self.tenant.workspace_id,
            Judge.deleted_at.is_(None),
            Judge.up_revision.is_(None),
            or_(Judge.id.in_(list(keys)), Judge.name.in_(list(keys))),
        )
        return list((await self.session.execute(stmt)).scalars())

    async def judges_by_id(self, ids: Sequence[str]) -> list[Judge]:
        """These judges, deleted or not (an evaluation shows what its evaluators are now)."""
        stmt = select(Judge).where(
            Judge.workspace_id == self.tenant.workspace_id, Judge.id.in_(list(ids))
        )
        return list((await self.session.execute(stmt)).scalars())
