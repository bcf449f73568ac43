"""The SQL of triggers and their events, on SQLite and Postgres: the (trigger, delivery) event is
written once whichever attempt gets there first, events read newest first, and everything is
scoped to the workspace."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.inbound.triggers.repository import TriggerEventRepository, TriggerRepository
from maestrale.inbound.triggers.tables import Trigger
from tests.support.app_fixtures import create_tenant, default_tenant

pytestmark = pytest.mark.both_databases("maestrale.inbound.triggers.repository")


async def test_events_are_written_once_and_scoped(db: Database) -> None:
    from maestrale.core.auth.bootstrap import bootstrap

    async with db.transaction() as work:
        await bootstrap(work.session, api_key="k" * 40, admin_key="a" * 40, keys_file=None)
    tenant = await default_tenant(db)
    other = (await create_tenant(db)).tenant
    async with db.transaction() as work:
        await TriggerRepository(work.session, tenant).add(
            Trigger(
                id="t1",
                creator_id="u",
                owner_type="workspace",
                event_source_id="wh_1",
                event_source={"id": "wh_1"},
                handler="agents",
                action_type="start_agent_session",
                primitive_id="ag",
                title="t",
            )
        )
    start = utcnow()

    async def open_once(delivery: str) -> str:
        async with db.transaction() as work:
            row = await TriggerEventRepository(work.session, tenant).open("t1", delivery, start)
            return row.id

    # Two attempts at once on the same delivery: one row, both see it.
    first, second = await asyncio.gather(open_once("d1"), open_once("d1"))
    assert first == second
    for n in range(2, 5):
        async with db.transaction() as work:
            await TriggerEventRepository(work.session, tenant).open(
                "t1", f"d{n}", start + timedelta(seconds=n)
            )
    async with db.transaction() as work:
        events = TriggerEventRepository(work.session, tenant)
        newest = await events.newest("t1", 2)
        assert [e.delivery_id for e in newest] == ["d4", "d3"]
        assert len(await events.newest("t1", 100)) == 4
        triggers = TriggerRepository(work.session, tenant)
        assert [t.id for t in await triggers.of_source("wh_1")] == ["t1"]
        assert [t.id for t in await triggers.filtered(handler="agents", primitive_id="ag")] == [
            "t1"
        ]
        assert await triggers.filtered(event_source_id="wh_2") == []
        theirs = TriggerEventRepository(work.session, other)
        assert await theirs.newest("t1", 10) == []
        assert await theirs.of_delivery("t1", "d1") is None
        assert await TriggerRepository(work.session, other).get("t1") is None
