"""A traced `maestrale serve` (with its in-process job worker) exporting to an in-process OTLP
collector, with a model on the stub upstream that records the `traceparent` it receives."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.engines.openai_compat.support import Stub, start_stub, stop_stub
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server
from tests.tracing.collector import Collector, Span, running_collector

MODEL = "traced-remote"
CATALOG = """
[[models]]
id = "traced-remote"
engine = "openai_compat"
base_url = "{stub}/v1"
upstream_model = "traced-upstream"
capabilities = ["completion_chat"]
"""
# Spans leave the server within ~50 ms; jobs are claimed within 0.2 s.
TRACED_ENV = {"OTEL_BSP_SCHEDULE_DELAY": "50", "MAESTRALE_JOB_POLL_SECONDS": "0.2"}


@dataclass(frozen=True)
class Traced:
    url: str
    data_dir: Path
    models: Path
    collector: Collector
    stub: Stub

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {API_KEY}"}

    def upstream_record(self, tag: str) -> dict[str, Any]:
        """What the stub recorded of the one request tagged `tag` (headers included)."""
        response = httpx.get(f"{self.stub.root}/stub/requests/{tag}", timeout=5)
        response.raise_for_status()
        records: list[dict[str, Any]] = response.json()
        assert len(records) == 1, records
        return records[0]


def new_trace() -> tuple[str, str]:
    """A caller's trace id and span id (hex)."""
    return secrets.token_hex(16), secrets.token_hex(8)


def traceparent(trace_id: str, span_id: str, *, sampled: bool = True) -> str:
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"


def one(spans: list[Span], **match: Any) -> Span:
    """The one span whose fields are `match` (`name=`, `kind=`...)."""
    found = [s for s in spans if all(getattr(s, k) == v for k, v in match.items())]
    assert len(found) == 1, (match, spans)
    return found[0]


def descends_from(span: Span, ancestor: Span, spans: list[Span]) -> bool:
    by_id = {s.span_id: s for s in spans}
    current: Span | None = span
    while current is not None:
        if current.parent_id == ancestor.span_id:
            return True
        current = by_id.get(current.parent_id)
    return False


@pytest.fixture(scope="session")
def collector() -> Iterator[Collector]:
    with running_collector() as running:
        yield running


@pytest.fixture(scope="session")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stub]:
    running = start_stub(tmp_path_factory.mktemp("tracing-stub") / "stub.log")
    try:
        yield running
    finally:
        stop_stub(running)


@pytest.fixture(scope="session")
def traced(
    tmp_path_factory: pytest.TempPathFactory, collector: Collector, stub: Stub
) -> Iterator[Traced]:
    home = tmp_path_factory.mktemp("traced")
    models = home / "models.toml"
    models.write_text(CATALOG.format(stub=stub.root))
    data = home / "data"
    data.mkdir()
    env = {**TRACED_ENV, "MAESTRALE_OTLP_ENDPOINT": collector.url}
    proc, url = start_server(data, "--models", str(models), env=env)
    try:
        yield Traced(url, data, models, collector, stub)
    finally:
        stop_server(proc)
