"""All SQL of optimizations and their trials, scoped to the caller's workspace."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, desc, select

from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.evaluations.tables import (
    EvalEvaluation,
    EvalOptimization,
    EvalProject,
    EvalTrial,
)


class OptimizationRepository(WorkspaceRepository[EvalOptimization]):
    model = EvalOptimization

    def alive(self) -> Select[EvalOptimization]:
        return self.select().where(EvalOptimization.deleted_at.is_(None))

    async def alive_by_id(self, optimization_id: str) -> EvalOptimization | None:
        found = await self.list(self.alive().where(EvalOptimization.id == optimization_id))
        return found[0] if found else None

    async def page(
        self,
        project: str | None,
        evaluation: str | None,
        algorithm: str | None,
        tags: Sequence[str],
        offset: int,
        limit: int,
    ) -> tuple[list[EvalOptimization], int]:
        """A page of the live optimizations, newest first, and their total; `project` and
        `evaluation` are ids or slugs, every tag must be present."""
        ws = self.tenant.workspace_id
        stmt = self.alive()
        if project:
            projects = select(EvalProject.id).where(
                EvalProject.workspace_id == ws,
                (EvalProject.id == project) | (EvalProject.slug == project),
            )
            stmt = stmt.where(EvalOptimization.project_id.in_(projects))
        if evaluation:
            evaluations = select(EvalEvaluation.id).where(
                EvalEvaluation.workspace_id == ws,
                (EvalEvaluation.id == evaluation) | (EvalEvaluation.slug == evaluation),
            )
            stmt = stmt.where(EvalOptimization.evaluation_id.in_(evaluations))
        if algorithm:
            stmt = stmt.where(EvalOptimization.algorithm == algorithm)
        stmt = stmt.order_by(desc(EvalOptimization.created_at), desc(EvalOptimization.id))
        if not tags:
            count = await self.count(stmt)
            return await self.list(stmt.offset(offset).limit(limit)), count
        # Tags are a short JSON list per optimization, and a workspace has few optimizations:
        # the tag filter runs on the rows the other filters kept.
        rows = [r for r in await self.list(stmt) if all(t in r.tags for t in tags)]
        return rows[offset : offset + limit], len(rows)

    async def flush(self) -> None:
        await self.session.flush()


class TrialRepository(WorkspaceRepository[EvalTrial]):
    model = EvalTrial

    def of(self, optimization_id: str) -> Select[EvalTrial]:
        return self.select().where(
            EvalTrial.optimization_id == optimization_id, EvalTrial.deleted_at.is_(None)
        )

    async def page(
        self, optimization_id: str, offset: int, limit: int
    ) -> tuple[list[EvalTrial], int]:
        """A page of an optimization's trials, oldest first, and their total."""
        stmt = self.of(optimization_id)
        count = await self.count(stmt)
        stmt = stmt.order_by(EvalTrial.created_at, EvalTrial.id)
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def all_of(self, optimization_id: str) -> list[EvalTrial]:
        return await self.list(self.of(optimization_id).order_by(EvalTrial.created_at))

    async def flush(self) -> None:
        await self.session.flush()
