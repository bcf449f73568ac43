"""A job attempt is the root span of its own trace (kind, id, attempt, outcome), with its engine
calls and statements under it: in `serve`'s in-process worker and in a `maestrale worker`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.engines.openai_compat.support import Stub, new_tag
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server
from tests.tracing.collector import Collector, Span
from tests.tracing.conftest import (
    CATALOG,
    MODEL,
    TRACED_ENV,
    Traced,
    descends_from,
    new_trace,
    one,
    traceparent,
)

LINES = 2
KIND = "batch.run"


def _create_batch(url: str, tag: str, **headers: str) -> str:
    lines = [
        {
            "custom_id": f"line-{i}",
            "body": {"messages": [{"role": "user", "content": f"tag:{tag}-{i}"}]},
        }
        for i in range(LINES)
    ]
    body = {"endpoint": "/v1/chat/completions", "model": MODEL, "requests": lines}
    response = httpx.post(
        f"{url}/v1/batch/jobs",
        json=body,
        headers={"Authorization": f"Bearer {API_KEY}", **headers},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


def _upstream_parent(stub: Stub, tag: str, timeout: float = 60) -> tuple[str, str]:
    """The trace id and parent span id the upstream got with the request tagged `tag`."""
    end = time.monotonic() + timeout
    while True:
        records = httpx.get(f"{stub.root}/stub/requests/{tag}", timeout=5).json()
        if records:
            _, trace_id, parent, flags = records[0]["headers"]["traceparent"].split("-")
            assert flags == "01"
            return trace_id, parent
        assert time.monotonic() < end, f"the batch line {tag} never reached the upstream"
        time.sleep(0.1)


def _job_trace(collector: Collector, stub: Stub, tag: str, service: str) -> tuple[Span, list[Span]]:
    """The job span of the batch whose lines are tagged `tag`, and its trace."""
    trace_id, parent = _upstream_parent(stub, f"{tag}-0")

    def finished(spans: list[Span]) -> bool:
        return any(
            s.trace_id == trace_id
            and s.kind == "consumer"
            and "maestrale.job.outcome" in s.attributes
            for s in spans
        )

    collector.wait_for(finished, f"the job span of trace {trace_id}")
    spans = collector.trace(trace_id)
    job = one(spans, kind="consumer")
    assert job.name == f"job {KIND}"
    assert job.parent_id == ""  # a trace of its own
    assert job.service == service
    assert job.attributes["maestrale.job.kind"] == KIND
    assert job.attributes["maestrale.job.id"]
    assert job.attributes["maestrale.job.attempt"] == 1
    assert job.attributes["maestrale.job.outcome"] == "succeeded"
    engines = [s for s in spans if s.name == f"chat {MODEL}"]
    assert len(engines) == LINES
    assert all(descends_from(s, job, spans) for s in engines)
    assert parent in {s.span_id for s in engines}  # the upstream's parent is a line's call
    statements = [s for s in spans if "db.query.text" in s.attributes]
    assert statements
    assert all(descends_from(s, job, spans) for s in statements)
    return job, spans


def test_in_process_worker_traces_each_job_attempt(traced: Traced) -> None:
    tag = new_tag()
    trace_id, caller = new_trace()
    _create_batch(traced.url, tag, traceparent=traceparent(trace_id, caller))
    _job_trace(traced.collector, traced.stub, tag, "maestrale")
    # The request that enqueued the job has its own trace.
    spans = traced.collector.wait_for(
        lambda spans: any(s.trace_id == trace_id and s.kind == "server" for s in spans),
        "the batch creation's server span",
    )
    assert one([s for s in spans if s.trace_id == trace_id], kind="server").name == (
        "POST /v1/batch/jobs"
    )


@pytest.fixture
def untraced_server_and_traced_worker(
    tmp_path: Path, collector: Collector, stub: Stub
) -> Iterator[str]:
    """An untraced `serve --no-worker` and a traced `maestrale worker` on one database."""
    models = tmp_path / "models.toml"
    models.write_text(CATALOG.format(stub=stub.root))
    data = tmp_path / "data"
    data.mkdir()
    proc, url = start_server(data, "--no-worker", "--models", str(models))
    env = {
        **os.environ,
        **TRACED_ENV,
        "MAESTRALE_MODELS": str(models),
        "MAESTRALE_OTLP_ENDPOINT": collector.url,
        "OTEL_SERVICE_NAME": "maestrale-worker-test",
        "MAESTRALE_TEMPORAL_EMBEDDED": "false",
    }
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - closed below
    worker = subprocess.Popen(
        [sys.executable, "-m", "maestrale", "worker", "--data-dir", str(data)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield url
    finally:
        worker.terminate()
        try:
            worker.wait(15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        log.close()
        stop_server(proc)


def test_standalone_worker_traces_jobs_and_an_untraced_server_passes_nothing_on(
    untraced_server_and_traced_worker: str, collector: Collector, stub: Stub
) -> None:
    url = untraced_server_and_traced_worker
    # The server has no endpoint: its calls carry no trace, even one a caller sent.
    trace_id, caller = new_trace()
    tag = new_tag()
    chat = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": MODEL, "messages": [{"role": "user", "content": f"tag:{tag}"}]},
        headers={
            "Authorization": f"Bearer {API_KEY}",
            "traceparent": traceparent(trace_id, caller),
        },
        timeout=30,
    )
    assert chat.status_code == 200, chat.text
    record = httpx.get(f"{stub.root}/stub/requests/{tag}", timeout=5).json()[0]
    assert "traceparent" not in record["headers"]

    batch_tag = new_tag()
    _create_batch(url, batch_tag, traceparent=traceparent(trace_id, caller))
    _job_trace(collector, stub, batch_tag, "maestrale-worker-test")
    assert collector.trace(trace_id) == []  # nothing of the untraced server
