"""All SQL of pipelines: the pipelines and their configs (scoped to the caller's workspace), the
watermark their job moves, and the spans it reads past it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, desc, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.repository import WorkspaceRepository
from maestrale.observability.pipelines.tables import Pipeline, PipelineConfig
from maestrale.telemetry.tables import TelemetrySpan


async def pipeline_tenant(session: AsyncSession, pipeline_id: str) -> Tenant | None:
    """The workspace of a pipeline, for its job (which holds only the pipeline's id)."""
    stmt = select(Pipeline.organization_id, Pipeline.workspace_id).where(Pipeline.id == pipeline_id)
    row = (await session.execute(stmt)).one_or_none()
    return None if row is None else Tenant(row[0], row[1])


class PipelineRepository(WorkspaceRepository[Pipeline]):
    model = Pipeline

    @property
    def dialect(self) -> str:
        return self.session.get_bind().dialect.name

    async def slug_taken(self, slug: str) -> bool:
        return await self.count(self.select().where(Pipeline.slug == slug)) > 0

    async def page(
        self, enabled: bool | None, q: str | None, offset: int, limit: int
    ) -> tuple[list[Pipeline], int]:
        """A page of the pipelines, newest first, and their total."""
        stmt = self.select()
        if enabled is not None:
            stmt = stmt.where(Pipeline.enabled.is_(enabled))
        if q:
            stmt = stmt.where(Pipeline.name.icontains(q, autoescape=True))
        count = await self.count(stmt)
        stmt = stmt.order_by(desc(Pipeline.created_at), desc(Pipeline.id))
        return await self.list(stmt.offset(offset).limit(limit)), count

    def _configs(self) -> Select[PipelineConfig]:
        return select(PipelineConfig).where(PipelineConfig.workspace_id == self.tenant.workspace_id)

    async def configs_of(self, pipeline_ids: Sequence[str]) -> dict[str, list[PipelineConfig]]:
        """The configs of these pipelines, each list in its pipeline's order."""
        found: dict[str, list[PipelineConfig]] = {pid: [] for pid in pipeline_ids}
        if not pipeline_ids:
            return found
        stmt = self._configs().where(PipelineConfig.pipeline_id.in_(list(pipeline_ids)))
        rows = (await self.session.execute(stmt.order_by(PipelineConfig.position))).scalars()
        for row in rows:
            found[row.pipeline_id].append(row)
        return found

    async def configs_by_slug(self, slugs: Sequence[str]) -> list[PipelineConfig]:
        stmt = self._configs().where(PipelineConfig.slug.in_(list(slugs)))
        return list((await self.session.execute(stmt)).scalars())

    async def config_slugs_like(self, prefix: str) -> set[str]:
        """The config slugs of the workspace that start with `prefix`."""
        stmt = select(PipelineConfig.slug).where(
            PipelineConfig.workspace_id == self.tenant.workspace_id,
            PipelineConfig.slug.startswith(prefix, autoescape=True),
        )
        return set((await self.session.execute(stmt)).scalars())

    async def set_configs(
        self, pipeline_id: str, configs: list[PipelineConfig], current: list[PipelineConfig]
    ) -> None:
        """The pipeline's configs become `configs` (new rows, or rows of `current` changed in
        place); the rows of `current` not among them are deleted."""
        for old in current:
            if all(old is not c for c in configs):
                await self.session.delete(old)
        await self.session.flush()
        for config in configs:
            config.organization_id = self.tenant.organization_id
            config.workspace_id = self.tenant.workspace_id
            config.pipeline_id = pipeline_id
            self.session.add(config)
        await self.session.flush()

    async def remove(self, pipeline: Pipeline) -> None:
        await self.session.delete(pipeline)
        await self.session.flush()

    async def advance(self, pipeline_id: str, seen: int, to: int) -> bool:
        """Move the watermark from `seen` to `to`; False if it is no longer at `seen` (another
        run moved it, or the pipeline is gone): the caller then writes nothing."""
        moved = await self.session.execute(
            update(Pipeline)
            .where(
                Pipeline.workspace_id == self.tenant.workspace_id,
                Pipeline.id == pipeline_id,
                Pipeline.last_span_row_id == seen,
            )
            .values(last_span_row_id=to)
            .returning(Pipeline.id)
            .execution_options(synchronize_session=False)
        )
        return moved.scalar_one_or_none() is not None

    async def set_job(self, pipeline_id: str, job_id: str | None) -> None:
        await self.session.execute(
            update(Pipeline)
            .where(Pipeline.workspace_id == self.tenant.workspace_id, Pipeline.id == pipeline_id)
            .values(job_id=job_id)
            .execution_options(synchronize_session=False)
        )

    async def latest_span_row_id(self) -> int:
        """The newest span row of the workspace (0: none): a new pipeline starts past it."""
        stmt = select(TelemetrySpan.id).where(
            TelemetrySpan.workspace_id == self.tenant.workspace_id
        )
        found = await self.session.execute(stmt.order_by(desc(TelemetrySpan.id)).limit(1))
        return int(found.scalar_one_or_none() or 0)

    async def spans_after(
        self, watermark: int, where: ColumnElement[bool], limit: int, horizon: int
    ) -> tuple[list[TelemetrySpan], int]:
        """Up to `limit` spans past the watermark, up to row `horizon`, that match `where`,
        oldest first, and the row id the watermark may move to: the last of them, or, when fewer
        matched, the horizon (spans that do not match are passed over once, not read again).
        The horizon is the newest row there was when the previous run began: row ids are taken
        when a writer inserts, not when it commits, so a row below the newest one seen now may
        still be uncommitted (another process's writer); a run later it is there."""
        if horizon <= watermark:
            return [], watermark
        stmt = (
            select(TelemetrySpan)
            .where(
                TelemetrySpan.workspace_id == self.tenant.workspace_id,
                TelemetrySpan.id > watermark,
                TelemetrySpan.id <= horizon,
                where,
            )
            .order_by(TelemetrySpan.id)
            .limit(limit)
        )
        rows = list((await self.session.execute(stmt)).scalars())
        return rows, rows[-1].id if len(rows) == limit else horizon

    async def flush(self) -> None:
        await self.session.flush()


def span_values(span: TelemetrySpan) -> dict[str, Any]:
    """What the job keeps of a span once its session is closed."""
    return {
        "row_id": span.id,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "name": span.name,
        "duration_ns": span.duration_ns,
        "response_id": span.response_id,
        "conversation_id": span.conversation_id,
        "user_id": span.user_id,
        "service_account_id": span.service_account_id,
        "attributes": dict(span.attributes or {}),
        "resource_attributes": dict(span.resource_attributes or {}),
    }
