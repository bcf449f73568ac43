"""Judges and live judging of raw messages, of an event and of a dataset record (beta
observability)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Query, Response

from maestrale.core.auth.dependencies import CurrentTenant, StandardAuth
from maestrale.core.pagination import PageParams
from maestrale.core.routing import Work
from maestrale.gateway.dependencies import CallerDep, PlatformCallsDep
from maestrale.observability.errors import observability_router
from maestrale.observability.judges.repository import JudgeRepository
from maestrale.observability.judges.schemas import (
    JudgeConversationRequest,
    JudgeDefinition,
    JudgeList,
    JudgeOut,
    JudgeOutput,
    JudgePage,
    JudgeWithDefinition,
)
from maestrale.observability.judges.service import JudgeService, LiveJudging

router = observability_router(prefix="/observability", tags=["observability"])


def _judges(work: Work, tenant: CurrentTenant) -> JudgeService:
    return JudgeService(JudgeRepository(work.session, tenant))


def _live(
    work: Work, tenant: CurrentTenant, calls: PlatformCallsDep, caller: CallerDep
) -> LiveJudging:
    return LiveJudging(work, tenant, calls, caller)


Judges = Annotated[JudgeService, Depends(_judges)]
Live = Annotated[LiveJudging, Depends(_live)]


@router.get("/judges")
async def list_judges(
    judges: Judges,
    type_filter: Annotated[list[Literal["REGRESSION", "CLASSIFICATION"]] | None, Query()] = None,
    model_filter: Annotated[list[str] | None, Query()] = None,
    page_size: Annotated[int, Query()] = 50,
    page: Annotated[int, Query()] = 1,
    q: Annotated[str | None, Query()] = None,
) -> JudgeList:
    """The workspace's judges at their latest revision, newest first, in numbered pages;
    filtered by output type, model and a case-insensitive part of the name (`q`)."""
    rows, count, nxt, prev = await judges.list_judges(
        PageParams(page, page_size, first_page=1), q, list(type_filter or []), model_filter
    )
    results = [JudgeOut.model_validate(r) for r in rows]
    return JudgeList(judges=JudgePage(count=count, results=results, next=nxt, previous=prev))


@router.post("/judges", status_code=201)
async def create_judge(body: JudgeDefinition, judges: Judges, principal: StandardAuth) -> JudgeOut:
    """Create a judge: a model, instructions and an output (CLASSIFICATION options or a
    REGRESSION range). Its name must be unique among the workspace's judges."""
    owner = principal.user_id or principal.key_id
    return JudgeOut.model_validate(await judges.create(body, owner))


@router.get("/judges/{judge_id}")
async def get_judge(judge_id: str, judges: Judges) -> JudgeOut:
    """One judge, at its latest revision or an earlier one (by the revision's id)."""
    return JudgeOut.model_validate(await judges.get(judge_id))


@router.put("/judges/{judge_id}", status_code=204)
async def update_judge(judge_id: str, body: JudgeDefinition, judges: Judges) -> Response:
    """Replace a judge's definition. The judge keeps its id; the definition it replaces is kept
    as an earlier revision (`down_revision`). Only the latest revision can be updated."""
    await judges.update(judge_id, body)
    return Response(status_code=204)


@router.delete("/judges/{judge_id}", status_code=204)
async def delete_judge(judge_id: str, judges: Judges) -> Response:
    """Delete a judge and its earlier revisions."""
    await judges.delete(judge_id)
    return Response(status_code=204)


@router.post("/judges/{judge_id}/live-judging")
async def judge_conversation(
    judge_id: str, body: JudgeConversationRequest, live: Live
) -> JudgeOutput:
    """Judge these messages (and optional properties) with a saved judge now: its model's
    `analysis` and `answer`. The call goes through the gateway and is recorded as an event."""
    return await live.messages(judge_id, body.messages, body.properties)


@router.post("/chat-completion-events/{event_id}/live-judging")
async def judge_event(event_id: str, body: JudgeWithDefinition, live: Live) -> JudgeOutput:
    """Judge an event's conversation (its request and response messages) with the given judge
    definition, without saving the judge."""
    return await live.event(event_id, body.judge_definition)


@router.post("/dataset-records/{dataset_record_id}/live-judging")
async def judge_record(
    dataset_record_id: str, body: JudgeWithDefinition, live: Live
) -> JudgeOutput:
    """Judge a dataset record's conversation and properties with the given judge definition,
    without saving the judge."""
    return await live.record(dataset_record_id, body.judge_definition)
