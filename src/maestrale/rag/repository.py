"""SQL of the RAG groups, scoped to the caller's workspace. A deployment's indexes are reached
only through a deployment found in it.

Every write of a deployment or a configuration starts with a write to its row (an insert that
does nothing when the name is taken, an update, a delete): on Postgres that locks the row, on
SQLite it takes the database's write lock (a read first would run outside the transaction, and
another writer could slip in between). So two writes of one object never interleave."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, case, delete, literal, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.db import UTCDateTime
from maestrale.core.repository import WorkspaceRepository
from maestrale.core.validation import INT64_MAX
from maestrale.rag.tables import RagDeployment, RagDeploymentIndex, RagIngestionPipeline


async def _insert_absent(session: AsyncSession, table: Any, values: dict[str, Any]) -> None:
    """Insert a named row unless the workspace has that name already (then nothing)."""
    postgres = session.get_bind().dialect.name == "postgresql"
    dialect: Any = postgresql if postgres else sqlite
    stmt = dialect.insert(table).values(**values)
    await session.execute(stmt.on_conflict_do_nothing(index_elements=["workspace_id", "name"]))


class DeploymentRepository(WorkspaceRepository[RagDeployment]):
    model = RagDeployment

    async def claim(self, new: dict[str, Any]) -> RagDeployment | None:
        """The deployment named `new["name"]`, inserted from `new` (its columns) when the
        workspace has none, and locked; None when it was removed meanwhile."""
        values = {
            **new,
            "organization_id": self.tenant.organization_id,
            "workspace_id": self.tenant.workspace_id,
        }
        await _insert_absent(self.session, RagDeployment, values)
        stmt = self.select().where(RagDeployment.name == new["name"]).with_for_update()
        row: RagDeployment | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def touch(self, deployment_id: str, values: dict[str, Any]) -> bool:
        """Set `values` on the deployment (False: the workspace has no such deployment)."""
        result = await self.session.execute(
            update(RagDeployment)
            .where(
                RagDeployment.id == deployment_id,
                RagDeployment.workspace_id == self.tenant.workspace_id,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        return getattr(result, "rowcount", 0) == 1

    async def oldest_first(self) -> list[RagDeployment]:
        return await self.list(self.select().order_by(RagDeployment.created_at, RagDeployment.id))

    async def index_summaries(self, deployment_id: str | None = None) -> dict[str, list[Any]]:
        """`{deployment_id: [(id, name, document_count)...]}` of the workspace's deployments (or
        of one), each in registration order; columns, not entities: a listing loads no `sd`."""
        stmt = (
            select(
                RagDeploymentIndex.deployment_id,
                RagDeploymentIndex.id,
                RagDeploymentIndex.name,
                RagDeploymentIndex.document_count,
            )
            .join(RagDeployment, RagDeployment.id == RagDeploymentIndex.deployment_id)
            .where(RagDeployment.workspace_id == self.tenant.workspace_id)
            .order_by(RagDeploymentIndex.deployment_id, RagDeploymentIndex.position)
        )
        if deployment_id is not None:
            stmt = stmt.where(RagDeploymentIndex.deployment_id == deployment_id)
        found: dict[str, list[Any]] = defaultdict(list)
        for owner, *index in await self.session.execute(stmt):
            found[owner].append(tuple(index))
        return found

    async def indexes(self, deployment_id: str) -> list[RagDeploymentIndex]:
        stmt = (
            select(RagDeploymentIndex)
            .where(RagDeploymentIndex.deployment_id == deployment_id)
            .order_by(RagDeploymentIndex.position)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def add_indexes(self, rows: list[RagDeploymentIndex]) -> None:
        self.session.add_all(rows)
        await self.session.flush()

    async def drop_indexes(self, rows: Iterable[RagDeploymentIndex]) -> None:
        for row in rows:
            await self.session.delete(row)
        await self.session.flush()

    async def index_ids(self, deployment_id: str) -> dict[str, str]:
        """`{name: id}` of the deployment's indexes."""
        stmt = select(RagDeploymentIndex.name, RagDeploymentIndex.id).where(
            RagDeploymentIndex.deployment_id == deployment_id
        )
        return {name: id_ for name, id_ in await self.session.execute(stmt)}

    async def set_counts(self, deployment_id: str, counts: dict[str, int]) -> None:
        """The document count of each index in `counts` (by id), in one statement."""
        if not counts:
            return
        # Typed binds: a count past 2**31 is no INTEGER parameter on Postgres.
        value = case(
            *(
                (RagDeploymentIndex.id == id_, literal(count, BigInteger()))
                for id_, count in counts.items()
            ),
            else_=RagDeploymentIndex.document_count,
        )
        await self.session.execute(
            update(RagDeploymentIndex)
            .where(
                RagDeploymentIndex.deployment_id == deployment_id,
                RagDeploymentIndex.id.in_(list(counts)),
            )
            .values(document_count=value)
            .execution_options(synchronize_session=False)
        )

    async def clear_counts(self, deployment_id: str) -> None:
        await self.session.execute(
            update(RagDeploymentIndex)
            .where(RagDeploymentIndex.deployment_id == deployment_id)
            .values(document_count=None)
            .execution_options(synchronize_session=False)
        )

    async def remove(self, deployment_id: str) -> bool:
        """The deployment, then its indexes (SQLite may run without cascading keys); False when
        the workspace has no such deployment."""
        result = await self.session.execute(
            delete(RagDeployment).where(
                RagDeployment.id == deployment_id,
                RagDeployment.workspace_id == self.tenant.workspace_id,
            )
        )
        if getattr(result, "rowcount", 0) != 1:
            return False
        await self.session.execute(
            delete(RagDeploymentIndex).where(RagDeploymentIndex.deployment_id == deployment_id)
        )
        return True


