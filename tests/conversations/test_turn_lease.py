"""No connection is held while a conversation's model runs, and appends to one conversation take
turns (docs/architecture.md §3, `conversations/turn_lease.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.app import create_app
from maestrale.conversations.repository import ConversationRepository
from maestrale.conversations.tables import Conversation
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.db import ConnectionHeldAcrossCall, Database
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as settings_for

pytestmark = pytest.mark.both_databases("maestrale.conversations.repository")


@pytest.fixture
async def small_app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    """An app whose Postgres pool has two connections (one plus one overflow): three requests
    that kept theirs across a model call would starve every other request."""
    settings = settings_for(
        database_url,
        tmp_path / "data",
        database_pool_size=1,
        # Short enough that the 4 s appends below renew their leases, long enough that a loaded
        # machine (the suite runs on two workers) renews in time.
        conversation_turn_lease_seconds=1.5,
        conversation_turn_wait_seconds=5,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def started(client: httpx.AsyncClient, text: str = "hello") -> str:
    response = await client.post(
        "/v1/conversations", json={"model": "maestrale-echo", "inputs": text}
    )
    assert response.status_code == 200, response.text
    conversation_id: str = response.json()["conversation_id"]
    return conversation_id


async def history(client: httpx.AsyncClient, conversation_id: str) -> list[Any]:
    response = await client.get(f"/v1/conversations/{conversation_id}/history")
    return [entry.get("content") for entry in response.json()["entries"]]


async def test_writes_go_on_while_other_conversations_wait_on_their_models(
    small_app: FastAPI,
) -> None:
    """Three appends wait on their model (one more than the Postgres pool; on SQLite, each
    would hold the database's write lock): meanwhile a new conversation starts, another is
    appended to, and the models are listed, all before any slow model has answered."""
    async with make_client(small_app) as client:
        slow_ids = [await started(client) for _ in range(3)]
        other = await started(client)
        slow = [
            asyncio.create_task(
                client.post(f"/v1/conversations/{cid}", json={"inputs": "/sleep 4000\nslow"})
            )
            for cid in slow_ids
        ]
        await asyncio.sleep(0.5)  # the slow appends are now inside their model calls
        quick = await asyncio.wait_for(
            asyncio.gather(
                client.post("/v1/conversations", json={"model": "maestrale-echo", "inputs": "new"}),
                client.post(f"/v1/conversations/{other}", json={"inputs": "more"}),
                client.get("/v1/models"),
            ),
            timeout=3.0,
        )
        assert [r.status_code for r in quick] == [200, 200, 200], [r.text for r in quick]
        assert not any(task.done() for task in slow)
        for response in await asyncio.gather(*slow):
            assert response.status_code == 200, response.text
        for cid in slow_ids:
            assert await history(client, cid) == [
                "hello",
                "echo: hello",
                "/sleep 4000\nslow",
                "echo: slow",
            ]


async def test_a_second_append_waits_its_turn_and_reads_the_first(small_app: FastAPI) -> None:
    async with make_client(small_app) as client:
        cid = await started(client)
        url = f"/v1/conversations/{cid}"
        first = asyncio.create_task(client.post(url, json={"inputs": "/sleep 400\nfirst"}))
        await asyncio.sleep(0.1)
        second = await client.post(url, json={"inputs": "second"})
        assert second.status_code == 200, second.text
        assert (await first).status_code == 200
        assert await history(client, cid) == [
            "hello",
            "echo: hello",
            "/sleep 400\nfirst",
            "echo: first",
            "second",
            "echo: second",
        ]


async def test_an_append_that_cannot_get_its_turn_in_time_is_a_409(
    database_url: str, tmp_path: Path
) -> None:
    settings = settings_for(database_url, tmp_path / "data", conversation_turn_wait_seconds=0.2)
    application = create_app(settings)
    async with application.router.lifespan_context(application), make_client(application) as client:
        cid = await started(client)
        url = f"/v1/conversations/{cid}"
        slow = asyncio.create_task(client.post(url, json={"inputs": "/sleep 1500\nslow"}))
        await asyncio.sleep(0.2)
        busy = await client.post(url, json={"inputs": "impatient"})
        assert busy.status_code == 409, busy.text
        assert busy.json()["code"] == "conversation_busy"
        assert (await slow).status_code == 200
        assert await history(client, cid) == [
            "hello",
            "echo: hello",
            "/sleep 1500\nslow",
            "echo: slow",
        ]


async def test_a_crashed_appends_turn_is_taken_over_once_its_lease_ran_out(
    small_app: FastAPI, tenant: Tenant
) -> None:
    async with make_client(small_app) as client:
        cid = await started(client)
        db = small_app.state.services.db
        async with db.transaction() as work:  # a process that took the turn, then died
            now = utcnow()
            repo = ConversationRepository(work.session, tenant)
            assert await repo.claim_turn(cid, "dead", now, now + timedelta(seconds=0.5))
        answered = await client.post(f"/v1/conversations/{cid}", json={"inputs": "later"})
        assert answered.status_code == 200, answered.text
        assert await history(client, cid) == ["hello", "echo: hello", "later", "echo: later"]


# Without the refused append ending its transaction before the turn is given back, SQLite's
# write lock stalled the give-back (and every other writer) for the 30 s busy timeout.
@pytest.mark.timeout(20)
async def test_an_append_whose_turn_was_taken_over_stores_nothing(
    small_app: FastAPI, tenant: Tenant
) -> None:
    """The lease (1.5 s) is renewed while the model runs; here another writer takes the turn
    over meanwhile (as one would after renewals failed): the append is refused, nothing of it
    is stored, the other writer's entries stand, and no writer waits on the refused one."""
    async with make_client(small_app) as client:
        cid = await started(client)
        url = f"/v1/conversations/{cid}"
        slow = asyncio.create_task(client.post(url, json={"inputs": "/sleep 600\nslow"}))
        db: Database = small_app.state.services.db
        # Wait for the append to hold its turn (a loaded machine takes its time).
        for _ in range(200):
            await asyncio.sleep(0.05)
            async with db.transaction() as work:
                owner = await work.session.scalar(
                    select(Conversation.turn_owner).where(Conversation.id == cid)
                )
            if owner is not None:
                break
        async with db.transaction() as work:
            repo = ConversationRepository(work.session, tenant)
            row = await work.session.get(Conversation, cid)
            assert row is not None and row.turn_owner is not None
            row.turn_expires_at = utcnow() - timedelta(seconds=1)
            await work.session.flush()
            now = utcnow()
            assert await repo.claim_turn(cid, "intruder", now, now + timedelta(seconds=30))
            assert await repo.add_entries(
                cid,
                2,
                [{"id": "msg_x", "type": "message.input", "content": "theirs"}],
                owner="intruder",
            )
        refused = await slow
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "conversation_changed"
        assert await history(client, cid) == ["hello", "echo: hello", "theirs"]


async def test_a_model_call_with_a_connection_held_is_refused_in_strict_mode(
    db: Database,
) -> None:
    """The guard every engine call passes: the task may hold no pooled connection."""
    db.check_released("a call")
    async with db.sessionmaker() as session:
        await session.execute(Conversation.__table__.select().limit(1))
        with pytest.raises(ConnectionHeldAcrossCall):
            db.check_released("a call")
        await session.commit()
        db.check_released("a call")
