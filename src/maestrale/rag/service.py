"""The rules of the RAG groups. A deployment or a configuration is registered by name: the same
name in the workspace is the same object (same id), its definition replaced. Metrics and run
reports only ever come from the caller: nothing here calls a deployment."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import Conflict
from maestrale.core.ids import new_id
from maestrale.core.validation import FieldInvalid
from maestrale.rag import schemas as s
from maestrale.rag.errors import DeploymentNotFound, PipelineNotFound
from maestrale.rag.repository import DeploymentRepository, PipelineRepository
from maestrale.rag.tables import RagDeployment, RagDeploymentIndex, RagIngestionPipeline


def caller_id(principal: Principal) -> str:
    """Who registers: the key's user, else the key itself (a key made for a service)."""
    return principal.user_id or principal.key_id


def _raced(what: str, name: str) -> Conflict:
    # Removed by another request between our insert (which found the name taken) and our read.
    return Conflict(f"{what} {name!r} was removed while registering it; retry")


def _not_found(deployment_id: str) -> DeploymentNotFound:
    return DeploymentNotFound(f"no deployment {deployment_id!r} in this workspace")


class DeploymentService:
    def __init__(self, session: AsyncSession, principal: Principal) -> None:
        self.repo = DeploymentRepository(session, Tenant.of(principal))
        self.caller = caller_id(principal)

    async def register(self, body: s.DeploymentRegister) -> str:
        """Create the deployment, or replace the definition of the one of that name: its
        indexes are matched by name (an index keeps its id and its last count), those no
        longer named are removed. The status is the one sent; the creator stays the first."""
        now = utcnow()
        spec = body.deployment
        definition = {
            "type": spec.type,
            "vespa_version": spec.vespa_version,
            "query_url": spec.query_url,
            "status": body.status,
            "modified_at": now,
        }
        new = {
            "id": new_id(),
            "name": body.name,
            "creator_id": self.caller,
            "document_count": 0,
            "created_at": now,
            **definition,
        }
        row = await self.repo.claim(new)
        if row is None:
            raise _raced("deployment", body.name)
        for key, value in definition.items():
            setattr(row, key, value)
        existing = {index.name: index for index in await self.repo.indexes(row.id)}
        names = {index.name for index in spec.indexes}
        await self.repo.drop_indexes(i for name, i in existing.items() if name not in names)
        rows = []
        for position, index in enumerate(spec.indexes):
            target = existing.get(index.name)
            if target is None:
                target = RagDeploymentIndex(id=new_id(), deployment_id=row.id, name=index.name)
            target.position = position
            target.fields = [field.model_dump() for field in index.fields]
            target.sd = index.sd
            target.embedding_dimensions = index.embedding_dimensions
            rows.append(target)
        await self.repo.add_indexes(rows)
        return str(row.id)

    async def summaries(self) -> list[s.DeploymentSummary]:
        """Every deployment of the workspace, oldest first."""
        rows = await self.repo.oldest_first()
        indexes = await self.repo.index_summaries()
        return [_summary(row, indexes[row.id]) for row in rows]

    async def report(
        self, deployment_id: str, metrics: s.MetricsOnline | s.MetricsOffline
    ) -> s.DeploymentSummary:
        """Online: the deployment's document count and those of the indexes named (each an
        index of the deployment; the others keep theirs). Offline: the status only, or with
        `clear_metrics` the counts as before any report (0, and None per index)."""
        changes: dict[str, Any] = {"status": metrics.status, "modified_at": utcnow()}
        clear = isinstance(metrics, s.MetricsOffline) and metrics.clear_metrics
        if isinstance(metrics, s.MetricsOnline):
            changes["document_count"] = metrics.document_count
        elif clear:
            changes["document_count"] = 0
        if not await self.repo.touch(deployment_id, changes):
            raise _not_found(deployment_id)
        if isinstance(metrics, s.MetricsOnline):
            await self._set_counts(deployment_id, metrics.index_metrics)
        elif clear:
            await self.repo.clear_counts(deployment_id)
        row = await self.repo.get(deployment_id)
        assert row is not None  # updated above, in this transaction
        indexes = await self.repo.index_summaries(deployment_id)
        return _summary(row, indexes[deployment_id])

    async def _set_counts(self, deployment_id: str, metrics: list[s.IndexMetricsIn]) -> None:
        ids = await self.repo.index_ids(deployment_id)
        for position, item in enumerate(metrics):
            if item.name not in ids:
                raise FieldInvalid(
                    ["body", "index_metrics", position, "name"],
                    f"the deployment has no index named {item.name!r}",
                )
        counts = {ids[item.name]: item.document_count for item in metrics}
        await self.repo.set_counts(deployment_id, counts)

    async def unregister(self, deployment_id: str) -> None:
        if not await self.repo.remove(deployment_id):
            raise _not_found(deployment_id)


