"""The gateway of a transaction's owner (`Gateway.releasing`: a request's, a job step's) ends the
owner's transaction before it opens, admits or runs a call, so that no handler or service has to
release by hand; the tests' strict database refuses a call made with a connection held."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
import sqlalchemy as sa

from maestrale.accounting.recorder import Recorder
from maestrale.core.db import ConnectionHeldAcrossCall, Database
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import load_catalog
from maestrale.engines.types import ChatRequest
from maestrale.gateway.capabilities import CHAT
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

CALLER = Caller("org", "ws")


class Rows:
    """Stands in for the Recorder."""

    def __init__(self) -> None:
        self.usage: list[dict[str, Any]] = []

    def record(self, usage: dict[str, Any], event: dict[str, Any] | None = None) -> None:
        self.usage.append(usage)


@pytest.fixture
async def gateway(db: Database) -> AsyncIterator[Gateway]:
    registry = EngineRegistry([s for s in load_catalog() if s.engine == "builtin"])
    yield Gateway(registry, cast(Recorder, Rows()), db)
    await registry.aclose()


def _request(text: str) -> ChatRequest:
    return ChatRequest(model="", messages=[{"role": "user", "content": text}])


async def test_an_unbound_gateway_refuses_a_call_with_a_connection_held(
    db: Database, gateway: Gateway
) -> None:
    async with db.transaction() as work:
        await work.session.execute(sa.text("SELECT 1"))
        call = await gateway.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")
        with pytest.raises(ConnectionHeldAcrossCall):
            await gateway.admit(call, 10)


async def test_a_bound_gateway_ends_its_owners_transaction_first(
    db: Database, gateway: Gateway
) -> None:
    committed: list[str] = []
    async with db.transaction() as work:
        work.on_commit(lambda: committed.append("read"))
        await work.session.execute(sa.text("SELECT 1"))
        bound = gateway.releasing(work.release)
        call = await bound.open(CALLER, "maestrale-echo", CHAT, correlation_id="c")
        assert not work.in_transaction and committed == ["read"]
        await work.session.execute(sa.text("SELECT 1"))  # read again between the steps
        await bound.admit(call, 10)
        assert not db.holds_connection()
        await work.session.execute(sa.text("SELECT 1"))
        result = await bound.chat(call, _request("hello there"))
        assert not db.holds_connection()
    assert result.choices[0].message["content"]
    assert gateway.release is None  # the process's gateway is not bound
