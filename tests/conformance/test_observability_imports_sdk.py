"""The official SDK (mistralai 2.8.0) drives dataset imports, their tasks and the JSONL export on
a live server (its worker runs the import tasks)."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import ObservabilityError

from tests.conformance.conftest import LiveServer, only_before_3


def _finished(sdk: Mistral, task: m.DatasetImportTask) -> m.DatasetImportTask:
    deadline = time.monotonic() + 30
    while task.status == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.1)
        task = sdk.beta.observability.datasets.fetch_task(
            dataset_id=task.dataset_id, task_id=task.id
        )
    return task


@only_before_3
def test_imports_tasks_and_export(live_server: LiveServer) -> None:
    sdk = Mistral(api_key=live_server.api_key, server_url=live_server.url)
    datasets = sdk.beta.observability.datasets
    tag = uuid.uuid4().hex
    for i in range(2):
        sdk.chat.complete(
            model="maestrale-echo",
            messages=[{"role": "user", "content": f"import {i}"}],
            metadata={"import_run": tag},
        )
    flt = {"filters": {"field": "extra_fields.import_run", "op": "eq", "value": tag}}
    events = sdk.beta.observability.chat_completion_events
    deadline = time.monotonic() + 10
    while len(ids := events.search_ids(search_params=flt).completion_event_ids) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    ds = datasets.create(name=f"imports-{tag[:6]}", description="")

    task = datasets.import_from_explorer(dataset_id=ds.id, completion_event_ids=ids)
    assert isinstance(task, m.DatasetImportTask) and task.dataset_id == ds.id
    task = _finished(sdk, task)
    assert task.status == "COMPLETED" and task.progress == 100
    assert task.message == "imported 2 records"

    started = sdk.beta.conversations.start(model="maestrale-echo", inputs="playground hello")
    task = datasets.import_from_playground(
        dataset_id=ds.id, conversation_ids=[started.conversation_id]
    )
    assert _finished(sdk, task).status == "COMPLETED"

    line = json.dumps({"messages": [{"role": "user", "content": "from a file"}]})
    uploaded = sdk.files.upload(
        file={"file_name": "records.jsonl", "content": (line + "\n").encode()}, purpose="batch"
    )
    task = datasets.import_from_file(dataset_id=ds.id, file_id=uploaded.id)
    assert _finished(sdk, task).status == "COMPLETED"

    records = datasets.list_records(dataset_id=ds.id, page_size=100).records.results or []
    assert sorted(r.source for r in records) == [
        "EXPLORER",
        "EXPLORER",
        "PLAYGROUND",
        "UPLOADED_FILE",
    ]
    copy = datasets.create(name=f"copy-{tag[:6]}", description="")
    task = datasets.import_from_dataset_records(
        dataset_id=copy.id, dataset_record_ids=[r.id for r in records]
    )
    assert _finished(sdk, task).status == "COMPLETED"
    assert datasets.list_records(dataset_id=copy.id).records.count == 4

    tasks = datasets.list_tasks(dataset_id=ds.id, page_size=2).tasks
    assert tasks.count == 3 and len(tasks.results or []) == 2 and tasks.next
    with pytest.raises(ObservabilityError) as info:
        datasets.fetch_task(dataset_id=ds.id, task_id="nope")
    assert info.value.data.detail.error_code == "DATASET_TASK_NOT_FOUND"

    exported = datasets.export_to_jsonl(dataset_id=copy.id)
    assert isinstance(exported, m.ExportDatasetResponse)
    content = httpx.get(exported.file_url, timeout=10)  # a signed link: no key needed
    assert content.status_code == 200
    lines = [json.loads(x) for x in content.content.splitlines()]
    assert len(lines) == 4 and all(x["payload"]["messages"] for x in lines)

    with pytest.raises(ObservabilityError) as info:
        datasets.import_from_explorer(dataset_id=ds.id, completion_event_ids=["nope"])
    assert info.value.data.detail.error_code == "SEARCH_NOT_FOUND"
    with pytest.raises(ObservabilityError) as info:
        datasets.export_to_jsonl(dataset_id="nope")
    assert info.value.data.detail.error_code == "DATASET_NOT_FOUND"