def _summary(row: RagDeployment, indexes: list[Any]) -> s.DeploymentSummary:
    return s.DeploymentSummary(
        id=row.id,
        name=row.name,
        creator_id=row.creator_id,
        document_count=row.document_count,
        status=row.status,
        created_at=row.created_at,
        modified_at=row.modified_at,
        deployment=s.VespaDeploymentSummary(
            indexes=[
                s.IndexSummary(id=id_, name=name, document_count=count)
                for id_, name, count in indexes
            ]
        ),
    )


class PipelineService:
    def __init__(self, session: AsyncSession, principal: Principal) -> None:
        self.repo = PipelineRepository(session, Tenant.of(principal))
        self.caller = caller_id(principal)

    async def configurations(self) -> list[s.PipelineOut]:
        """Every configuration of the workspace, oldest first."""
        return [_pipeline(row) for row in await self.repo.oldest_first()]

    async def register(self, body: s.PipelineRegister) -> s.PipelineOut:
        """Create the configuration, or replace the definition of the one of that name (what
        is not sent is cleared); its author is the caller, its run statistics stay."""
        now = utcnow()
        targets = body.target_indexes
        definition = {
            "author_id": self.caller,
            "pipeline_composition": body.pipeline_composition,
            "target_indexes": None if targets is None else [t.model_dump() for t in targets],
            "modified_at": now,
        }
        new = {
            "id": new_id(),
            "name": body.name,
            "created_at": now,
            "last_run_chunks_count": 0,
            "total_chunks_count": 0,
            **definition,
        }
        row = await self.repo.claim(new)
        if row is None:
            raise _raced("ingestion pipeline configuration", body.name)
        for key, value in definition.items():
            setattr(row, key, value)
        await self.repo.session.flush()
        return _pipeline(row)

    async def record_run(self, pipeline_id: str, run: s.RunInfoIn) -> s.PipelineOut:
        """Add a run's chunks to the total; the run is the last one unless a later one was
        reported first (reports may arrive out of order)."""
        row = await self.repo.get(pipeline_id)
        if row is None:
            raise PipelineNotFound(
                f"no ingestion pipeline configuration {pipeline_id!r} in this workspace"
            )
        if not await self.repo.record_run(row, as_utc(run.execution_time), run.chunks_count):
            raise FieldInvalid(
                ["body", "chunks_count"],
                "the configuration's total chunk count would pass 2**63 - 1",
                "int_too_large",
            )
        return _pipeline(row)


def _pipeline(row: RagIngestionPipeline) -> s.PipelineOut:
    targets = row.target_indexes
    return s.PipelineOut(
        id=row.id,
        author_id=row.author_id,
        name=row.name,
        created_at=row.created_at,
        modified_at=row.modified_at,
        last_run_time=row.last_run_time,
        last_run_chunks_count=row.last_run_chunks_count,
        total_chunks_count=row.total_chunks_count,
        pipeline_composition=row.pipeline_composition,
        target_indexes=None if targets is None else [s.TargetIndexRef(**t) for t in targets],
    )
