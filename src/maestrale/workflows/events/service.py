"""Events the workers report, stored for the list and the streams.

A worker's key decides the workspace of what it reports: an event of an execution that another
workspace holds is refused; one of an execution the index does not know (yet: events may come
before `executions/register`) is stored for this workspace. The events that close a run also
close its index row, so that a read needs no Temporal call; Temporal stays the authority.
"""

from __future__ import annotations

from collections.abc import Sequence

from maestrale.core.auth.principal import Tenant
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.core.uow import UnitOfWork
from maestrale.core.validation import INT64_MAX
from maestrale.workflows.errors import WorkflowError
from maestrale.workflows.events.repository import EventFilter, WorkflowEventRepository
from maestrale.workflows.events.schemas import EventIn, EventList

MAX_LIMIT = 1000


def position(value: str | None, what: str) -> int:
    """An event position (`seq`) a client sent back: a non-negative 64-bit integer, or a 400."""
    text = (value or "").strip()
    if not text.isdigit() or len(text) > 19 or int(text) > INT64_MAX:
        raise WorkflowError(f"invalid {what}", "WF_1000", status_code=400)
    return int(text)


def cursor_of(seq: int) -> str:
    return encode_cursor({"seq": seq})


def seq_of(cursor: str) -> int:
    values = decode_cursor(cursor)
    seq = values.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= INT64_MAX:
        raise WorkflowError("invalid cursor", "WF_1000", status_code=400)
    return seq


class WorkflowEventService:
    def __init__(self, work: UnitOfWork, tenant: Tenant) -> None:
        self.work = work
        self.tenant = tenant

    @property
    def events(self) -> WorkflowEventRepository:
        return WorkflowEventRepository(self.work.session, self.tenant)

    async def ingest(self, events: Sequence[EventIn]) -> int:
        """Store `events` (duplicates ignored) and close the runs they end; how many came."""
        if not events:
            return 0
        repository = self.events
        foreign = await repository.foreign_executions([e.workflow_exec_id for e in events])
        if foreign:
            raise WorkflowError(
                f"execution {sorted(foreign)[0]!r} belongs to another workspace",
                "WF_1003",
                status_code=403,
            )
        await repository.add(events)
        await repository.close_runs(events)
        return len(events)

    async def page(
        self,
        *,
        cursor: str | None,
        limit: int,
        execution_id: str | None,
        root_execution_id: str | None,
        run_id: str | None,
    ) -> EventList:
        """A page of the workspace's events in arrival order, after `cursor`."""
        after = seq_of(cursor) if cursor else 0
        wanted = EventFilter(
            execution_id=execution_id, root_execution_id=root_execution_id, run_id=run_id
        )
        rows = await self.events.after(after, wanted, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return EventList(
            events=[row.body for row in rows],
            next_cursor=cursor_of(rows[-1].seq) if more else None,
        )
