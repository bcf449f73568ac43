"""SQL of batch jobs: for API requests, scoped to the caller's workspace (`BatchRepository`);
for the worker running one job, by the id its queue payload names (`BatchRunRepository`).

Results are inserted with ON CONFLICT DO NOTHING on `(batch_id, line)` and the counters advance
by the rows actually inserted, in the same transaction: a line replayed after a crash is neither
written nor counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement, false
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.batch.tables import BatchJob, BatchResult, BatchStatus
from maestrale.core.clock import utcnow
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository


class BatchRepository(WorkspaceRepository[BatchJob]):
    model = BatchJob

    def created_by(self, key_id: str | None) -> ColumnElement[bool]:
        """Jobs of the caller: of its user, or for a key bound to no user, of that key."""
        if self.tenant.user_id is not None:
            return BatchJob.user_id == self.tenant.user_id
        if key_id is None:
            return false()
        return sa.and_(BatchJob.user_id.is_(None), BatchJob.key_id == key_id)

    async def page(
        self,
        page: PageParams,
        *,
        model: str | None = None,
        agent_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        created_after: datetime | None = None,
        creator: ColumnElement[bool] | None = None,
        statuses: Sequence[str] = (),
        newest_first: bool = True,
    ) -> tuple[list[BatchJob], int]:
        stmt = self.select()
        if model is not None:
            stmt = stmt.where(BatchJob.model == model)
        if agent_id is not None:
            stmt = stmt.where(BatchJob.agent_id == agent_id)
        for key, value in (metadata or {}).items():
            stmt = stmt.where(BatchJob.meta[key].as_string() == value)
        if created_after is not None:
            stmt = stmt.where(BatchJob.created_at > created_after)
        if creator is not None:
            stmt = stmt.where(creator)
        if statuses:
            stmt = stmt.where(BatchJob.status.in_(list(statuses)))
        total = await self.count(stmt)
        if newest_first:
            ordered = stmt.order_by(BatchJob.created_at.desc(), BatchJob.id.desc())
        else:
            ordered = stmt.order_by(BatchJob.created_at, BatchJob.id)
        return await self.list(ordered.offset(page.offset).limit(page.limit)), total

    async def set_status(self, row: BatchJob, expected: str, **values: Any) -> bool:
        """Move `row` out of status `expected` (a worker may move it concurrently); False if it
        was no longer in that status."""
        changed = await self.session.execute(
            sa.update(BatchJob)
            .where(
                BatchJob.id == row.id,
                BatchJob.workspace_id == self.tenant.workspace_id,
                BatchJob.status == expected,
            )
            .values(**values)
            .returning(BatchJob.id)
            .execution_options(synchronize_session=False)
        )
        done = changed.scalar_one_or_none() is not None
        await self.session.refresh(row)
        return done

    async def results(self, row: BatchJob, limit: int) -> list[BatchResult]:
        """The job's recorded results in line order (for inline answers)."""
        found = await self.session.execute(
            sa.select(BatchResult)
            .where(BatchResult.batch_id == row.id)
            .order_by(BatchResult.line)
            .limit(limit)
        )
        return list(found.scalars())


