"""Batch jobs run their lines through the live endpoints' code path: the same answers, the same
errors, accounted like any call; results land once each in the output or the error file."""

from __future__ import annotations

import httpx
import orjson
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from tests.batch.support import ECHO, chat_line, create_job, input_file, jsonl_file, run_jobs


async def test_chat_batch_success_and_failures(app: FastAPI, client: httpx.AsyncClient) -> None:
    file_id = await input_file(
        client,
        chat_line("ok-1", "hello"),
        chat_line("ok-2", "/respond exactly this", model="ignored-model"),
        chat_line("upstream", "/fail 400"),
        '{"custom_id": "invalid", "body": {"messages": []}}',
        '{"custom_id": "schema", "body": {"messages": "nope"}}',
        "{this is not json",
        '{"custom_id": "no-body"}',
    )
    job = await create_job(
        client,
        input_files=[file_id],
        requests=[
            {"custom_id": "inline-1", "body": {"messages": [{"role": "user", "content": "x"}]}},
            {"body": {"messages": [{"role": "user", "content": "y"}]}},
        ],
        metadata={"team": "research"},
    )
    assert job["object"] == "batch"
    assert job["status"] == "QUEUED"
    assert job["total_requests"] == 9
    assert job["completed_requests"] == 0
    assert job["input_files"] == [file_id]
    assert job["metadata"] == {"team": "research"}
    assert job["output_file"] is None and job["errors"] == []
    assert job["started_at"] is None and job["completed_at"] is None

    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["status"] == "SUCCESS"
    assert (done["completed_requests"], done["succeeded_requests"], done["failed_requests"]) == (
        9,
        4,
        5,
    )
    assert done["started_at"] >= done["created_at"] and done["completed_at"] >= done["started_at"]
    assert done["outputs"] is None

    outputs = await jsonl_file(client, done["output_file"])
    errors = await jsonl_file(client, done["error_file"])
    assert [o["custom_id"] for o in outputs] == ["ok-1", "ok-2", "inline-1", "8"]
    assert [e["custom_id"] for e in errors] == ["upstream", "invalid", "schema", "5", "no-body"]
    by_id = {o["custom_id"]: o for o in outputs}
    first = by_id["ok-1"]
    assert first["error"] is None and first["response"]["status_code"] == 200
    assert first["response"]["body"]["object"] == "chat.completion"
    assert first["response"]["body"]["choices"][0]["message"]["content"] == "echo: hello"
    assert first["response"]["body"]["model"] == ECHO  # the job's model wins over the line's
    assert by_id["ok-2"]["response"]["body"]["choices"][0]["message"]["content"] == ("exactly this")
    status = {e["custom_id"]: e["response"]["status_code"] for e in errors}
    assert status == {"upstream": 400, "invalid": 400, "schema": 422, "5": 400, "no-body": 400}
    by_err = {e["custom_id"]: e for e in errors}
    assert "messages must not be empty" in by_err["invalid"]["error"]["message"]
    assert by_err["schema"]["response"]["body"]["detail"][0]["loc"][:2] == ["body", "messages"]
    assert by_err["5"]["error"]["code"] == "invalid_batch_line"
    assert "not valid JSON" in by_err["5"]["error"]["message"]
    assert "no `body` object" in by_err["no-body"]["error"]["message"]
    messages = {e["message"]: e["count"] for e in done["errors"]}
    assert sum(messages.values()) == 5

    # The files are files of the workspace.
    out_meta = (await client.get(f"/v1/files/{done['output_file']}")).json()
    assert out_meta["purpose"] == "batch" and out_meta["sample_type"] == "batch_result"
    assert out_meta["num_lines"] == 4 and out_meta["source"] == "service"
    err_meta = (await client.get(f"/v1/files/{done['error_file']}")).json()
    assert err_meta["sample_type"] == "batch_error" and err_meta["num_lines"] == 5

    # Every line that reached the engine was accounted, correlated to the job.
    await app.state.services.recorder.flush()
    async with app.state.services.db.sessionmaker() as session:
        usage = (
            await session.execute(
                sa.select(UsageRecord.source, UsageRecord.status_code).where(
                    UsageRecord.correlation_id == job["id"]
                )
            )
        ).all()
        events = (
            await session.execute(
                sa.select(ChatCompletionEvent).where(
                    ChatCompletionEvent.correlation_id == job["id"]
                )
            )
        ).scalars()
        event_ids = sorted(e.extra_fields["custom_id"] for e in events)
    assert sorted(usage) == [("batch", 200)] * 4 + [("batch", 400)]
    assert event_ids == sorted(["ok-1", "ok-2", "upstream", "inline-1", "8"])


