"""A batch job reads its input files in its own workspace only: an input id that names another
workspace's file (a row written by hand, an id reused across workspaces) is not found, however
the id got there, and the job fails instead of answering from that file."""

from __future__ import annotations

import httpx
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.batch.progress import Progress
from maestrale.batch.tables import BatchJob
from maestrale.core.db import Database
from tests.batch.support import chat_line, create_job, input_file, run_jobs
from tests.support.app_fixtures import TenantKey, make_client


async def _point_at(app: FastAPI, batch_id: str, file_ids: list[str]) -> BatchJob:
    """Rewrite the job's input files behind the API's back."""
    db: Database = app.state.services.db
    async with db.transaction() as work:
        await work.session.execute(
            sa.update(BatchJob).where(BatchJob.id == batch_id).values(input_files=file_ids)
        )
        row = await work.session.get(BatchJob, batch_id)
        assert row is not None
        return row


async def test_input_keys_are_read_in_the_jobs_workspace(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    mine = await input_file(client, chat_line("a", "mine"))
    async with make_client(app, other.key) as theirs:
        foreign = await input_file(theirs, chat_line("b", "their secret"))
    job = await create_job(client, input_files=[mine])
    row = await _point_at(app, job["id"], [mine, foreign])
    keys = await Progress(app.state.services.db, job["id"]).input_keys(row)
    assert list(keys) == [mine]


async def test_a_job_cannot_run_another_workspaces_file(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    mine = await input_file(client, chat_line("a", "mine"))
    async with make_client(app, other.key) as theirs:
        foreign = await input_file(theirs, chat_line("b", "their secret"))
    job = await create_job(client, input_files=[mine])
    await _point_at(app, job["id"], [foreign])
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["status"] == "FAILED"
    assert (done["completed_requests"], done["output_file"], done["error_file"]) == (0, None, None)
    assert f"input file {foreign} was deleted" in done["errors"][0]["message"]
