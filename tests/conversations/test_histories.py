"""An append reads only the entries added since this process last read the conversation
(conversations/histories.py); entries written by another replica in between are read too."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.conversations.entries import entry, message_output
from maestrale.conversations.histories import Histories
from maestrale.conversations.loop.run import TurnsResult
from maestrale.conversations.loop.turn_request import EMPTY
from maestrale.conversations.prepared import Prepared
from maestrale.conversations.repository import ConversationRepository
from maestrale.conversations.service import ConversationService
from maestrale.conversations.tables import Conversation
from maestrale.conversations.targets import Target
from maestrale.conversations.turn_lease import TurnLeasePolicy, TurnLeases
from maestrale.core.auth.principal import Tenant
from maestrale.core.uow import UnitOfWork, unit_of_work
from maestrale.gateway.hooks import Caller

pytestmark = pytest.mark.both_databases("maestrale.conversations.repository")


async def post(client: httpx.AsyncClient, url: str, **body: Any) -> dict[str, Any]:
    response = await client.post(url, json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_append_reads_entries_another_replica_wrote(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    started = await post(client, "/v1/conversations", model="maestrale-echo", inputs="one")
    conv_id = started["conversation_id"]
    url = f"/v1/conversations/{conv_id}"
    await post(client, url, inputs="two")
    key = (tenant.workspace_id, conv_id)
    assert (
        len(app.state.services.histories.get(key, 10).entries) == 4
    )  # what the append read and wrote (committed)
    # Another replica appends (straight to the database: this process's copy does not see it).
    async with app.state.services.db.transaction() as work:
        repo = ConversationRepository(work.session, tenant)
        row = await repo.get(conv_id)
        assert row is not None
        assert await repo.add_entries(
            row.id,
            row.entry_count,
            [entry("message.input", role="user", content="elsewhere", prefix=False)],
        )
    answered = await post(client, url, inputs="three")
    assert answered["outputs"][0]["content"] == "echo: three"
    await post(client, url, inputs="four")

    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        events = (
            (
                await work.session.execute(
                    select(ChatCompletionEvent)
                    .where(ChatCompletionEvent.correlation_id == conv_id)
                    .order_by(ChatCompletionEvent.created_at)
                )
            )
            .scalars()
            .all()
        )
    seen = [[m["content"] for m in event.request_messages] for event in events]
    assert seen[-2] == ["one", "echo: one", "two", "echo: two", "elsewhere", "three"]
    assert seen[-1] == [*seen[-2], "echo: three", "four"]
    assert len(app.state.services.histories.get(key, 11).entries) == 9
    history = (await client.get(f"{url}/history")).json()["entries"]
    assert [e["content"] for e in history] == [*seen[-1], "echo: four"]


async def test_deleted_conversation_is_not_found_despite_its_copy(
    client: httpx.AsyncClient,
) -> None:
    conv_id = (await post(client, "/v1/conversations", model="maestrale-echo", inputs="a"))[
        "conversation_id"
    ]
    await post(client, f"/v1/conversations/{conv_id}", inputs="b")
    assert (await client.delete(f"/v1/conversations/{conv_id}")).status_code == 204
    response = await client.post(f"/v1/conversations/{conv_id}", json={"inputs": "c"})
    assert response.status_code == 404


def test_copies_are_bounded_and_checked_against_the_count() -> None:
    histories = Histories(max_entries=5)
    three = tuple({"n": i} for i in range(3))

    def entries(key: tuple[str, str], count: int) -> Any:
        return histories.get(key, count).entries

    histories.put(("w", "a"), three)
    assert entries(("w", "a"), 3) == three
    assert entries(("w", "a"), 7) == three  # entries added since: read by the caller
    assert entries(("w", "a"), 2) == ()  # fewer entries than the copy: dropped
    assert entries(("w", "a"), 3) == ()
    histories.put(("w", "a"), three)
    histories.put(("w", "b"), three)  # over the bound: the least recently used goes
    assert entries(("w", "a"), 3) == () and entries(("w", "b"), 3) == three
    assert len(histories) == 3
    histories.put(("w", "c"), tuple({"n": i} for i in range(6)))  # larger than the bound
    assert entries(("w", "c"), 6) == () and len(histories) == 3
    histories.put(("x", "b"), three)  # another workspace's key is another copy
    assert entries(("w", "b"), 3) == () and entries(("x", "b"), 3) == three


def test_a_copys_turn_prefix_counts_toward_the_bound() -> None:
    histories = Histories(max_entries=5)
    two = tuple(entry("message.input", role="user", content=f"q{i}") for i in range(2))
    prefix, errors = EMPTY.extend(list(two))
    assert prefix is not None and not errors
    histories.put(("w", "a"), two, prefix)
    assert histories.get(("w", "a"), 2).prefix is prefix and len(histories) == 4
    histories.put(("w", "b"), two, prefix)  # 8 > 5: the first copy goes, prefix and all
    assert histories.get(("w", "a"), 2).prefix is EMPTY and len(histories) == 4


async def test_entries_are_kept_only_once_committed(app: FastAPI, tenant: Tenant) -> None:
    """The copy takes an append's entries when its transaction commits, not when it rolls
    back (the entries were never written: another append will take their numbers)."""
    services = app.state.services
    caller = Caller(tenant.organization_id, tenant.workspace_id)
    outputs = [message_output("echo: x", None, "maestrale-echo")]
    target = Target(model="maestrale-echo")
    result = TurnsResult(outputs, {}, target)

    def service_in(work: UnitOfWork) -> ConversationService:
        leases = TurnLeases(services.db, tenant, TurnLeasePolicy())
        return ConversationService(
            work, tenant, services.engines, services.gateway, caller, services.histories, leases
        )

    async with unit_of_work(services.db.sessionmaker) as work:
        await service_in(work).repo.add(Conversation(id="conv_kept", model="maestrale-echo"))
    key = (tenant.workspace_id, "conv_kept")
    for commit in (False, True):
        work = UnitOfWork(services.db.sessionmaker)
        service = service_in(work)
        row = await service.get_row("conv_kept")
        added = [entry("message.input", role="user", content="x", prefix=False)]
        prepared = Prepared("conv_kept", target, [], added, None, "server")
        await service._store(prepared, row, 0, [], result)
        await (work.commit() if commit else work.rollback())
        await work.close()
        assert services.histories.get(key, 10).entries == ((*added, *outputs) if commit else ())


async def test_a_deleted_conversation_s_copy_is_dropped(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The copy goes with the conversation (the soak bench's RSS grew with every conversation
    started and deleted, until the cache was full)."""
    histories: Histories = app.state.services.histories
    started = await post(client, "/v1/conversations", model="maestrale-echo", inputs="one")
    conv_id = started["conversation_id"]
    await post(client, f"/v1/conversations/{conv_id}", inputs="two")
    assert len(histories.get((tenant.workspace_id, conv_id), 10).entries) == 4
    assert len(histories) > 0
    assert (await client.delete(f"/v1/conversations/{conv_id}")).status_code == 204
    assert histories.get((tenant.workspace_id, conv_id), 10).entries == ()
    assert len(histories) == 0
