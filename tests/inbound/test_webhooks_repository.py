"""The webhooks' SQL on both backends: replay keys claimed race-free (two claims of one key at
once: exactly one wins; an expired key is free again), deliveries paged newest first and marked
dispatched, and everything scoped to its workspace."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.ids import new_id
from maestrale.inbound.webhooks.repository import (
    DeliveryRepository,
    ReplayKeys,
    WebhookDirectory,
    WebhookRepository,
)
from maestrale.inbound.webhooks.service import new_webhook_id
from maestrale.inbound.webhooks.tables import Webhook, WebhookDelivery
from tests.support.app_fixtures import create_tenant

pytestmark = pytest.mark.both_databases("maestrale.inbound.webhooks.repository")


async def test_replay_keys_and_deliveries(db: Database) -> None:
    mine, theirs = await create_tenant(db, "mine"), await create_tenant(db, "theirs")
    hook_id = new_webhook_id()
    async with db.transaction() as work:
        hook = Webhook(
            id=hook_id, creator_id="k", owner_type="workspace", provider="github", name="hook"
        )
        await WebhookRepository(work.session, mine.tenant).add(hook)
    now = utcnow()
    later = now + timedelta(hours=1)

    async def claim(key: str) -> bool:
        async with db.transaction() as work:
            return await ReplayKeys(work.session).claim(hook_id, key, later, now)

    # Two replicas receiving the same retry at once: one claim wins.
    assert sorted(await asyncio.gather(*(claim("s:abc") for _ in range(4)))) == [
        False,
        False,
        False,
        True,
    ]
    async with db.transaction() as work:
        expired = now - timedelta(seconds=1)
        assert await ReplayKeys(work.session).claim(hook_id, "e:old", expired, expired)
    assert await claim("e:old")  # past its expiry: free again
    async with db.transaction() as work:
        await ReplayKeys(work.session).purge(hook_id, now + timedelta(hours=2))
    assert await claim("s:abc")  # purged

    async with db.transaction() as work:
        directory = WebhookDirectory(work.session)
        assert (await directory.by_id(hook_id)) is not None
        for minutes in range(3):
            await directory.add_delivery(
                WebhookDelivery(
                    id=new_id(),
                    webhook_id=hook_id,
                    organization_id=mine.tenant.organization_id,
                    workspace_id=mine.tenant.workspace_id,
                    received_at=now + timedelta(minutes=minutes),
                    status="accepted",
                    verified=True,
                    headers={},
                )
            )
        await directory.mark_verified(hook_id)
        assert await directory.set_secret(hook_id, "v1.sealed")
        assert not await directory.set_secret(hook_id, "v1.other")
    async with db.transaction() as work:
        deliveries = DeliveryRepository(work.session, mine.tenant)
        first = await deliveries.page(hook_id, None, 2)
        assert [d.received_at for d in first] == sorted(
            (d.received_at for d in first), reverse=True
        )
        rest = await deliveries.page(hook_id, (first[-1].received_at, first[-1].id), 2)
        assert len(rest) == 1 and rest[0].received_at < first[-1].received_at
        await deliveries.mark_dispatched(rest[0].id, [{"kind": "conversation", "id": "c1"}])
        assert await DeliveryRepository(work.session, theirs.tenant).get(rest[0].id) is None
        assert await WebhookRepository(work.session, theirs.tenant).get(hook_id) is None
    async with db.transaction() as work:
        got = await DeliveryRepository(work.session, mine.tenant).get(rest[0].id)
        assert got is not None and got.started == [{"kind": "conversation", "id": "c1"}]
        assert got.dispatched_at is not None
        row = await WebhookRepository(work.session, mine.tenant).get(hook_id)
        assert row is not None and row.url_verified and row.secret_sealed == "v1.sealed"
        assert await WebhookRepository(work.session, mine.tenant).mark_secret_read(row, now)
        assert not await WebhookRepository(work.session, mine.tenant).mark_secret_read(row, now)
