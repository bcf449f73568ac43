"""All SQL of evaluation runs, their records and scores, scoped to the caller's workspace (a
score has no workspace of its own: it is reached through its run, which has one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, asc, desc, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.evaluations.runs.filters import FieldSort, ScoreSort
from maestrale.observability.evaluations.tables import EvalRecord, EvalRun, EvalRunTag, EvalScore
from maestrale.telemetry.tables import TelemetrySpan


async def run_tenant(session: AsyncSession, run_id: str) -> Tenant | None:
    """The workspace of a run, for its job (which holds only the run's id)."""
    stmt = select(EvalRun.organization_id, EvalRun.workspace_id).where(EvalRun.id == run_id)
    row = (await session.execute(stmt)).one_or_none()
    return None if row is None else Tenant(row[0], row[1])


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


class RunRepository(WorkspaceRepository[EvalRun]):
    model = EvalRun

    @property
    def dialect(self) -> str:
        bind = self.session.get_bind()
        return bind.dialect.name

    def alive(self) -> Select[EvalRun]:
        return self.select().where(EvalRun.deleted_at.is_(None))

    async def alive_by_id(self, run_id: str) -> EvalRun | None:
        found = await self.list(self.alive().where(EvalRun.id == run_id))
        return found[0] if found else None

    async def add_tags(self, run_id: str, tags: Sequence[str]) -> None:
        if tags:
            await self.session.execute(
                insert(EvalRunTag), [{"run_id": run_id, "tag": t} for t in tags]
            )

    async def search(
        self, conditions: Sequence[ColumnElement[bool]], offset: int, limit: int
    ) -> tuple[list[EvalRun], int]:
        """A page of the live runs meeting every condition, newest first, and their total."""
        stmt = self.alive().where(*conditions)
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(EvalRun.created_at), desc(EvalRun.id))
        return await self.list(stmt.offset(offset).limit(limit)), count

    async def set_status(self, run_id: str, status: str) -> None:
        await self.session.execute(
            update(EvalRun)
            .where(EvalRun.id == run_id, EvalRun.workspace_id == self.tenant.workspace_id)
            .values(status=status, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )

    async def flush(self) -> None:
        await self.session.flush()

    async def spans(self, condition: ColumnElement[bool], limit: int) -> list[TelemetrySpan]:
        """The workspace's spans meeting the condition, newest first."""
        stmt = (
            select(TelemetrySpan)
            .where(TelemetrySpan.workspace_id == self.tenant.workspace_id, condition)
            .order_by(desc(TelemetrySpan.start_ns), desc(TelemetrySpan.id))
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).scalars())

    # -- records ----------------------------------------------------------------------------
    def records(self, run_id: str) -> Select[EvalRecord]:
        return select(EvalRecord).where(
            EvalRecord.workspace_id == self.tenant.workspace_id, EvalRecord.run_id == run_id
        )

    async def add_records(self, run: EvalRun, inputs: Sequence[dict[str, Any]]) -> None:
        """The run's records, in this order (each: id, dataset_record_id, input)."""
        rows = [
            {
                **row,
                "run_id": run.id,
                "position": i,
                "organization_id": self.tenant.organization_id,
                "workspace_id": self.tenant.workspace_id,
                "created_at": run.created_at,
                "updated_at": run.created_at,
            }
            for i, row in enumerate(inputs)
        ]
        await self.session.execute(insert(EvalRecord), rows)

    async def record(self, run_id: str, record_id: str) -> EvalRecord | None:
        stmt = self.records(run_id).where(EvalRecord.id == record_id)
        found: EvalRecord | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return found

    async def next_unscored(self, run_id: str) -> EvalRecord | None:
        """The first record, in order, without its scores."""
        stmt = self.records(run_id).where(EvalRecord.scored_at.is_(None))
        stmt = stmt.order_by(EvalRecord.position).limit(1)
        found: EvalRecord | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return found

    async def save_scores(self, run_id: str, record_id: str, scores: list[dict[str, Any]]) -> bool:
        """Mark the record scored and add its scores, unless it was scored already (then
        nothing changes and False is returned): a record is never scored twice."""
        now = utcnow()
        marked = await self.session.execute(
            update(EvalRecord)
            .where(
                EvalRecord.workspace_id == self.tenant.workspace_id,
                EvalRecord.run_id == run_id,
                EvalRecord.id == record_id,
                EvalRecord.scored_at.is_(None),
            )
            .values(scored_at=now, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        if getattr(marked, "rowcount", 0) != 1:
            return False
        rows = [{**s, "run_id": run_id, "record_id": record_id, "created_at": now} for s in scores]
        if rows:
            await self.session.execute(insert(EvalScore), rows)
        return True

    async def record_page(
        self,
        run_id: str,
        conditions: Sequence[ColumnElement[bool]],
        sort: FieldSort | ScoreSort | None,
        offset: int,
        limit: int,
    ) -> tuple[list[EvalRecord], int]:
        """A page of the run's records meeting the conditions, in run order unless sorted."""
        stmt = self.records(run_id).where(*conditions)
        count = int(
            (
                await self.session.execute(
                    select(func.count()).select_from(stmt.order_by(None).subquery())
                )
            ).scalar_one()
        )
        direction = desc if sort is not None and sort.direction == "desc" else asc
        if isinstance(sort, FieldSort):
            stmt = stmt.order_by(direction(EvalRecord.created_at), direction(EvalRecord.position))
        elif isinstance(sort, ScoreSort):
            number = (
                select(EvalScore.number)
                .where(
                    EvalScore.record_id == EvalRecord.id,
                    EvalScore.evaluator_name == sort.evaluator_name,
                )
                .limit(1)
                .scalar_subquery()
            )
            stmt = stmt.order_by(direction(number).nulls_last(), EvalRecord.position)
        else:
            stmt = stmt.order_by(EvalRecord.position)
        rows = (await self.session.execute(stmt.offset(offset).limit(limit))).scalars()
        return list(rows), count

    async def scores_of(self, run_id: str, record_ids: Sequence[str]) -> list[EvalScore]:
        """The scores of these records of the run."""
        stmt = select(EvalScore).where(*self._scores(run_id, [EvalRecord.id.in_(list(record_ids))]))
        return list((await self.session.execute(stmt.order_by(EvalScore.id))).scalars())

    # -- statistics -------------------------------------------------------------------------
    def _scores(self, run_id: str, conditions: Sequence[ColumnElement[bool]]) -> Any:
        records = select(EvalRecord.id).where(
            EvalRecord.workspace_id == self.tenant.workspace_id,
            EvalRecord.run_id == run_id,
            *conditions,
        )
        return EvalScore.run_id == run_id, EvalScore.record_id.in_(records)

    async def numeric_stats(
        self, run_id: str, conditions: Sequence[ColumnElement[bool]]
    ) -> dict[str, tuple[int, float | None, float | None, float | None, float | None]]:
        """Per evaluator: the count, avg, min, max and mean of squares of its numeric scores."""
        n = EvalScore.number
        stmt = (
            select(
                EvalScore.evaluator_name,
                func.count(n),
                func.avg(n),
                func.min(n),
                func.max(n),
                func.avg(n * n),
            )
            .where(*self._scores(run_id, conditions), n.is_not(None))
            .group_by(EvalScore.evaluator_name)
        )
        out = {}
        for name, count, avg, low, high, squares in (await self.session.execute(stmt)).all():
            out[name] = (int(count), _float(avg), _float(low), _float(high), _float(squares))
        return out

    async def label_counts(
        self, run_id: str, conditions: Sequence[ColumnElement[bool]]
    ) -> list[tuple[str, str, int]]:
        """(evaluator, label, how many scores gave it) of the labelled scores."""
        stmt = (
            select(EvalScore.evaluator_name, EvalScore.label, func.count())
            .where(*self._scores(run_id, conditions), EvalScore.label.is_not(None))
            .group_by(EvalScore.evaluator_name, EvalScore.label)
        )
        return [(r[0], str(r[1]), int(r[2])) for r in (await self.session.execute(stmt)).all()]

    async def status_counts(
        self, run_id: str, conditions: Sequence[ColumnElement[bool]]
    ) -> list[tuple[str, str, int]]:
        """(evaluator, score status, how many) of the scores."""
        stmt = (
            select(EvalScore.evaluator_name, EvalScore.status, func.count())
            .where(*self._scores(run_id, conditions))
            .group_by(EvalScore.evaluator_name, EvalScore.status)
        )
        return [(r[0], r[1], int(r[2])) for r in (await self.session.execute(stmt)).all()]
