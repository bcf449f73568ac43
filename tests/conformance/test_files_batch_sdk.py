"""The official SDK (mistralai==2.8.0) drives the files and batch groups of a live server: uploads,
listing, download, signed links, deletion; batch jobs created, listed, read and cancelled, run by
the server's in-process worker."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from tests.conformance.conftest import LiveServer


@pytest.fixture
def sdk(live_server: LiveServer) -> Mistral:
    return Mistral(api_key=live_server.api_key, server_url=live_server.url)


def _lines(*texts: str, prefix: str = "r") -> bytes:
    rows = [
        {"custom_id": f"{prefix}{i}", "body": {"messages": [{"role": "user", "content": text}]}}
        for i, text in enumerate(texts)
    ]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def test_files_round_trip(sdk: Mistral) -> None:
    content = _lines("hello", "world")
    created = sdk.files.upload(
        file={"file_name": "requests.jsonl", "content": content}, purpose="batch"
    )
    assert isinstance(created, m.CreateFileResponse)
    assert created.size_bytes == len(content) and created.num_lines == 2
    assert created.purpose == "batch" and created.sample_type == "batch_request"
    assert created.source == "upload" and created.visibility == "workspace"

    listed = sdk.files.list(page_size=100, purpose="batch", search="requests")
    assert created.id in [f.id for f in listed.data]
    assert listed.total is not None and listed.total >= 1

    got = sdk.files.retrieve(file_id=created.id)
    assert isinstance(got, m.GetFileResponse)
    assert got.deleted is False and got.filename == "requests.jsonl"

    downloaded = sdk.files.download(file_id=created.id)
    assert downloaded.read() == content
    assert "requests.jsonl" in downloaded.headers["content-disposition"]

    signed = sdk.files.get_signed_url(file_id=created.id, expiry=1)
    public = httpx.get(signed.url)  # no key
    assert public.status_code == 200 and public.content == content

    deleted = sdk.files.delete(file_id=created.id)
    assert deleted.deleted is True and deleted.id == created.id
    with pytest.raises(SDKError) as missing:
        sdk.files.retrieve(file_id=created.id)
    assert missing.value.status_code == 404


def test_fine_tune_upload_errors_are_readable(sdk: Mistral) -> None:
    with pytest.raises(SDKError) as bad:
        sdk.files.upload(
            file={"file_name": "train.jsonl", "content": b'{"messages": []}\nnot json\n'},
            purpose="fine-tune",
        )
    assert bad.value.status_code == 400
    assert "line 2" in bad.value.body


def _wait(sdk: Mistral, job_id: str, statuses: set[str], timeout: float = 30) -> m.BatchJob:
    deadline = time.monotonic() + timeout
    while True:
        job = sdk.batch.jobs.get(job_id=job_id)
        if job.status in statuses:
            return job
        assert time.monotonic() < deadline, f"job still {job.status}"
        time.sleep(0.1)


def test_batch_jobs(sdk: Mistral) -> None:
    tag = uuid.uuid4().hex
    source = sdk.files.upload(
        file={"file_name": "in.jsonl", "content": _lines("one", "/fail 400", "three")},
        purpose="batch",
    )
    job = sdk.batch.jobs.create(
        endpoint="/v1/chat/completions",
        model="maestrale-echo",
        input_files=[source.id],
        requests=[
            {"custom_id": "inline", "body": {"messages": [{"role": "user", "content": "four"}]}}
        ],
        metadata={"tag": tag},
        timeout_hours=2,
    )
    assert isinstance(job, m.BatchJob)
    assert job.total_requests == 4 and job.metadata == {"tag": tag}

    done = _wait(sdk, job.id, {"SUCCESS", "FAILED"})
    assert done.status == "SUCCESS"
    assert (done.succeeded_requests, done.failed_requests, done.completed_requests) == (3, 1, 4)
    outputs = [
        json.loads(line) for line in sdk.files.download(file_id=done.output_file).iter_lines()
    ]
    errors = [json.loads(line) for line in sdk.files.download(file_id=done.error_file).iter_lines()]
    ids = [o["custom_id"] for o in outputs] + [e["custom_id"] for e in errors]
    assert sorted(ids) == ["inline", "r0", "r1", "r2"]
    assert errors[0]["custom_id"] == "r1" and errors[0]["response"]["status_code"] == 400

    inline = sdk.batch.jobs.get(job_id=job.id, inline=True)
    assert [o["custom_id"] for o in inline.outputs] == ["r0", "r2", "inline"]
    assert len(inline.errors) == 1 and inline.errors[0].message

    listed = sdk.batch.jobs.list(metadata={"tag": tag}, status=["SUCCESS"], created_by_me=True)
    assert [j.id for j in listed.data] == [job.id] and listed.total == 1
    assert sdk.batch.jobs.list(metadata={"tag": "other" + tag}).total == 0

    slow = sdk.batch.jobs.create(
        endpoint="/v1/chat/completions",
        model="maestrale-echo",
        requests=[
            {"custom_id": str(i), "body": {"messages": [{"role": "user", "content": "/sleep 200"}]}}
            for i in range(40)
        ],
    )
    cancelled = sdk.batch.jobs.cancel(job_id=slow.id)
    assert cancelled.status in ("CANCELLED", "CANCELLATION_REQUESTED")
    final = _wait(sdk, slow.id, {"CANCELLED"})
    assert final.completed_requests < 40

    removed = sdk.batch.jobs.delete(job_id=slow.id)
    assert removed.deleted is True
    with pytest.raises(SDKError) as gone:
        sdk.batch.jobs.get(job_id=slow.id)
    assert gone.value.status_code == 404
