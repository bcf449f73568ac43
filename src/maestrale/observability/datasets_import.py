"""Import a campaign into a dataset: each judged event of the campaign becomes a record (its
request and response messages as the payload; the campaign, event and verdict as properties).
The import runs in the request (a campaign holds at most 10,000 events) and its task is returned
already COMPLETED; events not judged yet (campaign still running) or whose judging failed are
not imported, and the task's message says how many were left out."""

from __future__ import annotations

from sqlalchemy import insert, select

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.observability.campaigns_service import CampaignService
from maestrale.observability.datasets_service import DatasetService
from maestrale.observability.tables import (
    CampaignEvent,
    ChatCompletionEvent,
    DatasetImportTask,
    DatasetRecord,
)


async def import_from_campaign(
    datasets: DatasetService,
    campaigns: CampaignService,
    tenant: Tenant,
    dataset_id: str,
    campaign_id: str,
    creator_id: str,
) -> DatasetImportTask:
    dataset = await datasets.get(dataset_id)
    campaign = await campaigns.get(campaign_id)
    session = campaigns.session
    stmt = (
        select(CampaignEvent, ChatCompletionEvent)
        .join(ChatCompletionEvent, ChatCompletionEvent.id == CampaignEvent.event_id)
        .where(
            CampaignEvent.campaign_id == campaign.id,
            ChatCompletionEvent.workspace_id == tenant.workspace_id,
        )
        .order_by(CampaignEvent.position)
    )
    now = utcnow()
    rows, skipped = [], 0
    for verdict, event in (await session.execute(stmt)).all():
        if verdict.judged_at is None or verdict.error is not None:
            skipped += 1
            continue
        rows.append(
            {
                "id": new_id(),
                "organization_id": tenant.organization_id,
                "workspace_id": tenant.workspace_id,
                "dataset_id": dataset.id,
                "payload": {
                    "messages": [*(event.request_messages or []), *(event.response_messages or [])]
                },
                "properties": {
                    "campaign_id": campaign.id,
                    "event_id": event.id,
                    "judge_name": campaign.judge_definition.get("name"),
                    "answer": verdict.answer,
                    "analysis": verdict.analysis,
                },
                "source": "EXPLORER",
                "created_at": now,
                "updated_at": now,
            }
        )
    if rows:
        await session.execute(insert(DatasetRecord), rows)
    message = f"imported {len(rows)} judged events"
    if skipped:
        message += f"; {skipped} not judged (or failed) were left out"
    task = DatasetImportTask(
        id=new_id(),
        organization_id=tenant.organization_id,
        workspace_id=tenant.workspace_id,
        dataset_id=dataset.id,
        creator_id=creator_id,
        status="COMPLETED",
        progress=100,
        message=message,
    )
    session.add(task)
    await session.flush()
    return task