async def test_inline_results(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await create_job(
        client,
        requests=[
            {"custom_id": "a", "body": {"messages": [{"role": "user", "content": "one"}]}},
            {"custom_id": "b", "body": {"messages": [{"role": "user", "content": "/fail 404"}]}},
        ],
    )
    await run_jobs(app)
    plain = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert plain["outputs"] is None
    assert [e["count"] for e in plain["errors"]] == [1]
    inline = (await client.get(f"/v1/batch/jobs/{job['id']}", params={"inline": "true"})).json()
    assert [o["custom_id"] for o in inline["outputs"]] == ["a"]
    assert inline["outputs"][0]["response"]["body"]["choices"][0]["message"]["content"] == (
        "echo: one"
    )
    [error] = inline["errors"]
    assert error["custom_id"] == "b" and error["count"] == 1
    assert error["response"]["status_code"] == 404 and error["message"]


async def test_rate_limited_lines_are_retried(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from maestrale.batch import runner

    monkeypatch.setattr(runner, "RATE_LIMIT_DELAY", 0.01)
    job = await create_job(
        client,
        requests=[
            {"custom_id": "r", "body": {"messages": [{"role": "user", "content": "/fail 429"}]}}
        ],
    )
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}", params={"inline": True})).json()
    assert done["errors"][0]["response"]["status_code"] == 429
    await app.state.services.recorder.flush()
    async with app.state.services.db.sessionmaker() as session:
        calls = await session.scalar(
            sa.select(sa.func.count()).where(UsageRecord.correlation_id == job["id"])
        )
    assert calls == runner.RATE_LIMIT_RETRIES + 1


async def test_fim_and_embeddings_batches(app: FastAPI, client: httpx.AsyncClient) -> None:
    fim = await create_job(
        client,
        endpoint="/v1/fim/completions",
        requests=[{"custom_id": "f", "body": {"prompt": "def add(", "suffix": "return"}}],
    )
    emb = await create_job(
        client,
        endpoint="/v1/embeddings",
        model="maestrale-embed",
        requests=[{"custom_id": "e", "body": {"input": ["one", "two"]}}],
    )
    await run_jobs(app)
    fim_done = (await client.get(f"/v1/batch/jobs/{fim['id']}", params={"inline": True})).json()
    assert fim_done["status"] == "SUCCESS"
    assert fim_done["outputs"][0]["response"]["body"]["choices"][0]["message"]["content"]
    emb_done = (await client.get(f"/v1/batch/jobs/{emb['id']}", params={"inline": True})).json()
    body = emb_done["outputs"][0]["response"]["body"]
    assert body["object"] == "list" and len(body["data"]) == 2
    live = await client.post("/v1/embeddings", json={"model": "maestrale-embed", "input": ["one"]})
    assert body["data"][0]["embedding"] == live.json()["data"][0]["embedding"]


async def test_every_line_failing_fails_the_job(app: FastAPI, client: httpx.AsyncClient) -> None:
    job = await create_job(
        client,
        requests=[{"custom_id": str(i), "body": {"messages": []}} for i in range(3)],
    )
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["status"] == "FAILED"
    assert done["output_file"] is None and done["error_file"] is not None
    assert done["errors"] == [{"message": "messages must not be empty", "count": 3}]


async def test_deleted_input_file_fails_the_job(app: FastAPI, client: httpx.AsyncClient) -> None:
    file_id = await input_file(client, chat_line("a", "x"))
    job = await create_job(client, input_files=[file_id])
    await client.delete(f"/v1/files/{file_id}")
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["status"] == "FAILED"
    assert done["completed_requests"] == 0
    assert f"input file {file_id} was deleted" in done["errors"][0]["message"]


@pytest.mark.parametrize("lines", [1, 1200])
async def test_results_are_in_line_order_and_complete(
    app: FastAPI, client: httpx.AsyncClient, lines: int
) -> None:
    file_id = await input_file(client, *(chat_line(f"id-{i}", f"n{i}") for i in range(lines)))
    job = await create_job(client, input_files=[file_id])
    await run_jobs(app, timeout=60)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["completed_requests"] == done["succeeded_requests"] == lines
    outputs = await jsonl_file(client, done["output_file"])
    assert [o["custom_id"] for o in outputs] == [f"id-{i}" for i in range(lines)]
    assert outputs[-1]["response"]["body"]["choices"][0]["message"]["content"] == (
        f"echo: n{lines - 1}"
    )
    assert orjson.loads(orjson.dumps(outputs[0]))["id"] == f"{job['id']}-0"


async def test_an_over_long_line_fails_alone(app: FastAPI, client: httpx.AsyncClient) -> None:
    from maestrale.files.lines import MAX_LINE_BYTES

    huge = '{"custom_id": "huge", "body": {"messages": [{"role": "user", "content": "'
    huge += "a" * MAX_LINE_BYTES + '"}]}}'
    file_id = await input_file(client, chat_line("before", "x"), huge, chat_line("after", "y"))
    job = await create_job(client, input_files=[file_id])
    assert job["total_requests"] == 3
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}", params={"inline": True})).json()
    assert [o["custom_id"] for o in done["outputs"]] == ["before", "after"]
    [error] = done["errors"]
    assert error["custom_id"] == "1" and "too long" in error["message"]


async def test_nul_characters_in_lines_are_harmless(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    job = await create_job(
        client,
        requests=[
            {"custom_id": "bad\u0000id", "body": {"messages": "\u0000"}},
            {"custom_id": "ok\u0000id", "body": {"messages": [{"role": "user", "content": "a"}]}},
        ],
    )
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}", params={"inline": True})).json()
    assert done["status"] == "SUCCESS"
    assert [e["custom_id"] for e in done["errors"]] == ["bad\u0000id"]
    assert [o["custom_id"] for o in done["outputs"]] == ["ok\u0000id"]
    await app.state.services.recorder.flush()  # the line's event was recorded (without the NUL)
    async with app.state.services.db.sessionmaker() as session:
        events = (await session.execute(sa.select(ChatCompletionEvent))).scalars().all()
    assert [e.extra_fields["custom_id"] for e in events] == ["okid"]
