"""Judges and live judging of raw messages, of an event and of a dataset record."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Response

from maestrale.completions.dependencies import CallerDep, GatewayDep
from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.pagination import PageParams
from maestrale.core.routing import DbSession
from maestrale.observability.datasets_service import (
    DatasetRepository,
    DatasetService,
    RecordRepository,
)
from maestrale.observability.errors import observability_router
from maestrale.observability.events_service import EventService
from maestrale.observability.judges_schemas import (
    JudgeConversationRequest,
    JudgeDefinition,
    JudgeList,
    JudgeOut,
    JudgeOutput,
    JudgePage,
    JudgeWithDefinition,
)
from maestrale.observability.judges_service import JudgeRepository, JudgeService, definition_of
from maestrale.observability.judging import run_judge
from maestrale.observability.repository import EventRepository

router = observability_router(prefix="/observability", tags=["observability"])


def _judges(session: DbSession, tenant: CurrentTenant) -> JudgeService:
    return JudgeService(JudgeRepository(session, tenant))


@router.get("/judges")
async def list_judges(
    session: DbSession,
    tenant: CurrentTenant,
    type_filter: Annotated[list[Literal["REGRESSION", "CLASSIFICATION"]] | None, Query()] = None,
    model_filter: Annotated[list[str] | None, Query()] = None,
    page_size: Annotated[int, Query()] = 50,
    page: Annotated[int, Query()] = 1,
    q: Annotated[str | None, Query()] = None,
) -> JudgeList:
    rows, count, nxt, prev = await _judges(session, tenant).list_judges(
        PageParams(page, page_size, first_page=1), q, list(type_filter or []), model_filter
    )
    results = [JudgeOut.model_validate(r) for r in rows]
    return JudgeList(judges=JudgePage(count=count, results=results, next=nxt, previous=prev))


@router.post("/judges", status_code=201)
async def create_judge(
    body: JudgeDefinition, session: DbSession, tenant: CurrentTenant, principal: StandardAuth
) -> JudgeOut:
    owner = principal.user_id or principal.key_id
    return JudgeOut.model_validate(await _judges(session, tenant).create(body, owner))


@router.get("/judges/{judge_id}")
async def get_judge(judge_id: str, session: DbSession, tenant: CurrentTenant) -> JudgeOut:
    return JudgeOut.model_validate(await _judges(session, tenant).get(judge_id))


@router.put("/judges/{judge_id}", status_code=204)
async def update_judge(
    judge_id: str, body: JudgeDefinition, session: DbSession, tenant: CurrentTenant
) -> Response:
    await _judges(session, tenant).update(judge_id, body)
    return Response(status_code=204)


@router.delete("/judges/{judge_id}", status_code=204)
async def delete_judge(judge_id: str, session: DbSession, tenant: CurrentTenant) -> Response:
    await _judges(session, tenant).delete(judge_id)
    return Response(status_code=204)


@router.post("/judges/{judge_id}/live-judging")
async def judge_conversation(
    judge_id: str,
    body: JudgeConversationRequest,
    session: DbSession,
    tenant: CurrentTenant,
    gateway: GatewayDep,
    caller: CallerDep,
) -> JudgeOutput:
    judge = definition_of(await _judges(session, tenant).get(judge_id))
    return await run_judge(gateway, caller, judge, body.messages, body.properties)


@router.post("/chat-completion-events/{event_id}/live-judging")
async def judge_event(
    event_id: str,
    body: JudgeWithDefinition,
    session: DbSession,
    tenant: CurrentTenant,
    gateway: GatewayDep,
    caller: CallerDep,
) -> JudgeOutput:
    event = await EventService(EventRepository(session, tenant)).event(event_id)
    messages = [*(event.request_messages or []), *(event.response_messages or [])]
    return await run_judge(gateway, caller, body.judge_definition, messages)


@router.post("/dataset-records/{dataset_record_id}/live-judging")
async def judge_record(
    dataset_record_id: str,
    body: JudgeWithDefinition,
    session: DbSession,
    tenant: CurrentTenant,
    gateway: GatewayDep,
    caller: CallerDep,
) -> JudgeOutput:
    service = DatasetService(DatasetRepository(session, tenant), RecordRepository(session, tenant))
    record = await service.record(dataset_record_id)
    messages = record.payload.get("messages") or []
    return await run_judge(gateway, caller, body.judge_definition, messages, record.properties)
