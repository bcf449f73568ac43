"""The `observability.campaign` job: judge a campaign's selected events one by one.

Each verdict is committed with the event's `judged_at` before the next event starts, and only
events without `judged_at` are judged: a worker killed mid-campaign resumes where it stopped and
never judges an event twice (an event whose judging was under way when the worker died has no
verdict committed, so it is judged once, on the retry). A judge call that fails (an invalid model
answer after its retries, an engine error) records the error as the event's verdict.

No session is open while the judge's model runs: each event is read in a short transaction,
judged with nothing open, and its verdict written in another."""

from __future__ import annotations

from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import AppError
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.observability.campaigns.repository import CampaignRepository, campaign_tenant
from maestrale.observability.events.repository import ChatCompletionEventRepository
from maestrale.observability.judges import judging
from maestrale.observability.judges.schemas import JudgeDefinition

KIND = "observability.campaign"


class CampaignTasks:
    def __init__(self, calls: PlatformCalls) -> None:
        self.calls = calls

    async def run(self, ctx: JobContext) -> dict[str, Any]:
        campaign_id = str(ctx.payload["campaign_id"])
        try:
            return await self._run(ctx, campaign_id)
        except Exception:
            if ctx.attempt >= ctx.max_attempts:
                await self._set_status(ctx, campaign_id, "FAILED")
            raise

    async def _tenant(self, ctx: JobContext, campaign_id: str) -> Tenant | None:
        async with ctx.db.transaction() as work:
            return await campaign_tenant(work.session, campaign_id)

    async def _set_status(self, ctx: JobContext, campaign_id: str, status: str) -> None:
        tenant = await self._tenant(ctx, campaign_id)
        if tenant is None:
            return
        async with ctx.db.transaction() as work:
            await CampaignRepository(work.session, tenant).set_status(campaign_id, status)

    async def _run(self, ctx: JobContext, campaign_id: str) -> dict[str, Any]:
        judged = 0
        tenant = await self._tenant(ctx, campaign_id)
        if tenant is None:
            return {"status": "deleted", "judged": judged}
        while True:
            ctx.check()
            async with ctx.db.transaction() as work:
                campaigns = CampaignRepository(work.session, tenant)
                campaign = await campaigns.alive_by_id(campaign_id)
                if campaign is None:
                    return {"status": "deleted", "judged": judged}
                pending = await campaigns.next_unjudged(campaign_id)
                if pending is None:
                    break
                event = await ChatCompletionEventRepository(work.session, tenant).get(pending)
                messages = None if event is None else event.conversation()
                caller = Caller(
                    campaign.organization_id,
                    campaign.workspace_id,
                    campaign.key_id,
                    campaign.user_id,
                )
                definition = JudgeDefinition.model_validate(campaign.judge_definition)
            values = await self._judge(caller, definition, messages)
            async with ctx.db.transaction() as work:
                await CampaignRepository(work.session, tenant).save_verdict(
                    campaign_id, pending, values
                )
            judged += 1
        await self._set_status(ctx, campaign_id, "COMPLETED")
        return {"status": "COMPLETED", "judged": judged}

    async def _judge(
        self, caller: Caller, definition: JudgeDefinition, messages: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """The event's verdict, or the reason it has none; called with no session open."""
        if messages is None:
            return {"error": "the event no longer exists"}
        try:
            verdict = await judging.run_judge(self.calls, caller, definition, messages)
        except AppError as exc:
            return {"error": exc.message}
        return {"analysis": verdict.analysis, "answer": verdict.answer}


def register(registry: JobRegistry, calls: PlatformCalls) -> None:
    registry.register(KIND, CampaignTasks(calls).run)
