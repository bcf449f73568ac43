"""A request's Temporal engine (`TemporalEngine.releasing`) ends the request's transaction before
each call to Temporal, so that no workflows service releases by hand: calls gathered in tasks of
their own end it once, never with two commits at a time, and a wait for an execution ends it in
the caller's task. The tests' strict database refuses a call made with a connection held."""

from __future__ import annotations

import asyncio
from typing import cast

import sqlalchemy as sa

from maestrale.core.db import Database
from maestrale.workflows.temporal.engine import TemporalEngine, TemporalTarget
from maestrale.workflows.temporal.namespaces import Connection


class Frontend:
    """Stands in for the connection to Temporal: counts the clients asked of it."""

    def __init__(self, db: Database, *, hang: bool = False) -> None:
        self.db = db
        self.hang = hang
        self.calls = 0

    async def client(self, namespace: str) -> object:
        self.db.check_released(f"a call to Temporal in {namespace}")
        self.calls += 1
        if self.hang:
            await asyncio.Event().wait()
        return object()


def _engine(frontend: Frontend) -> TemporalEngine:
    process = TemporalEngine(
        TemporalTarget(address="localhost:7233", namespace="ns"),
        connection=cast(Connection, frontend),
    )
    return process.for_workspace("ws1")


async def test_a_bound_engine_ends_its_owners_transaction_first(db: Database) -> None:
    frontend = Frontend(db)
    engine = _engine(frontend)
    committed: list[str] = []
    async with db.transaction() as work:
        work.on_commit(lambda: committed.append("read"))
        await work.session.execute(sa.text("SELECT 1"))
        bound = engine.releasing(work.release, db)
        await bound.client()
        assert not work.in_transaction and committed == ["read"]
        assert not db.holds_connection()
        await work.session.execute(sa.text("SELECT 1"))  # read again between two calls
        await bound.client()
        assert not work.in_transaction
    assert frontend.calls == 2
    assert engine.release is None  # the workspace's engine itself is not bound


async def test_calls_gathered_in_tasks_end_the_transaction_once(db: Database) -> None:
    frontend = Frontend(db)
    committed: list[str] = []
    async with db.transaction() as work:
        work.on_commit(lambda: committed.append("read"))
        await work.session.execute(sa.text("SELECT 1"))
        bound = _engine(frontend).releasing(work.release, db)
        await asyncio.gather(*(bound.client() for _ in range(8)))
        assert not work.in_transaction and not db.holds_connection()
    assert frontend.calls == 8
    assert committed == ["read"]


async def test_a_wait_for_an_execution_ends_the_transaction_first(db: Database) -> None:
    frontend = Frontend(db, hang=True)
    async with db.transaction() as work:
        await work.session.execute(sa.text("SELECT 1"))
        bound = _engine(frontend).releasing(work.release, db)
        assert await bound.wait_closed("execution", "run", 0.05) is None
        assert not work.in_transaction and not db.holds_connection()
