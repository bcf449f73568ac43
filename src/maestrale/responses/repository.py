"""SQL of stored responses and of the events of background ones, scoped to the caller's
workspace (events are reached only through a response read from that workspace)."""

from __future__ import annotations

from typing import Any, cast

import sqlalchemy as sa

from maestrale.core.repository import WorkspaceRepository
from maestrale.responses.tables import ResponseEvent, StoredResponse

RESPONSES = cast(sa.Table, StoredResponse.__table__)
EVENTS = cast(sa.Table, ResponseEvent.__table__)


class ResponseRepository(WorkspaceRepository[StoredResponse]):
    model = StoredResponse

    async def fresh(self, response_id: str) -> StoredResponse | None:
        """The response as stored now (not as this session read it before)."""
        stmt = self.select().where(StoredResponse.id == response_id)
        found = await self.session.execute(stmt.execution_options(populate_existing=True))
        return found.scalar_one_or_none()

    async def insert(self, **values: Any) -> None:
        """Add a response row (one statement: the ORM's unit of work was a third of the cost
        of storing a response)."""
        tenant = self.tenant
        await self.session.execute(
            sa.insert(RESPONSES).values(
                organization_id=tenant.organization_id, workspace_id=tenant.workspace_id, **values
            )
        )

    async def update(
        self, response_id: str, *, only_if: tuple[str, ...] = (), **values: Any
    ) -> bool:
        """Change a response's columns (while its status is one of `only_if`, if given)."""
        c = RESPONSES.c
        stmt = sa.update(RESPONSES).where(
            c.id == response_id, c.workspace_id == self.tenant.workspace_id
        )
        if only_if:
            stmt = stmt.where(c.status.in_(only_if))
        result = await self.session.execute(stmt.values(**values))
        return bool(getattr(result, "rowcount", 0))

    async def others_of(self, conversation_id: str, response_id: str) -> bool:
        """Whether responses other than `response_id` are turns of the conversation."""
        c = RESPONSES.c
        stmt = sa.select(c.id).where(
            c.workspace_id == self.tenant.workspace_id,
            c.conversation_id == conversation_id,
            c.id != response_id,
        )
        return (await self.session.execute(stmt.limit(1))).first() is not None

    async def add_events(self, response_id: str, events: list[dict[str, Any]]) -> None:
        """Keep a background response's events (numbered by their `sequence_number`)."""
        if events:
            await self.session.execute(
                sa.insert(EVENTS),
                [
                    {"response_id": response_id, "seq": e["sequence_number"], "body": e}
                    for e in events
                ],
            )

    async def clear_events(self, response_id: str) -> None:
        """Forget the events of an attempt that did not finish (a retried background run
        starts its events over)."""
        await self.session.execute(sa.delete(EVENTS).where(EVENTS.c.response_id == response_id))

    async def events_after(
        self, response_id: str, after: int, limit: int = 500
    ) -> list[dict[str, Any]]:
        """The kept events of a response read from this workspace, after sequence `after`."""
        stmt = (
            sa.select(EVENTS.c.body)
            .where(EVENTS.c.response_id == response_id, EVENTS.c.seq > after)
            .order_by(EVENTS.c.seq)
            .limit(limit)
        )
        return [dict(row) for row in (await self.session.execute(stmt)).scalars()]
