"""All SQL of judges, scoped to the caller's workspace."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, desc

from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.judges.tables import Judge


class JudgeRepository(WorkspaceRepository[Judge]):
    model = Judge

    def alive(self) -> Select[Judge]:
        return self.select().where(Judge.deleted_at.is_(None))

    def latest(self) -> Select[Judge]:
        """Live judges at their latest revision (earlier revisions are not listed)."""
        return self.alive().where(Judge.up_revision.is_(None))

    async def alive_by_id(self, judge_id: str) -> Judge | None:
        """A live judge, at any revision."""
        found = await self.list(self.alive().where(Judge.id == judge_id))
        return found[0] if found else None

    async def name_taken(self, name: str, except_id: str | None = None) -> bool:
        """Whether a live judge (latest revision) other than `except_id` has this name."""
        stmt = self.latest().where(Judge.name == name)
        if except_id is not None:
            stmt = stmt.where(Judge.id != except_id)
        return await self.count(stmt) > 0

    async def revisions_of(self, base_revision: str) -> list[Judge]:
        """The live revisions that share this first revision."""
        return await self.list(self.alive().where(Judge.base_revision == base_revision))

    async def page(
        self,
        q: str | None,
        types: Sequence[str] | None,
        models: Sequence[str] | None,
        offset: int,
        limit: int,
    ) -> tuple[list[Judge], int]:
        """A page of the live judges (latest revisions), newest first, and their total."""
        stmt = self.latest()
        if q:
            stmt = stmt.where(Judge.name.icontains(q, autoescape=True))
        if types:
            stmt = stmt.where(Judge.output_type.in_(list(types)))
        if models:
            stmt = stmt.where(Judge.model_name.in_(list(models)))
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(Judge.created_at), desc(Judge.id))
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def flush(self) -> None:
        await self.session.flush()
