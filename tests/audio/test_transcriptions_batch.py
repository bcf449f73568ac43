"""Batch jobs on `/v1/audio/transcriptions`: each line (`file_url` or `file_id`, and the
endpoint's other fields, as JSON) is answered as the live endpoint would answer it, limited and
accounted as a batch call with its audio seconds, with no database connection held while the
model transcribes (the tests' strict guard would fail the line)."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import orjson
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.accounting.tables import UsageRecord
from tests.audio.speech import shipped, wer
from tests.batch.support import create_job, input_file, jsonl_file, run_jobs
from tests.support.app_fixtures import TenantKey, make_client

pytest.importorskip("av")

MODEL = "whisper-tiny-en"


def line(custom_id: str, **body: Any) -> str:
    return orjson.dumps({"custom_id": custom_id, "body": body}).decode()


async def test_transcription_lines(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    mp3, ogg = shipped()["report.mp3"], shipped()["report.ogg"]
    upload = await client.post(
        "/v1/files", data={"purpose": "audio"}, files={"file": ("report.mp3", mp3.data)}
    )
    assert upload.status_code == 200, upload.text
    async with make_client(app, other.key) as theirs:
        foreign = await theirs.post(
            "/v1/files", data={"purpose": "audio"}, files={"file": ("report.mp3", mp3.data)}
        )
    batch_file = await input_file(
        client,
        line("file", file_id=upload.json()["id"], timestamp_granularities=["segment"]),
        line("data-url", file_url="data:audio/ogg;base64," + base64.b64encode(ogg.data).decode()),
        line("loopback", file_url="http://127.0.0.1:9/clip.wav"),
        line("foreign", file_id=foreign.json()["id"]),
        line("nothing", language="en"),
        line("french", file_id=upload.json()["id"], language="fr"),
    )
    job = await create_job(
        client, endpoint="/v1/audio/transcriptions", model=MODEL, input_files=[batch_file]
    )
    await run_jobs(app, timeout=120)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["status"] == "SUCCESS", done
    assert (done["succeeded_requests"], done["failed_requests"]) == (2, 4)

    outputs = {o["custom_id"]: o["response"] for o in await jsonl_file(client, done["output_file"])}
    errors = {e["custom_id"]: e for e in await jsonl_file(client, done["error_file"])}
    from_file = outputs["file"]
    assert from_file["status_code"] == 200
    assert from_file["body"]["model"] == MODEL
    assert wer(mp3.text, from_file["body"]["text"]) <= 0.25
    assert from_file["body"]["segments"]
    assert from_file["body"]["usage"]["prompt_audio_seconds"] >= 3
    assert wer(ogg.text, outputs["data-url"]["body"]["text"]) <= 0.25
    assert errors["loopback"]["error"]["code"] == "url_not_allowed"
    assert errors["foreign"]["response"]["status_code"] == 404
    assert errors["nothing"]["error"]["code"] == "missing_audio"
    assert errors["french"]["response"]["status_code"] == 400

    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = (
            await work.session.execute(
                sa.select(UsageRecord).where(
                    UsageRecord.correlation_id == job["id"], UsageRecord.status_code == 200
                )
            )
        ).scalars()
        seconds = sorted(row.audio_seconds for row in rows if row.source == "batch")
    assert len(seconds) == 2 and all(3 < s < 5 for s in seconds)
