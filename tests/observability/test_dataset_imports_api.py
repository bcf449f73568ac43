"""Dataset imports (explorer events, another dataset's records, conversations, an uploaded JSONL
file), their durable tasks (progress, final status, resumed without duplicating records), the
JSONL export through the Files API, errors and isolation."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit

import httpx
import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.core.jobs.tables import Job
from maestrale.core.jobs.worker import JobContext
from maestrale.observability.datasets import sources as datasets_import_sources
from maestrale.observability.datasets.tables import DatasetImportTask
from maestrale.observability.datasets.tasks import KIND, DatasetImportTasks, factories
from tests.batch.support import run_jobs
from tests.files.support import jsonl, upload
from tests.observability.events_seed import obs_error, seed_events
from tests.observability.test_datasets_api import convo, new_dataset
from tests.support.app_fixtures import TenantKey, make_client
from tests.support.job_context import JobCtx

pytestmark = pytest.mark.both_databases("maestrale.observability.datasets.repository")

DATASETS = "/v1/observability/datasets"
TASK_KEYS = {
    "id",
    "created_at",
    "updated_at",
    "deleted_at",
    "creator_id",
    "dataset_id",
    "workspace_id",
    "status",
    "progress",
    "message",
    "result",
}


async def event_ids(app: FastAPI) -> list[str]:
    async with app.state.services.db.transaction() as work:
        stmt = select(ChatCompletionEvent.id, ChatCompletionEvent.request_messages)
        rows = (await work.session.execute(stmt)).all()
    return [i for i, _ in sorted(rows, key=lambda r: str(r[1][0]["content"]))]


async def start_import(
    client: httpx.AsyncClient, dataset_id: str, kind: str, **body: Any
) -> dict[str, Any]:
    resp = await client.post(f"{DATASETS}/{dataset_id}/imports/from-{kind}", json=body)
    assert resp.status_code == 202, resp.text
    task: dict[str, Any] = resp.json()
    assert set(task) == TASK_KEYS
    assert task["status"] == "RUNNING" and task["progress"] == 0
    assert task["dataset_id"] == dataset_id
    return task


async def task_of(client: httpx.AsyncClient, dataset_id: str, task_id: str) -> dict[str, Any]:
    resp = await client.get(f"{DATASETS}/{dataset_id}/tasks/{task_id}")
    assert resp.status_code == 200, resp.text
    task: dict[str, Any] = resp.json()
    return task


async def records(client: httpx.AsyncClient, dataset_id: str) -> list[dict[str, Any]]:
    resp = await client.get(f"{DATASETS}/{dataset_id}/records", params={"page_size": 100})
    assert resp.status_code == 200, resp.text
    results: list[dict[str, Any]] = resp.json()["records"]["results"]
    return results


async def add_record(client: httpx.AsyncClient, dataset_id: str, text: str, **props: Any) -> str:
    resp = await client.post(
        f"{DATASETS}/{dataset_id}/records", json={"payload": convo(text), "properties": props}
    )
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def test_import_from_explorer(app: FastAPI, client: httpx.AsyncClient) -> None:
    await seed_events(app, client)
    ids = await event_ids(app)
    ds = await new_dataset(client)
    task = await start_import(client, ds["id"], "explorer", completion_event_ids=[*ids, ids[0]])
    assert (await task_of(client, ds["id"], task["id"]))["status"] == "RUNNING"
    assert await records(client, ds["id"]) == []
    await run_jobs(app)
    done = await task_of(client, ds["id"], task["id"])
    assert done["status"] == "COMPLETED" and done["progress"] == 100
    assert done["message"] == "imported 3 records"
    assert done["result"] == {
        "requested_record_count": 3,
        "imported_record_count": 3,
        "skipped_record_count": 0,
    }
    got = await records(client, ds["id"])
    assert sorted(r["payload"]["messages"][0]["content"] for r in got) == [
        "alpha one",
        "beta two",
        "gamma three",
    ]
    first = next(r for r in got if r["properties"]["event_id"] == ids[0])
    assert first["source"] == "EXPLORER"
    assert [m["role"] for m in first["payload"]["messages"]] == ["user", "assistant"]
    assert first["properties"]["model"] == "maestrale-echo"
    # An unknown id refuses the whole import, names it, and starts no task.
    msg = obs_error(
        await client.post(
            f"{DATASETS}/{ds['id']}/imports/from-explorer",
            json={"completion_event_ids": [ids[1], "nope"]},
        ),
        404,
        "SEARCH_NOT_FOUND",
    )
    assert "nope" in msg and ids[1] not in msg
    listed = (await client.get(f"{DATASETS}/{ds['id']}/tasks")).json()["tasks"]
    assert listed["count"] == 1 and listed["results"][0]["id"] == task["id"]
    obs_error(
        await client.post(
            f"{DATASETS}/{ds['id']}/imports/from-explorer", json={"completion_event_ids": []}
        ),
        422,
        "VALIDATION_ERROR",
    )


async def test_import_from_dataset_and_task_pages(app: FastAPI, client: httpx.AsyncClient) -> None:
    source = await new_dataset(client, "source")
    kept = [await add_record(client, source["id"], f"q{i}", n=i) for i in range(3)]
    target = await new_dataset(client, "target")
    first = await start_import(client, target["id"], "dataset", dataset_record_ids=kept[:2])
    second = await start_import(client, target["id"], "dataset", dataset_record_ids=kept[2:])
    await run_jobs(app)
    got = await records(client, target["id"])
    got.sort(key=lambda r: int(r["properties"]["n"]))
    assert [(r["payload"], r["properties"]["n"]) for r in got] == [
        (convo(f"q{i}"), i) for i in range(3)
    ]
    assert {r["source"] for r in got} == {"DIRECT_INPUT"}
    assert not {r["id"] for r in got} & set(kept)  # copies: new records
    assert len(await records(client, source["id"])) == 3
    page = (await client.get(f"{DATASETS}/{target['id']}/tasks", params={"page_size": 1})).json()
    assert page["tasks"]["count"] == 2 and "page=2" in page["tasks"]["next"]
    assert page["tasks"]["results"][0]["id"] in {first["id"], second["id"]}
    obs_error(
        await client.get(f"{DATASETS}/{target['id']}/tasks/nope"), 404, "DATASET_TASK_NOT_FOUND"
    )
    # A task is read through its own dataset only.
    obs_error(
        await client.get(f"{DATASETS}/{source['id']}/tasks/{first['id']}"),
        404,
        "DATASET_TASK_NOT_FOUND",
    )
    assert (await client.delete(f"/v1/observability/dataset-records/{kept[0]}")).status_code == 204
    obs_error(
        await client.post(
            f"{DATASETS}/{target['id']}/imports/from-dataset",
            json={"dataset_record_ids": [kept[0]]},
        ),
        404,
        "DATASET_RECORD_NOT_FOUND",
    )


async def test_import_from_file(app: FastAPI, client: httpx.AsyncClient) -> None:
    lines = jsonl(
        orjson.dumps({"payload": convo("from export"), "properties": {"k": 1}}).decode(),
        "",
        orjson.dumps(convo("bare line")).decode(),
    )
    resp = await upload(client, lines, "records.jsonl", purpose="batch")
    assert resp.status_code == 200, resp.text
    ds = await new_dataset(client)
    task = await start_import(client, ds["id"], "file", file_id=resp.json()["id"])
    await run_jobs(app)
    done = await task_of(client, ds["id"], task["id"])
    assert (done["status"], done["message"]) == ("COMPLETED", "imported 2 records")
    got = sorted(await records(client, ds["id"]), key=lambda r: len(r["properties"]))
    assert [(r["payload"], r["properties"], r["source"]) for r in got] == [
        (convo("bare line"), {}, "UPLOADED_FILE"),
        (convo("from export"), {"k": 1}, "UPLOADED_FILE"),
    ]
    # One bad line fails the task, names the line and imports nothing.
    bad = jsonl(orjson.dumps(convo("fine")).decode(), '{"messages": "not a list"}')
    resp = await upload(client, bad, "bad.jsonl", purpose="batch")
    other_ds = await new_dataset(client, "other")
    task = await start_import(client, other_ds["id"], "file", file_id=resp.json()["id"])
    await run_jobs(app)
    failed = await task_of(client, other_ds["id"], task["id"])
    assert failed["status"] == "FAILED" and failed["message"].startswith("line 2:")
    assert await records(client, other_ds["id"]) == []
    obs_error(
        await client.post(f"{DATASETS}/{ds['id']}/imports/from-file", json={"file_id": "nope"}),
        404,
        "VALIDATION_ERROR",
    )


async def test_import_from_playground(app: FastAPI, client: httpx.AsyncClient) -> None:
    resp = await client.post(
        "/v1/conversations",
        json={"model": "maestrale-echo", "inputs": "hello", "instructions": "Be brief."},
    )
    assert resp.status_code == 200, resp.text
    conversation_id = resp.json()["conversation_id"]
    ds = await new_dataset(client)
    task = await start_import(client, ds["id"], "playground", conversation_ids=[conversation_id])
    await run_jobs(app)
    assert (await task_of(client, ds["id"], task["id"]))["status"] == "COMPLETED"
    [record] = await records(client, ds["id"])
    assert record["source"] == "PLAYGROUND"
    assert record["payload"]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "echo: hello"},
    ]
    assert record["properties"]["conversation_id"] == conversation_id
    obs_error(
        await client.post(
            f"{DATASETS}/{ds['id']}/imports/from-playground", json={"conversation_ids": ["nope"]}
        ),
        404,
        "VALIDATION_ERROR",
    )


async def test_export_to_jsonl_round_trips(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from maestrale.observability.datasets import export as datasets_export

    monkeypatch.setattr(datasets_export, "EXPORT_BATCH", 2)  # several keyset pages
    ds = await new_dataset(client)
    ids = [await add_record(client, ds["id"], f"turn {i}", i=i) for i in range(5)]
    assert (await client.delete(f"/v1/observability/dataset-records/{ids[1]}")).status_code == 204
    resp = await client.get(f"{DATASETS}/{ds['id']}/exports/to-jsonl")
    assert resp.status_code == 200, resp.text
    url = urlsplit(resp.json()["file_url"])
    assert "signature=" in url.query
    async with make_client(app, None) as anon:  # a signed link needs no key
        content = await anon.get(f"{url.path}?{url.query}")
    assert content.status_code == 200
    lines = [orjson.loads(line) for line in content.content.splitlines()]
    assert [line["properties"]["i"] for line in lines] == [0, 2, 3, 4]
    assert lines[0] == {
        "id": ids[0],
        "source": "DIRECT_INPUT",
        "payload": convo("turn 0"),
        "properties": {"i": 0},
    }
    file_id = url.path.split("/")[3]
    meta = (await client.get(f"/v1/files/{file_id}")).json()
    assert meta["num_lines"] == 4 and meta["purpose"] == "dataset-export"
    copy = await new_dataset(client, "copy")
    await start_import(client, copy["id"], "file", file_id=file_id)
    await run_jobs(app)
    assert sorted(r["properties"]["i"] for r in await records(client, copy["id"])) == [0, 2, 3, 4]


async def job_payload(app: FastAPI, task_id: str) -> dict[str, Any]:
    async with app.state.services.db.transaction() as work:
        jobs = (await work.session.execute(select(Job).where(Job.kind == KIND))).scalars()
        return next(j.payload for j in jobs if j.payload["task_id"] == task_id)


async def test_killed_import_resumes_without_duplicates(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed_events(app, client)
    ds = await new_dataset(client)
    task = await start_import(
        client, ds["id"], "explorer", completion_event_ids=await event_ids(app)
    )
    monkeypatch.setattr(datasets_import_sources, "BATCH", 1)
    handler = DatasetImportTasks(factories(app.state.services.blobs))
    real = DatasetImportTasks._write
    writes = 0

    async def dies_after_two(self: DatasetImportTasks, *args: Any) -> int:
        nonlocal writes
        writes += 1
        if writes == 3:
            raise RuntimeError("worker killed")
        return await real(self, *args)

    monkeypatch.setattr(DatasetImportTasks, "_write", dies_after_two)
    ctx = cast(JobContext, JobCtx(app.state.services.db, await job_payload(app, task["id"])))
    with pytest.raises(RuntimeError):
        await handler.run(ctx)
    running = await task_of(client, ds["id"], task["id"])
    assert running["status"] == "RUNNING" and running["progress"] == 66
    assert len(await records(client, ds["id"])) == 2
    # The retry writes the same records again: the two present are kept, one is added.
    assert await handler.run(ctx) == {"status": "COMPLETED", "imported": 3, "skipped": 0}
    assert len(await records(client, ds["id"])) == 3
    assert (await task_of(client, ds["id"], task["id"]))["message"] == "imported 3 records"
    # A task already ended is not run again.
    assert await handler.run(ctx) == {"status": "ended"}


async def test_last_attempt_fails_and_deleted_dataset_cancels(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = await new_dataset(client)
    rid = await add_record(client, ds["id"], "x")
    task = await start_import(client, ds["id"], "dataset", dataset_record_ids=[rid])

    async def broken(*args: Any) -> int:
        raise RuntimeError("database gone")

    monkeypatch.setattr(DatasetImportTasks, "_write", broken)
    handler = DatasetImportTasks(factories(app.state.services.blobs))
    payload = await job_payload(app, task["id"])
    with pytest.raises(RuntimeError):
        await handler.run(cast(JobContext, JobCtx(app.state.services.db, payload, attempt=5)))
    failed = await task_of(client, ds["id"], task["id"])
    assert failed["status"] == "FAILED" and "database gone" in failed["message"]
    monkeypatch.undo()
    doomed = await new_dataset(client, "doomed")
    task = await start_import(client, doomed["id"], "dataset", dataset_record_ids=[rid])
    assert (await client.delete(f"{DATASETS}/{doomed['id']}")).status_code == 204
    await run_jobs(app)
    async with app.state.services.db.transaction() as work:
        row = await work.session.get(DatasetImportTask, task["id"])
    assert row is not None and row.status == "CANCELED"


async def test_imports_and_exports_are_isolated(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    await seed_events(app, client)
    ids = await event_ids(app)
    ds = await new_dataset(client)
    rid = await add_record(client, ds["id"], "mine")
    task = await start_import(client, ds["id"], "dataset", dataset_record_ids=[rid])
    file_id = (await upload(client, jsonl(orjson.dumps(convo("f")).decode()))).json()["id"]
    conversation = await client.post(
        "/v1/conversations", json={"model": "maestrale-echo", "inputs": "hi"}
    )
    conversation_id = conversation.json()["conversation_id"]
    async with make_client(app, other.key) as foreign:
        theirs = await new_dataset(foreign, "theirs")
        base = f"{DATASETS}/{ds['id']}"
        for resp in (
            await foreign.post(f"{base}/imports/from-explorer", json={"completion_event_ids": ids}),
            await foreign.post(f"{base}/imports/from-dataset", json={"dataset_record_ids": [rid]}),
            await foreign.post(f"{base}/imports/from-file", json={"file_id": file_id}),
            await foreign.get(f"{base}/tasks"),
            await foreign.get(f"{base}/tasks/{task['id']}"),
            await foreign.get(f"{base}/exports/to-jsonl"),
        ):
            obs_error(resp, 404, "DATASET_NOT_FOUND")
        # Their own dataset cannot take our events, records, files or conversations.
        mine = f"{DATASETS}/{theirs['id']}/imports"
        obs_error(
            await foreign.post(f"{mine}/from-explorer", json={"completion_event_ids": ids[:1]}),
            404,
            "SEARCH_NOT_FOUND",
        )
        obs_error(
            await foreign.post(f"{mine}/from-dataset", json={"dataset_record_ids": [rid]}),
            404,
            "DATASET_RECORD_NOT_FOUND",
        )
        obs_error(
            await foreign.post(f"{mine}/from-file", json={"file_id": file_id}),
            404,
            "VALIDATION_ERROR",
        )
        obs_error(
            await foreign.post(
                f"{mine}/from-playground", json={"conversation_ids": [conversation_id]}
            ),
            404,
            "VALIDATION_ERROR",
        )
        assert (await foreign.get(f"{DATASETS}/{theirs['id']}/tasks")).json()["tasks"]["count"] == 0
