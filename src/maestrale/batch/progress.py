"""The worker's hold on one batch job, by id: each read and each write is its own short unit of
work, so that nothing stays open while the job's lines call their models (docs/architecture.md §3).
The SQL is in `batch/repository.py` (the job's rows) and `files/repository.py` (its input files,
read in the job's workspace with its creator's rights).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.exc import IntegrityError

from maestrale.batch.repository import BatchRunRepository
from maestrale.batch.tables import BatchJob, BatchStatus
from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.files.repository import FileRepository

PAGE = 2000
MAX_ERROR_GROUPS = 20


class Progress:
    def __init__(self, db: Database, batch_id: str) -> None:
        self.db = db
        self.batch_id = batch_id

    async def start(self) -> BatchJob | None:
        """The job's row, RUNNING from now on if it was QUEUED; None if it was deleted."""
        async with self.db.transaction() as work:
            return await BatchRunRepository(work.session, self.batch_id).start()

    async def load(self) -> BatchJob | None:
        """The job's row as it is now (its counters); None if it was deleted."""
        async with self.db.transaction() as work:
            return await BatchRunRepository(work.session, self.batch_id).load()

    async def status(self) -> str | None:
        """The job's status now (a cancel request shows here); None once it was deleted."""
        async with self.db.transaction() as work:
            return await BatchRunRepository(work.session, self.batch_id).status()

    async def input_keys(self, batch: BatchJob) -> dict[str, str]:
        """Blob keys of the job's input files that still exist, looked up in the job's workspace
        as its creator would see them: an id of another workspace's file is not found."""
        tenant = Tenant(batch.organization_id, batch.workspace_id, batch.user_id)
        async with self.db.transaction() as work:
            files = FileRepository(work.session, tenant, batch.key_id)
            return await files.blob_keys(list(batch.input_files or []))

    async def write(self, rows: list[dict[str, Any]]) -> str | None:
        """Record results not recorded yet and advance the counters by them; the job's status
        after the write, or None if the job was deleted."""
        try:
            async with self.db.transaction() as work:
                return await BatchRunRepository(work.session, self.batch_id).record(rows)
        except IntegrityError:  # the job row is gone (deleted meanwhile): nothing was written
            return None

    async def done_after(self, line: int, limit: int = PAGE) -> list[int]:
        """Lines already recorded, above `line`, in order (resumption skips them)."""
        async with self.db.transaction() as work:
            return await BatchRunRepository(work.session, self.batch_id).done_after(line, limit)

    async def records(self, ok: bool) -> AsyncIterator[tuple[int, str]]:
        """`(line, record)` of the successful (or failed) lines, in line order, page by page
        (no transaction is open while the caller handles a page)."""
        last = -1
        while True:
            async with self.db.transaction() as work:
                page = await BatchRunRepository(work.session, self.batch_id).records(ok, last, PAGE)
            for line, record in page:
                yield line, record
            if len(page) < PAGE:
                return
            last = page[-1][0]

    async def failure_summary(self) -> list[dict[str, Any]]:
        """The most frequent failure reasons with their counts (the job's `errors`)."""
        async with self.db.transaction() as work:
            repo = BatchRunRepository(work.session, self.batch_id)
            return await repo.failure_summary(MAX_ERROR_GROUPS)

    async def fail(self, message: str) -> bool:
        """Give the job the final status FAILED with `message` as its error (its worker gave
        up); False if it was deleted or already final."""
        async with self.db.transaction() as work:
            return await BatchRunRepository(work.session, self.batch_id).finish(
                status=BatchStatus.FAILED,
                output_file=None,
                error_file=None,
                errors=[{"message": message[:2000], "count": 1}],
            )


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
