"""Admin changes act after their commit: cache invalidations are published once the request's
unit of work has committed, never after a rollback; a unique name taken by a concurrent request
is a 409 like any other taken name."""

from __future__ import annotations

from collections.abc import Iterable

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.admin.context import AdminContext
from maestrale.admin.groups.service import GroupService
from maestrale.admin.groups.tables import UserGroup
from maestrale.core.auth.cache import KeyCache
from maestrale.core.auth.invalidation import Invalidation, Invalidator
from maestrale.core.auth.principal import Principal
from maestrale.core.auth.tables import Organization
from maestrale.core.errors import Conflict
from maestrale.core.uow import UnitOfWork


class RecordingInvalidator(Invalidator):
    def __init__(self) -> None:
        super().__init__(KeyCache(0))
        self.published: list[list[Invalidation]] = []

    async def publish(self, items: Iterable[Invalidation]) -> None:
        self.published.append(list(items))


async def _context(app: FastAPI, invalidator: Invalidator) -> AdminContext:
    db = app.state.services.db
    async with db.transaction() as work:
        organization_id = (await work.session.execute(select(Organization.id))).scalars().first()
    assert organization_id is not None
    principal = Principal(
        key_id="",
        kind="admin",
        organization_id=organization_id,
        workspace_id=None,
        user_id=None,
        expires_at=None,
    )
    return AdminContext(UnitOfWork(db.sessionmaker), principal, invalidator)


async def test_invalidations_are_published_after_the_commit(app: FastAPI) -> None:
    invalidator = RecordingInvalidator()
    ctx = await _context(app, invalidator)
    ctx.invalidate(Invalidation("key", "k1"), Invalidation("workspace", "w1"))
    ctx.invalidate()  # nothing to publish
    ctx.audit("test.change", "test", None)
    assert invalidator.published == []
    await ctx.work.commit()
    assert invalidator.published == [[Invalidation("key", "k1"), Invalidation("workspace", "w1")]]
    await ctx.work.close()


async def test_a_rolled_back_change_publishes_nothing(app: FastAPI) -> None:
    invalidator = RecordingInvalidator()
    ctx = await _context(app, invalidator)
    ctx.audit("test.change", "test", None)
    ctx.invalidate(Invalidation("key", "k1"))
    await ctx.work.rollback()
    await ctx.work.commit()
    assert invalidator.published == []
    await ctx.work.close()


async def test_a_group_name_taken_meanwhile_is_a_conflict(
    app: FastAPI, admin: httpx.AsyncClient
) -> None:
    ctx = await _context(app, RecordingInvalidator())
    groups = GroupService(ctx)
    await groups._check_name_free("Racers")  # free when this request checked...
    await ctx.work.release()
    assert (await admin.post("/v1/admin/user-groups", json={"name": "Racers"})).status_code == 200
    with pytest.raises(Conflict) as refused:  # ...taken by the time it writes
        await groups._write(UserGroup(organization_id=ctx.organization_id, name="Racers"))
    assert refused.value.code == "user_group_exists"
    await ctx.work.rollback()
    await ctx.work.close()
