"""SQL of fine-tuning jobs, scoped to the caller's workspace: the list with its filters, a job's
events and checkpoints, status changes (fenced by the status they expect where a worker may
move the job at the same time), checkpoints, and the queue jobs behind jobs that look alive."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement, false
from sqlalchemy.dialects import postgresql, sqlite

from maestrale.core.clock import utcnow
from maestrale.core.jobs.tables import Job
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository
from maestrale.fine_tuning.estimates import Sample
from maestrale.fine_tuning.states import RUNNING, STARTED, STATUS_EVENT, SUCCESS
from maestrale.fine_tuning.tables import FineTuningCheckpoint, FineTuningEvent, FineTuningJob


class FineTuningRepository(WorkspaceRepository[FineTuningJob]):
    model = FineTuningJob

    def created_by(self, key_id: str | None) -> ColumnElement[bool]:
        """Jobs of the caller: of its user, or for a key bound to no user, of that key."""
        if self.tenant.user_id is not None:
            return FineTuningJob.created_by == self.tenant.user_id
        if key_id is None:
            return false()
        return sa.and_(FineTuningJob.created_by.is_(None), FineTuningJob.key_id == key_id)

    async def page(
        self,
        page: PageParams,
        *,
        model: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        creator: ColumnElement[bool] | None = None,
        status: str | None = None,
        suffix: str | None = None,
        nothing: bool = False,
    ) -> tuple[list[FineTuningJob], int]:
        """Newest first. `model` matches the name the job was created with or its catalog id;
        `nothing` makes the page empty (a filter no job can match)."""
        stmt = self.select()
        if nothing:
            stmt = stmt.where(false())
        if model is not None:
            stmt = stmt.where(sa.or_(FineTuningJob.model == model, FineTuningJob.root == model))
        if created_after is not None:
            stmt = stmt.where(FineTuningJob.created_at > created_after)
        if created_before is not None:
            stmt = stmt.where(FineTuningJob.created_at < created_before)
        if creator is not None:
            stmt = stmt.where(creator)
        if status is not None:
            stmt = stmt.where(FineTuningJob.status == status)
        if suffix is not None:
            stmt = stmt.where(FineTuningJob.suffix == suffix)
        total = await self.count(stmt)
        ordered = stmt.order_by(FineTuningJob.created_at.desc(), FineTuningJob.id.desc())
        return await self.list(ordered.offset(page.offset).limit(page.limit)), total

    async def events(self, row: FineTuningJob) -> list[FineTuningEvent]:
        found = await self.session.execute(
            sa.select(FineTuningEvent)
            .where(FineTuningEvent.job_id == row.id)
            .order_by(FineTuningEvent.id)
        )
        return list(found.scalars())

    async def checkpoints(self, row: FineTuningJob) -> list[FineTuningCheckpoint]:
        found = await self.session.execute(
            sa.select(FineTuningCheckpoint)
            .where(FineTuningCheckpoint.job_id == row.id)
            .order_by(FineTuningCheckpoint.step_number)
        )
        return list(found.scalars())

    async def record_status(self, row: FineTuningJob, status: str, **data: Any) -> None:
        """Give `row` its new status and record the event `status-updated` with
        `{"status", **data}` (flushed, not committed)."""
        now = utcnow()
        row.status = status
        row.modified_at = now
        self.session.add(
            FineTuningEvent(
                job_id=row.id, name=STATUS_EVENT, data={"status": status, **data}, created_at=now
            )
        )
        await self.session.flush()

    async def add_checkpoint(
        self,
        row: FineTuningJob,
        step: int,
        train_loss: float | None,
        valid_loss: float | None,
        accuracy: float | None,
    ) -> bool:
        """Record the checkpoint of `step`; False (and nothing written) when that step was
        recorded already (a resumed worker reporting it again)."""
        postgres = self.session.get_bind().dialect.name == "postgresql"
        dialect = postgresql if postgres else sqlite
        table = FineTuningCheckpoint.__table__
        insert = (
            dialect.insert(table)
            .values(
                job_id=row.id,
                step_number=step,
                train_loss=train_loss,
                valid_loss=valid_loss,
                valid_mean_token_accuracy=accuracy,
                created_at=utcnow(),
            )
            .on_conflict_do_nothing(index_elements=["job_id", "step_number"])
            .returning(table.c.step_number)
        )
        inserted = (await self.session.execute(insert)).scalar_one_or_none()
        return inserted is not None

    async def move(
        self, row: FineTuningJob, expected: Sequence[str], status: str, **data: Any
    ) -> bool:
        """Move `row` from one of the `expected` statuses to `status`, with its event; False
        (nothing written) when it was in none of them any more. `row` is refreshed either way."""
        now = utcnow()
        changed = await self.session.execute(
            sa.update(FineTuningJob)
            .where(
                FineTuningJob.id == row.id,
                FineTuningJob.workspace_id == self.tenant.workspace_id,
                FineTuningJob.status.in_(list(expected)),
            )
            .values(status=status, modified_at=now)
            .returning(FineTuningJob.id)
            .execution_options(synchronize_session=False)
        )
        done = changed.scalar_one_or_none() is not None
        if done:
            event = {"status": status, **data}
            self.session.add(
                FineTuningEvent(job_id=row.id, name=STATUS_EVENT, data=event, created_at=now)
            )
            await self.session.flush()
        await self.session.refresh(row)
        return done

    async def record_event(self, row: FineTuningJob, name: str, data: dict[str, Any]) -> None:
        """An event of `row` other than a status change (flushed, not committed)."""
        self.session.add(FineTuningEvent(job_id=row.id, name=name, data=data, created_at=utcnow()))
        await self.session.flush()

    async def speed_samples(self, root: str, limit: int) -> list[Sample]:
        """The figures of the last `limit` jobs on base `root` that succeeded in one attempt
        (a resumed job's times cover part of its tokens): start-up from STARTED to RUNNING,
        training from RUNNING to SUCCESS, and the training tokens their estimate counted."""
        jobs = list(
            (
                await self.session.execute(
                    self.select()
                    .where(FineTuningJob.root == root, FineTuningJob.status == SUCCESS)
                    .order_by(FineTuningJob.modified_at.desc())
                    .limit(limit)
                )
            ).scalars()
        )
        if not jobs:
            return []
        found = await self.session.execute(
            sa.select(FineTuningEvent.job_id, FineTuningEvent.data, FineTuningEvent.created_at)
            .where(
                FineTuningEvent.job_id.in_([job.id for job in jobs]),
                FineTuningEvent.name == STATUS_EVENT,
            )
            .order_by(FineTuningEvent.id)
        )
        times: dict[str, dict[str, list[datetime]]] = {}
        for job_id, data, created_at in found:
            status = str((data or {}).get("status"))
            times.setdefault(job_id, {}).setdefault(status, []).append(created_at)
        samples = []
        for job in jobs:
            at = times.get(job.id, {})
            started, running, done = at.get(STARTED, []), at.get(RUNNING, []), at.get(SUCCESS, [])
            tokens = (job.meta or {}).get("train_tokens")
            if len(started) != 1 or len(running) != 1 or not done or not isinstance(tokens, int):
                continue
            samples.append(
                Sample(
                    tokens,
                    (running[0] - started[0]).total_seconds(),
                    (done[-1] - running[0]).total_seconds(),
                )
            )
        return samples

    async def queue_jobs(self, ids: Sequence[str]) -> dict[str, Job]:
        """The queue jobs of those ids that belong to this workspace, by id."""
        if not ids:
            return {}
        found = await self.session.execute(
            sa.select(Job)
            .where(Job.id.in_(list(ids)), Job.workspace_id == self.tenant.workspace_id)
            .execution_options(populate_existing=True)
        )
        return {job.id: job for job in found.scalars()}
