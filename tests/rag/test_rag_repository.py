"""The RAG groups' SQL on both databases: registrations of one name at once make one object,
counts past 32 bits, run reports at once all counted, the 64-bit bound of the total, the last
run chosen by time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from maestrale.core.auth.principal import Principal
from maestrale.core.db import Database
from maestrale.core.validation import INT64_MAX, FieldInvalid
from maestrale.rag import schemas as s
from maestrale.rag.service import DeploymentService, PipelineService
from tests.rag.support import deployment
from tests.support.app_fixtures import create_tenant

pytestmark = pytest.mark.both_databases("maestrale.rag.repository")


async def _principal(db: Database) -> Principal:
    tenant = (await create_tenant(db)).tenant
    return Principal("key-1", "standard", tenant.organization_id, tenant.workspace_id, None, None)


async def test_deployments(db: Database) -> None:
    principal = await _principal(db)

    async def register(*indexes: str) -> str:
        body = s.DeploymentRegister.model_validate(deployment("prod", *indexes))
        async with db.transaction() as work:
            return await DeploymentService(work.session, principal).register(body)

    ids = await asyncio.gather(*(register("docs", "faq") for _ in range(4)))
    assert len(set(ids)) == 1
    big = s.MetricsOnline(
        status="online",
        document_count=5_000_000_000,
        index_metrics=[s.IndexMetricsIn(name="faq", document_count=3_000_000_000)],
    )
    async with db.transaction() as work:
        summary = await DeploymentService(work.session, principal).report(ids[0], big)
    assert summary.document_count == 5_000_000_000
    assert [(i.name, i.document_count) for i in summary.deployment.indexes] == [
        ("docs", None),
        ("faq", 3_000_000_000),
    ]
    assert await register("faq", "new") == ids[0]
    async with db.transaction() as work:
        [listed] = await DeploymentService(work.session, principal).summaries()
    assert [(i.name, i.document_count) for i in listed.deployment.indexes] == [
        ("faq", 3_000_000_000),
        ("new", None),
    ]
    async with db.transaction() as work:
        await DeploymentService(work.session, principal).unregister(ids[0])
    async with db.transaction() as work:
        assert await DeploymentService(work.session, principal).summaries() == []


async def test_pipeline_runs(db: Database) -> None:
    principal = await _principal(db)

    async def register() -> s.PipelineOut:
        async with db.transaction() as work:
            body = s.PipelineRegister(name="nightly")
            return await PipelineService(work.session, principal).register(body)

    created = await asyncio.gather(*(register() for _ in range(3)))
    assert len({c.id for c in created}) == 1
    assert created[0].author_id == "key-1"  # a key with no user: the key

    async def run(day: int, chunks: int) -> s.PipelineOut:
        when = datetime(2026, 3, day, 12, tzinfo=UTC)
        async with db.transaction() as work:
            service = PipelineService(work.session, principal)
            return await service.record_run(
                created[0].id, s.RunInfoIn(execution_time=when, chunks_count=chunks)
            )

    await asyncio.gather(*(run(day, 2**40 + day) for day in (3, 1, 4, 2)))
    [config] = await _configs(db, principal)
    assert config.total_chunks_count == 4 * 2**40 + 10
    assert (config.last_run_time, config.last_run_chunks_count) == (
        datetime(2026, 3, 4, 12, tzinfo=UTC),
        2**40 + 4,
    )
    with pytest.raises(FieldInvalid):
        await run(5, INT64_MAX - config.total_chunks_count + 1)
    filled = await run(5, INT64_MAX - config.total_chunks_count)
    assert filled.total_chunks_count == INT64_MAX
    assert filled.last_run_time == datetime(2026, 3, 5, 12, tzinfo=UTC)


async def _configs(db: Database, principal: Principal) -> list[s.PipelineOut]:
    async with db.transaction() as work:
        return await PipelineService(work.session, principal).configurations()
