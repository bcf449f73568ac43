"""The event sources a trigger binds: the webhooks of its workspace, served as the webhooks'
group serves them (the SDK's `Trigger.event_source` is a full `Webhook`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from maestrale.inbound.webhooks.service import WebhookService
from maestrale.inbound.webhooks.tables import Webhook


class EventSources:
    """The workspace's webhooks (the webhooks' service of the same request), as JSON."""

    def __init__(self, webhooks: WebhookService) -> None:
        self.service = webhooks

    def _served(self, row: Webhook) -> dict[str, Any]:
        return self.service.describe(row).model_dump(mode="json")

    async def one(self, webhook_id: str) -> dict[str, Any] | None:
        row = await self.service.webhooks.get(webhook_id)
        return None if row is None else self._served(row)

    async def many(self, webhook_ids: Collection[str]) -> dict[str, dict[str, Any]]:
        if not webhook_ids:
            return {}
        repo = self.service.webhooks
        rows = await repo.list(repo.select().where(Webhook.id.in_(sorted(webhook_ids))))
        return {row.id: self._served(row) for row in rows}
