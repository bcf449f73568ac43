"""A fine-tuned model's artifact is served by its recorded format, not by its path: the gateway
hands a GGUF to chat and FIM requests (`weights`) and a classifier head to classifications, and
the migration that added the format gave existing rows the one their path implied."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from maestrale.catalog.artifacts import ArtifactFormat
from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.catalog.tables import FineTunedModel
from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.ids import new_id, short_token
from maestrale.core.migrate import upgrade_async
from maestrale.engines.types import ChatRequest
from maestrale.gateway.capabilities import CHAT
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from tests.support import databases

BASE = "maestrale-echo"


async def _register(
    db: Database, tenant: Tenant, artifact: str, artifact_format: ArtifactFormat
) -> FineTunedModel:
    async with db.transaction() as work:
        return await FineTunedModelRepository(work.session, tenant).register(
            f"ft:{BASE}:{short_token(4)}:{short_token(4)}",
            root=BASE,
            job=new_id(),
            model_type="completion",
            max_context_length=4096,
            capabilities={"completion_chat": True},
            classifier_targets=[],
            artifact=artifact,
            artifact_format=artifact_format,
        )


async def test_the_gateway_serves_an_artifact_by_its_format(
    app: FastAPI, tenant: Tenant, tmp_path: Path
) -> None:
    db: Database = app.state.services.db
    gateway: Gateway = app.state.services.gateway
    caller = Caller(tenant.organization_id, tenant.workspace_id)
    # Neither name says what the file is: only the recorded format does.
    weights = str(tmp_path / "weights.bin")
    head = str(tmp_path / "head.gguf")
    gguf = await _register(db, tenant, weights, ArtifactFormat.GGUF)
    classifier = await _register(db, tenant, head, ArtifactFormat.CLASSIFIER)

    call = await gateway.open(caller, gguf.id, CHAT, correlation_id="c1")
    assert call.upstream == BASE
    assert call.artifact_file(ArtifactFormat.GGUF) == weights
    assert call.artifact_file(ArtifactFormat.CLASSIFIER) is None
    request = ChatRequest(model="", messages=[{"role": "user", "content": "hi"}])
    await gateway.admit(call, 10)
    await gateway.chat(call, request)
    assert (request.model, request.weights) == (BASE, weights)

    call = await gateway.open(caller, classifier.id, CHAT, correlation_id="c2")
    assert call.artifact_file(ArtifactFormat.GGUF) is None
    assert call.artifact_file(ArtifactFormat.CLASSIFIER) == head
    request = ChatRequest(model="", messages=[{"role": "user", "content": "hi"}])
    await gateway.admit(call, 10)
    await gateway.chat(call, request)
    assert request.weights is None

    base = await gateway.open(caller, BASE, CHAT, correlation_id="c3")
    assert base.artifact is None


# (model_type, artifact, the format the migration gives it)
ROWS = [
    ("completion", "blob:fine_tuning/j1/model.gguf", "gguf"),
    ("classifier", "blob:fine_tuning/j2/classifier.json", "classifier"),
    ("completion", None, None),
    ("classifier", None, None),
    ("completion", "/models/upper.GGUF", None),
    ("completion", "/models/weights.bin", None),
    ("completion", "gguf", None),
]


async def _backfilled(url: str) -> None:
    await upgrade_async(url, "0017_console_sessions")
    engine = create_async_engine(url)
    org, workspace = str(uuid.uuid4()), str(uuid.uuid4())
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO organizations (id, name, created_at) "
                    "VALUES (:org, 'o', CURRENT_TIMESTAMP)"
                ),
                {"org": org},
            )
            await conn.execute(
                text(
                    "INSERT INTO workspaces (id, organization_id, name, is_default, created_at) "
                    "VALUES (:ws, :org, 'w', false, CURRENT_TIMESTAMP)"
                ),
                {"org": org, "ws": workspace},
            )
            for number, (model_type, artifact, _) in enumerate(ROWS):
                await conn.execute(
                    text(
                        "INSERT INTO fine_tuned_models (id, organization_id, workspace_id, root, "
                        "root_version, job, model_type, archived, max_context_length, "
                        "capabilities, classifier_targets, artifact, created_at) VALUES (:id, "
                        ":org, :ws, 'r', '', 'j', :type, false, 1, '{}', '[]', :artifact, "
                        "CURRENT_TIMESTAMP)"
                    ),
                    {
                        "id": f"ft:r:{number}",
                        "org": org,
                        "ws": workspace,
                        "type": model_type,
                        "artifact": artifact,
                    },
                )
        await upgrade_async(url)
        async with engine.connect() as conn:
            found = await conn.execute(text("SELECT id, artifact_format FROM fine_tuned_models"))
            formats: dict[str, str | None] = {row_id: value for row_id, value in found.all()}
    finally:
        await engine.dispose()
    assert formats == {f"ft:r:{number}": row[2] for number, row in enumerate(ROWS)}


async def test_the_migration_gives_existing_models_their_format_on_sqlite(tmp_path: Path) -> None:
    await _backfilled(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}")


@pytest.mark.skipif(not os.environ.get(databases.POSTGRES_ENV), reason="needs Postgres")
async def test_the_migration_gives_existing_models_their_format_on_postgres() -> None:
    url = await databases.create_postgres_database(migrate=False)
    try:
        await _backfilled(url)
    finally:
        await databases.drop_postgres_database(url)
