"""All SQL of webhooks: the workspace's webhooks and deliveries (tenant-scoped by construction),
the lookup of a webhook by its unguessable id on the receiving path (no tenant there: the id and
the signature are the authentication), and the replay keys."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.clock import utcnow
from maestrale.core.pagination import keyset_after
from maestrale.core.repository import WorkspaceRepository
from maestrale.inbound.webhooks.tables import Webhook, WebhookDelivery, WebhookReplayKey


class WebhookRepository(WorkspaceRepository[Webhook]):
    """The webhooks of one workspace (the triggers check their event sources with `get`)."""

    model = Webhook

    async def all(self) -> list[Webhook]:
        return await self.list(self.select().order_by(Webhook.created_at, Webhook.id))

    async def mark_secret_read(self, webhook: Webhook, now: datetime) -> bool:
        """Record that the secret was returned; False when another read got there first."""
        done = await self.session.execute(
            update(Webhook)
            .where(
                Webhook.id == webhook.id,
                Webhook.workspace_id == self.tenant.workspace_id,
                Webhook.secret_read_at.is_(None),
            )
            .values(secret_read_at=now)
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(done, "rowcount", 0))


class DeliveryRepository(WorkspaceRepository[WebhookDelivery]):
    """The deliveries of one workspace's webhooks. `get` and `mark_dispatched` are what the
    triggers' dispatch job (`inbound.delivery`) uses."""

    model = WebhookDelivery

    async def page(
        self, webhook_id: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[WebhookDelivery]:
        """Newest first, `limit` at most, after the cursor's `(received_at, id)`."""
        stmt = self.select().where(WebhookDelivery.webhook_id == webhook_id)
        if after is not None:
            stmt = stmt.where(
                keyset_after(
                    [WebhookDelivery.received_at, WebhookDelivery.id], list(after), descending=True
                )
            )
        order = (WebhookDelivery.received_at.desc(), WebhookDelivery.id.desc())
        return await self.list(stmt.order_by(*order).limit(limit))

    async def mark_dispatched(self, delivery_id: str, started: list[dict[str, Any]]) -> None:
        """Record what the delivery started (JSON objects: what, its id, ...) and when."""
        await self.session.execute(
            update(WebhookDelivery)
            .where(
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.workspace_id == self.tenant.workspace_id,
            )
            .values(started=started, dispatched_at=utcnow())
            .execution_options(synchronize_session=False)
        )


class WebhookDirectory:
    """Webhooks by id across workspaces, for the receiving path only."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def by_id(self, webhook_id: str) -> Webhook | None:
        found = await self.session.execute(select(Webhook).where(Webhook.id == webhook_id))
        return found.scalar_one_or_none()

    async def set_secret(self, webhook_id: str, sealed: str) -> bool:
        """Store the first secret a provider sends (Notion's verification token), if none is
        stored yet; False when one already was."""
        done = await self.session.execute(
            update(Webhook)
            .where(Webhook.id == webhook_id, Webhook.secret_sealed.is_(None))
            .values(secret_sealed=sealed, url_verified=True, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(done, "rowcount", 0))

    async def mark_verified(self, webhook_id: str) -> None:
        await self.session.execute(
            update(Webhook)
            .where(Webhook.id == webhook_id, Webhook.url_verified.is_not(True))
            .values(url_verified=True)
            .execution_options(synchronize_session=False)
        )

    async def add_delivery(self, delivery: WebhookDelivery) -> None:
        self.session.add(delivery)
        await self.session.flush()


class ReplayKeys:
    """The signatures and event ids a webhook has seen, each until it expires."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def claim(self, webhook_id: str, key: str, expires_at: datetime, now: datetime) -> bool:
        """Take `key` for the webhook until `expires_at`: True when it was free (never seen, or
        seen long enough ago), False when it is taken. One statement: two replicas claiming the
        same key at once cannot both succeed."""
        postgres = self.session.get_bind().dialect.name == "postgresql"
        insert = postgresql.insert if postgres else sqlite.insert
        stmt = insert(WebhookReplayKey).values(
            webhook_id=webhook_id, key=key, expires_at=expires_at
        )
        claimed = stmt.on_conflict_do_update(
            index_elements=[WebhookReplayKey.webhook_id, WebhookReplayKey.key],
            set_={"expires_at": stmt.excluded.expires_at},
            where=WebhookReplayKey.expires_at <= now,
        ).returning(WebhookReplayKey.key)
        return (await self.session.execute(claimed)).first() is not None

    async def purge(self, webhook_id: str, now: datetime) -> None:
        await self.session.execute(
            delete(WebhookReplayKey).where(
                WebhookReplayKey.webhook_id == webhook_id, WebhookReplayKey.expires_at <= now
            )
        )
