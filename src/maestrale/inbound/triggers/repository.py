"""SQL of triggers and their events, scoped to the workspace (a foreign id is not found)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.repository import WorkspaceRepository
from maestrale.inbound.triggers.tables import Trigger, TriggerEvent, TriggerStatus


class TriggerRepository(WorkspaceRepository[Trigger]):
    model = Trigger

    async def filtered(
        self,
        *,
        handler: str | None = None,
        primitive_id: str | None = None,
        event_source_id: str | None = None,
    ) -> list[Trigger]:
        stmt = self.select()
        if handler is not None:
            stmt = stmt.where(Trigger.handler == handler)
        if primitive_id is not None:
            stmt = stmt.where(Trigger.primitive_id == primitive_id)
        if event_source_id is not None:
            stmt = stmt.where(Trigger.event_source_id == event_source_id)
        return await self.list(stmt.order_by(Trigger.created_at.desc(), Trigger.id.desc()))

    async def of_source(self, event_source_id: str) -> list[Trigger]:
        """The triggers a delivery of `event_source_id` may fire, oldest first."""
        stmt = self.select().where(Trigger.event_source_id == event_source_id)
        return await self.list(stmt.order_by(Trigger.created_at, Trigger.id))


class TriggerEventRepository(WorkspaceRepository[TriggerEvent]):
    model = TriggerEvent

    async def newest(self, trigger_id: str, limit: int) -> list[TriggerEvent]:
        stmt = (
            self.select()
            .where(TriggerEvent.trigger_id == trigger_id)
            .order_by(TriggerEvent.received_at.desc(), TriggerEvent.id.desc())
            .limit(limit)
        )
        return await self.list(stmt)

    async def of_delivery(self, trigger_id: str, delivery_id: str) -> TriggerEvent | None:
        stmt = self.select().where(
            TriggerEvent.trigger_id == trigger_id, TriggerEvent.delivery_id == delivery_id
        )
        row: TriggerEvent | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def open(
        self, trigger_id: str, delivery_id: str, received_at: datetime, **values: Any
    ) -> TriggerEvent:
        """The event of (trigger, delivery): the one an earlier attempt wrote, else a new one
        (SUBMITTED unless `values` say otherwise). The unique key settles a race between two
        attempts: the loser reads the winner's row."""
        found = await self.of_delivery(trigger_id, delivery_id)
        if found is not None:
            return found
        row = TriggerEvent(
            id=new_id(),
            trigger_id=trigger_id,
            delivery_id=delivery_id,
            received_at=received_at,
            status=values.pop("status", TriggerStatus.SUBMITTED),
            submitted_at=utcnow(),
            **values,
        )
        try:
            async with self.session.begin_nested():
                await self.add(row)
        except IntegrityError:
            found = await self.of_delivery(trigger_id, delivery_id)
            if found is None:
                raise
            return found
        return row

    async def update(self, event_id: str, **values: Any) -> None:
        await self.session.execute(
            sa.update(TriggerEvent)
            .where(
                TriggerEvent.id == event_id,
                TriggerEvent.workspace_id == self.tenant.workspace_id,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
