"""The `observability.campaign` job: judge a campaign's selected events one by one.

Each verdict is committed with the event's `judged_at` before the next event starts, and only
events without `judged_at` are judged: a worker killed mid-campaign resumes where it stopped and
never judges an event twice (an event whose judging was under way when the worker died has no
verdict committed, so it is judged once, on the retry). A judge call that fails (an invalid model
answer after its retries, an engine error) records the error as the event's verdict."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from maestrale.completions.gateway import Gateway
from maestrale.completions.hooks import Caller
from maestrale.core.clock import utcnow
from maestrale.core.errors import AppError
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.observability import judging
from maestrale.observability.judges_schemas import JudgeDefinition
from maestrale.observability.tables import Campaign, CampaignEvent, ChatCompletionEvent

KIND = "observability.campaign"


class CampaignTasks:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def run(self, ctx: JobContext) -> dict[str, Any]:
        campaign_id = str(ctx.payload["campaign_id"])
        try:
            return await self._run(ctx, campaign_id)
        except Exception:
            if ctx.attempt >= ctx.max_attempts:
                await self._set_status(ctx, campaign_id, "FAILED")
            raise

    async def _set_status(self, ctx: JobContext, campaign_id: str, status: str) -> None:
        async with ctx.db.sessionmaker() as session, session.begin():
            campaign = await session.get(Campaign, campaign_id)
            if campaign is not None:
                campaign.status = status
                campaign.updated_at = utcnow()

    async def _run(self, ctx: JobContext, campaign_id: str) -> dict[str, Any]:
        judged = 0
        while True:
            ctx.check()
            async with ctx.db.sessionmaker() as session:
                campaign = await session.get(Campaign, campaign_id)
                if campaign is None or campaign.deleted_at is not None:
                    return {"status": "deleted", "judged": judged}
                pending = (
                    await session.execute(
                        select(CampaignEvent.event_id)
                        .where(
                            CampaignEvent.campaign_id == campaign_id,
                            CampaignEvent.judged_at.is_(None),
                        )
                        .order_by(CampaignEvent.position)
                        .limit(1)
                    )
                ).scalar_one_or_none()
                if pending is None:
                    break
                event = await session.get(ChatCompletionEvent, pending)
                caller = Caller(
                    campaign.organization_id, campaign.workspace_id, campaign.key_id,
                    campaign.user_id,
                )  # fmt: skip
                definition = JudgeDefinition.model_validate(campaign.judge_definition)
                workspace = campaign.workspace_id
            values = await self._judge(caller, definition, event, workspace)
            async with ctx.db.sessionmaker() as session, session.begin():
                row = await session.get(CampaignEvent, (campaign_id, pending))
                if row is not None and row.judged_at is None:
                    for key, value in values.items():
                        setattr(row, key, value)
                    row.judged_at = utcnow()
            judged += 1
        await self._set_status(ctx, campaign_id, "COMPLETED")
        return {"status": "COMPLETED", "judged": judged}

    async def _judge(
        self,
        caller: Caller,
        definition: JudgeDefinition,
        event: ChatCompletionEvent | None,
        workspace_id: str,
    ) -> dict[str, Any]:
        if event is None or event.workspace_id != workspace_id:
            return {"error": "the event no longer exists"}
        messages = [*(event.request_messages or []), *(event.response_messages or [])]
        try:
            verdict = await judging.run_judge(self.gateway, caller, definition, messages)
        except AppError as exc:
            return {"error": exc.message}
        return {"analysis": verdict.analysis, "answer": verdict.answer}


def register(registry: JobRegistry, gateway: Gateway) -> None:
    registry.register(KIND, CampaignTasks(gateway).run)