class BatchRunRepository:
    """The worker's SQL for one batch job. The job acts on the row it was created for, by id;
    what it reads besides its own rows (its input files) is read in the job's workspace, through
    that workspace's repositories."""

    def __init__(self, session: AsyncSession, batch_id: str) -> None:
        self.session = session
        self.batch_id = batch_id

    async def start(self) -> BatchJob | None:
        """The job's row, RUNNING from now on if it was QUEUED; None if it was deleted."""
        await self.session.execute(
            sa.update(BatchJob)
            .where(BatchJob.id == self.batch_id, BatchJob.status == BatchStatus.QUEUED)
            .values(status=BatchStatus.RUNNING, started_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return await self.load()

    async def load(self) -> BatchJob | None:
        """The job's row as it is now; None if it was deleted."""
        found = await self.session.execute(
            sa.select(BatchJob)
            .where(BatchJob.id == self.batch_id)
            .execution_options(populate_existing=True)
        )
        return found.scalar_one_or_none()

    async def status(self) -> str | None:
        """The job's status (a cancel request shows here); None once it was deleted."""
        query = sa.select(BatchJob.status).where(BatchJob.id == self.batch_id)
        return (await self.session.execute(query)).scalar_one_or_none()

    async def record(self, rows: list[dict[str, Any]]) -> str | None:
        """Insert the results not recorded yet and advance the counters by them; the job's
        status after the write, or None if the job was deleted. Raises IntegrityError when the
        job row went away between the two (the caller rolls back)."""
        inserted: list[bool] = []
        if rows:
            # One cached Core statement run over all rows ("insertmanyvalues" batches them into
            # multi-row INSERTs): ten times cheaper than a statement built per flush.
            postgres = self.session.get_bind().dialect.name == "postgresql"
            dialect = postgresql if postgres else sqlite
            table = BatchResult.__table__
            insert = (
                dialect.insert(table)
                .on_conflict_do_nothing(index_elements=["batch_id", "line"])
                .returning(table.c.ok)
            )
            inserted = list((await self.session.execute(insert, rows)).scalars())
        ok = sum(inserted)
        update = (
            sa.update(BatchJob)
            .where(BatchJob.id == self.batch_id)
            .values(
                completed_requests=BatchJob.completed_requests + len(inserted),
                succeeded_requests=BatchJob.succeeded_requests + ok,
                failed_requests=BatchJob.failed_requests + (len(inserted) - ok),
            )
            .returning(BatchJob.status)
            .execution_options(synchronize_session=False)
        )
        status: str | None = (await self.session.execute(update)).scalar_one_or_none()
        return status

    async def done_after(self, line: int, limit: int) -> list[int]:
        """Lines already recorded, above `line`, in order."""
        found = await self.session.execute(
            sa.select(BatchResult.line)
            .where(BatchResult.batch_id == self.batch_id, BatchResult.line > line)
            .order_by(BatchResult.line)
            .limit(limit)
        )
        return list(found.scalars())

    async def records(self, ok: bool, after: int, limit: int) -> list[tuple[int, str]]:
        """`(line, record)` of the successful (or failed) lines above `after`, in line order."""
        found = await self.session.execute(
            sa.select(BatchResult.line, BatchResult.record)
            .where(
                BatchResult.batch_id == self.batch_id,
                BatchResult.ok.is_(ok),
                BatchResult.line > after,
            )
            .order_by(BatchResult.line)
            .limit(limit)
        )
        return [(line, record) for line, record in found.all()]

    async def failure_summary(self, limit: int) -> list[dict[str, Any]]:
        """The most frequent failure reasons with their counts."""
        count = sa.func.count().label("count")
        found = await self.session.execute(
            sa.select(BatchResult.error, count)
            .where(BatchResult.batch_id == self.batch_id, BatchResult.ok.is_(False))
            .group_by(BatchResult.error)
            .order_by(count.desc(), BatchResult.error)
            .limit(limit)
        )
        return [{"message": error or "failed", "count": int(n)} for error, n in found.all()]

    async def finish(
        self,
        *,
        status: str,
        output_file: str | None,
        error_file: str | None,
        errors: list[dict[str, Any]],
        failure_summary: list[dict[str, Any]] | None = None,
    ) -> bool:
        """Give the job its final state; False if the job was deleted or already final."""
        done = await self.session.execute(
            sa.update(BatchJob)
            .where(BatchJob.id == self.batch_id, BatchJob.status.not_in(list(BatchStatus.FINAL)))
            .values(
                status=status,
                completed_at=utcnow(),
                output_file=output_file,
                error_file=error_file,
                errors=errors,
                failure_summary=failure_summary or [],
            )
            .returning(BatchJob.id)
            .execution_options(synchronize_session=False)
        )
        return done.scalar_one_or_none() is not None
