"""The worker's SQL for one batch job, by id (the job acts on the row it was created for).

Results are inserted with ON CONFLICT DO NOTHING on `(batch_id, line)` and the counters advance
by the rows actually inserted, in the same transaction: a line replayed after a crash is neither
written nor counted twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.batch.tables import BatchJob, BatchResult, BatchStatus
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.files.tables import StoredFile

PAGE = 2000
MAX_ERROR_GROUPS = 20


class Progress:
    def __init__(self, db: Database, batch_id: str) -> None:
        self.db = db
        self.batch_id = batch_id

    async def start(self) -> BatchJob | None:
        """The job's row, RUNNING from now on if it was QUEUED; None if it was deleted."""
        async with self.db.session() as session:
            await session.execute(
                sa.update(BatchJob)
                .where(BatchJob.id == self.batch_id, BatchJob.status == BatchStatus.QUEUED)
                .values(status=BatchStatus.RUNNING, started_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            return await self._load(session)

    async def reload(self) -> BatchJob | None:
        async with self.db.sessionmaker() as session:
            return await self._load(session)

    async def _load(self, session: AsyncSession) -> BatchJob | None:
        found = await session.execute(
            sa.select(BatchJob)
            .where(BatchJob.id == self.batch_id)
            .execution_options(populate_existing=True)
        )
        return found.scalar_one_or_none()

    async def status(self) -> str | None:
        """The job's status now (a cancel request shows here); None once it was deleted."""
        async with self.db.sessionmaker() as session:
            query = sa.select(BatchJob.status).where(BatchJob.id == self.batch_id)
            return (await session.execute(query)).scalar_one_or_none()

    async def input_keys(self, file_ids: list[str]) -> dict[str, str]:
        """Blob keys of the input files that still exist."""
        if not file_ids:
            return {}
        async with self.db.sessionmaker() as session:
            rows = await session.execute(
                sa.select(StoredFile.id, StoredFile.blob_key).where(StoredFile.id.in_(file_ids))
            )
            return {file_id: key for file_id, key in rows.all()}

    async def write(self, rows: list[dict[str, Any]]) -> str | None:
        """Record results not recorded yet and advance the counters by them; the job's status
        after the write, or None if the job was deleted."""
        async with self.db.session() as session:
            inserted: list[bool] = []
            if rows:
                # One cached Core statement run over all rows ("insertmanyvalues" batches them
                # into multi-row INSERTs): ten times cheaper than a statement built per flush.
                dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
                table = BatchResult.__table__
                insert = (
                    dialect.insert(table)
                    .on_conflict_do_nothing(index_elements=["batch_id", "line"])
                    .returning(table.c.ok)
                )
                try:
                    inserted = list((await session.execute(insert, rows)).scalars())
                except IntegrityError:  # the job row is gone (deleted meanwhile)
                    await session.rollback()
                    return None
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
            status: str | None = (await session.execute(update)).scalar_one_or_none()
            return status

    async def done_after(self, line: int, limit: int = PAGE) -> list[int]:
        """Lines already recorded, above `line`, in order (resumption skips them)."""
        async with self.db.sessionmaker() as session:
            found = await session.execute(
                sa.select(BatchResult.line)
                .where(BatchResult.batch_id == self.batch_id, BatchResult.line > line)
                .order_by(BatchResult.line)
                .limit(limit)
            )
            return list(found.scalars())

    async def records(self, ok: bool) -> AsyncIterator[tuple[int, str]]:
        """`(line, record)` of the successful (or failed) lines, in line order, page by page."""
        last = -1
        while True:
            async with self.db.sessionmaker() as session:
                found = await session.execute(
                    sa.select(BatchResult.line, BatchResult.record)
                    .where(
                        BatchResult.batch_id == self.batch_id,
                        BatchResult.ok.is_(ok),
                        BatchResult.line > last,
                    )
                    .order_by(BatchResult.line)
                    .limit(PAGE)
                )
                page = found.all()
            for line, record in page:
                yield line, record
            if len(page) < PAGE:
                return
            last = page[-1][0]

    async def failure_summary(self) -> list[dict[str, Any]]:
        """The most frequent failure reasons with their counts (the job's `errors`)."""
        async with self.db.sessionmaker() as session:
            count = sa.func.count().label("count")
            found = await session.execute(
                sa.select(BatchResult.error, count)
                .where(BatchResult.batch_id == self.batch_id, BatchResult.ok.is_(False))
                .group_by(BatchResult.error)
                .order_by(count.desc(), BatchResult.error)
                .limit(MAX_ERROR_GROUPS)
            )
            return [{"message": error or "failed", "count": int(n)} for error, n in found.all()]


class DoneLines:
    """Membership of ascending line numbers in the recorded results, read page by page: memory
    stays flat however many lines a job has."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self._page: deque[int] = deque()
        self._last = -1
        self._exhausted = False

    async def contains(self, line: int) -> bool:
        """Whether `line` is recorded; calls must come in ascending order of `line`."""
        while True:
            while self._page and self._page[0] < line:
                self._page.popleft()
            if self._page or self._exhausted:
                return bool(self._page) and self._page[0] == line
            fetched = await self.progress.done_after(self._last)
            if not fetched:
                self._exhausted = True
            else:
                self._last = fetched[-1]
                self._page.extend(fetched)


async def finish(
    session: AsyncSession,
    batch_id: str,
    *,
    status: str,
    output_file: str | None,
    error_file: str | None,
    errors: list[dict[str, Any]],
    failure_summary: list[dict[str, Any]] | None = None,
) -> bool:
    """Give the job its final state (in the job's completion transaction); False if the job was
    deleted or already final."""
    done = await session.execute(
        sa.update(BatchJob)
        .where(BatchJob.id == batch_id, BatchJob.status.not_in(list(BatchStatus.FINAL)))
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
