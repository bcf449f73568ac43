"""Pooled Postgres connections are pinged before use only after sitting idle
(`core.db.PING_AFTER_IDLE_SECONDS`): a connection the server dropped meanwhile is replaced
without the request seeing it; a busy connection is used without the ping's round trips."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import text

from maestrale.core import db as db_module
from maestrale.core.db import create_engine
from tests.support.databases import POSTGRES_ENV

pytestmark = pytest.mark.skipif(not os.environ.get(POSTGRES_ENV), reason="needs Postgres")


async def backend_pid(engine: object) -> int:
    async with engine.connect() as conn:  # type: ignore[attr-defined]
        pid: int = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        return pid


async def terminate(pid: int) -> None:
    engine = create_engine(os.environ[POSTGRES_ENV])
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        await engine.dispose()


async def test_an_idle_connection_dropped_by_the_server_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = create_engine(os.environ[POSTGRES_ENV], pool_size=1)
    try:
        first = await backend_pid(engine)
        await terminate(first)
        monkeypatch.setattr(db_module, "PING_AFTER_IDLE_SECONDS", 0.0)
        assert await backend_pid(engine) != first  # the ping failed: a new connection
    finally:
        await engine.dispose()


async def test_a_connection_used_moments_ago_is_not_pinged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = create_engine(os.environ[POSTGRES_ENV], pool_size=1)
    pings: list[object] = []
    try:
        first = await backend_pid(engine)
        monkeypatch.setattr(db_module, "PING_AFTER_IDLE_SECONDS", 3600.0)
        async with engine.connect() as conn:
            adapted = type((await conn.get_raw_connection()).dbapi_connection)
        monkeypatch.setattr(adapted, "ping", pings.append)
        assert await backend_pid(engine) == first and not pings
        # Without the ping, a dropped connection fails its next statement once; SQLAlchemy
        # then replaces it, and the pool's other connections with it.
        await terminate(first)
        with pytest.raises(Exception):  # noqa: B017, PT011 - the driver's disconnect error
            await backend_pid(engine)
        assert await backend_pid(engine) != first
    finally:
        await engine.dispose()
