"""Judges: CRUD with soft delete (`deleted_at`), names unique among a workspace's live judges,
1-based numbered pages with type, model and name filters.

Revisions: updating a judge keeps its id (which always holds the latest definition) and moves
the definition it replaces to a row of its own, an earlier revision: the judge's
`down_revision` names it, its `up_revision` names the revision that replaced it, and every
revision's `base_revision` names the first one. Earlier revisions are read by id but are not
listed, cannot be updated (JUDGE_ALREADY_HAS_NEW_VERSION) nor deleted on their own; deleting a
judge deletes its revisions. An update that changes nothing is refused (JUDGE_DID_NOT_CHANGE)."""

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

    def latest(self) -> Select[Judge]:
        """Live judges at their latest revision (earlier revisions are not listed)."""
        return self.alive().where(Judge.up_revision.is_(None))


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
        stmt = self.repo.latest().where(Judge.name == name)
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

    def _latest_only(self, judge: Judge) -> None:
        if judge.up_revision is not None:
            raise ObservabilityError(
                f"judge {judge.id!r} is an earlier revision of judge {judge.up_revision!r}: "
                "only a judge's latest revision can be changed",
                "JUDGE_ALREADY_HAS_NEW_VERSION",
                status_code=409,
            )

    async def update(self, judge_id: str, body: JudgeDefinition) -> None:
        judge = await self.get(judge_id)
        self._latest_only(judge)
        if definition_of(judge).model_dump() == body.model_dump():
            raise ObservabilityError(
                f"judge {judge_id!r} already has this definition", "JUDGE_DID_NOT_CHANGE"
            )
        await self._check_name(body.name, except_id=judge.id)
        now = utcnow()
        earlier = Judge(
            id=new_id(),
            owner_id=judge.owner_id,
            created_at=judge.updated_at,
            updated_at=now,
            up_revision=judge.id,
            down_revision=judge.down_revision,
        )
        earlier.base_revision = judge.base_revision or earlier.id
        self._apply(earlier, definition_of(judge))
        if judge.down_revision is not None:
            before = await self.repo.get(judge.down_revision)
            if before is not None:
                before.up_revision = earlier.id
        await self.repo.add(earlier)
        self._apply(judge, body)
        judge.down_revision, judge.base_revision = earlier.id, earlier.base_revision
        judge.updated_at = now
        await self.repo.session.flush()

    async def delete(self, judge_id: str) -> None:
        judge = await self.get(judge_id)
        self._latest_only(judge)
        now = utcnow()
        judge.deleted_at = judge.updated_at = now
        if judge.base_revision is not None:
            stmt = self.repo.alive().where(Judge.base_revision == judge.base_revision)
            for earlier in await self.repo.list(stmt):
                earlier.deleted_at = earlier.updated_at = now
        await self.repo.session.flush()

    async def list_judges(
        self,
        page: PageParams,
        q: str | None,
        types: list[str] | None,
        models: list[str] | None,
    ) -> tuple[list[Judge], int, str | None, str | None]:
        stmt = self.repo.latest()
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
