"""Judges: CRUD with soft delete (`deleted_at`), names unique among a workspace's live judges,
1-based numbered pages with type, model and name filters.

Revisions: updating a judge keeps its id (which always holds the latest definition) and moves
the definition it replaces to a row of its own, an earlier revision: the judge's
`down_revision` names it, its `up_revision` names the revision that replaced it, and every
revision's `base_revision` names the first one. Earlier revisions are read by id but are not
listed, cannot be updated (JUDGE_ALREADY_HAS_NEW_VERSION) nor deleted on their own; deleting a
judge deletes its revisions. An update that changes nothing is refused (JUDGE_DID_NOT_CHANGE).

Live judging reads what it judges (a judge, an event, a dataset record), then asks the model
through the gateway, which releases the request's transaction first: none is open during the
call."""

from __future__ import annotations

from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams
from maestrale.core.uow import UnitOfWork
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.observability.datasets.repository import DatasetRepository, RecordRepository
from maestrale.observability.datasets.service import DatasetService
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.events.repository import ChatCompletionEventRepository
from maestrale.observability.events.service import ChatCompletionEventService
from maestrale.observability.judges import judging
from maestrale.observability.judges.repository import JudgeRepository
from maestrale.observability.judges.schemas import JudgeDefinition, JudgeOutput
from maestrale.observability.judges.tables import Judge
from maestrale.observability.pages import page_links


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
        if await self.repo.name_taken(name, except_id):
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
        judge = await self.repo.alive_by_id(judge_id)
        if judge is None:
            raise ObservabilityError(
                f"judge {judge_id!r} not found", "JUDGE_NOT_FOUND", status_code=404
            )
        return judge

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
        await self.repo.flush()

    async def delete(self, judge_id: str) -> None:
        judge = await self.get(judge_id)
        self._latest_only(judge)
        now = utcnow()
        judge.deleted_at = judge.updated_at = now
        if judge.base_revision is not None:
            for earlier in await self.repo.revisions_of(judge.base_revision):
                earlier.deleted_at = earlier.updated_at = now
        await self.repo.flush()

    async def list_judges(
        self,
        page: PageParams,
        q: str | None,
        types: list[str] | None,
        models: list[str] | None,
    ) -> tuple[list[Judge], int, str | None, str | None]:
        rows, count = await self.repo.page(q, types, models, page.offset, page.limit)
        return rows, count, *page_links("/v1/observability/judges", page, count)


class LiveJudging:
    """Judge a conversation now, through the gateway, in the request's unit of work."""

    def __init__(
        self, work: UnitOfWork, tenant: Tenant, calls: PlatformCalls, caller: Caller
    ) -> None:
        self.work = work
        self.tenant = tenant
        self.calls = calls
        self.caller = caller

    async def _judge(
        self,
        definition: JudgeDefinition,
        messages: list[dict[str, Any]],
        properties: dict[str, Any] | None = None,
    ) -> JudgeOutput:
        return await judging.run_judge(self.calls, self.caller, definition, messages, properties)

    async def messages(
        self, judge_id: str, messages: list[dict[str, Any]], properties: dict[str, Any] | None
    ) -> JudgeOutput:
        """The verdict of a saved judge on these messages."""
        judges = JudgeService(JudgeRepository(self.work.session, self.tenant))
        definition = definition_of(await judges.get(judge_id))
        return await self._judge(definition, messages, properties)

    async def event(self, event_id: str, definition: JudgeDefinition) -> JudgeOutput:
        """The verdict of a judge definition on an event's conversation."""
        events = ChatCompletionEventService(
            ChatCompletionEventRepository(self.work.session, self.tenant)
        )
        event = await events.event(event_id)
        return await self._judge(definition, event.conversation())

    async def record(self, record_id: str, definition: JudgeDefinition) -> JudgeOutput:
        """The verdict of a judge definition on a dataset record (its properties included)."""
        session = self.work.session
        datasets = DatasetService(
            DatasetRepository(session, self.tenant), RecordRepository(session, self.tenant)
        )
        record = await datasets.record(record_id)
        messages = record.payload.get("messages") or []
        return await self._judge(definition, messages, record.properties)
