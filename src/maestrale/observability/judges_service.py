"""Judges: CRUD with soft delete (`deleted_at`), names unique among a workspace's live judges,
1-based numbered pages with type, model and name filters."""

from __future__ import annotations

from sqlalchemy import Select, desc

from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.datasets_service import page_links
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.judges_schemas import JudgeDefinition
from maestrale.observability.tables import Judge


class JudgeRepository(WorkspaceRepository[Judge]):
    model = Judge

    def alive(self) -> Select[Judge]:
        return self.select().where(Judge.deleted_at.is_(None))


def definition_of(judge: Judge) -> JudgeDefinition:
    return JudgeDefinition.model_validate(
        {
            "name": judge.name,
            "description": judge.description,
            "model_name": judge.model_name,
            "output": judge.output,
            "instructions": judge.instructions,
            "tools": judge.tools,
        }
    )


class JudgeService:
    def __init__(self, repo: JudgeRepository) -> None:
        self.repo = repo

    async def _check_name(self, name: str, except_id: str | None = None) -> None:
        stmt = self.repo.alive().where(Judge.name == name)
        if except_id is not None:
            stmt = stmt.where(Judge.id != except_id)
        if await self.repo.count(stmt):
            raise ObservabilityError(
                f"a judge named {name!r} already exists",
                "JUDGE_NAME_ALREADY_EXISTS",
                status_code=409,
            )

    def _apply(self, judge: Judge, body: JudgeDefinition) -> None:
        judge.name = body.name
        judge.description = body.description
        judge.model_name = body.model_name
        judge.output = body.output.model_dump()
        judge.output_type = body.output.type
        judge.instructions = body.instructions
        judge.tools = list(body.tools)

    async def create(self, body: JudgeDefinition, owner_id: str) -> Judge:
        await self._check_name(body.name)
        judge = Judge(id=new_id(), owner_id=owner_id)
        self._apply(judge, body)
        return await self.repo.add(judge)

    async def get(self, judge_id: str) -> Judge:
        found = await self.repo.list(self.repo.alive().where(Judge.id == judge_id))
        if not found:
            raise ObservabilityError(
                f"judge {judge_id!r} not found", "JUDGE_NOT_FOUND", status_code=404
            )
        return found[0]

    async def update(self, judge_id: str, body: JudgeDefinition) -> None:
        judge = await self.get(judge_id)
        await self._check_name(body.name, except_id=judge.id)
        self._apply(judge, body)
        judge.updated_at = utcnow()
        await self.repo.session.flush()

    async def delete(self, judge_id: str) -> None:
        judge = await self.get(judge_id)
        judge.deleted_at = judge.updated_at = utcnow()
        await self.repo.session.flush()

    async def list_judges(
        self,
        page: PageParams,
        q: str | None,
        types: list[str] | None,
        models: list[str] | None,
    ) -> tuple[list[Judge], int, str | None, str | None]:
        stmt = self.repo.alive()
        if q:
            stmt = stmt.where(Judge.name.icontains(q, autoescape=True))
        if types:
            stmt = stmt.where(Judge.output_type.in_(types))
        if models:
            stmt = stmt.where(Judge.model_name.in_(models))
        count = await self.repo.count(stmt)
        stmt = stmt.order_by(desc(Judge.created_at), desc(Judge.id))
        rows = await self.repo.list(stmt.offset(page.offset).limit(page.limit))
        return rows, count, *page_links("/v1/observability/judges", page, count)