class PipelineRepository(WorkspaceRepository[RagIngestionPipeline]):
    model = RagIngestionPipeline

    async def claim(self, new: dict[str, Any]) -> RagIngestionPipeline | None:
        """The configuration named `new["name"]`, inserted from `new` (its columns) when the
        workspace has none, and locked."""
        values = {
            **new,
            "organization_id": self.tenant.organization_id,
            "workspace_id": self.tenant.workspace_id,
        }
        await _insert_absent(self.session, RagIngestionPipeline, values)
        stmt = self.select().where(RagIngestionPipeline.name == new["name"]).with_for_update()
        row: RagIngestionPipeline | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def oldest_first(self) -> list[RagIngestionPipeline]:
        table = RagIngestionPipeline
        return await self.list(self.select().order_by(table.created_at, table.id))

    async def record_run(self, row: RagIngestionPipeline, when: datetime, chunks: int) -> bool:
        """Add a run of `chunks` chunks to the totals in one statement (concurrent reports all
        count); it becomes the last run unless a later one was reported already. False, and
        nothing written, when the total would pass a signed 64-bit integer (SQLite would turn
        it into a float, Postgres refuse it)."""
        table = RagIngestionPipeline
        at = literal(when, UTCDateTime())
        count = literal(chunks, BigInteger())
        latest = or_(table.last_run_time.is_(None), table.last_run_time <= at)
        result = await self.session.execute(
            update(table)
            .where(
                table.id == row.id,
                table.workspace_id == self.tenant.workspace_id,
                table.total_chunks_count <= INT64_MAX - chunks,
            )
            .values(
                total_chunks_count=table.total_chunks_count + count,
                last_run_time=case((latest, at), else_=table.last_run_time),
                last_run_chunks_count=case((latest, count), else_=table.last_run_chunks_count),
            )
            .execution_options(synchronize_session=False)
        )
        if getattr(result, "rowcount", 0) != 1:
            return False
        await self.session.refresh(row)
        return True
