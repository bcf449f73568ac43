"""The server's own spans into its telemetry store, in process (no HTTP): when the server traces
itself (`maestrale.tracing`, on when an OTLP endpoint is configured) and `telemetry_self_traces`
is on, the spans of a request made with a workspace's key land in that workspace's store.

A span processor added to the process's tracer provider keeps the finished spans of each trace
until its local root (the request's server span, which ends last and carries the workspace the
key resolved to) ends; then the trace's spans go to the ingestion queue as one batch, encoded and
decoded as an OTLP export would be (the same rows, limits and GenAI columns). Spans of requests
without a workspace (anonymous, admin keys), of jobs, and of the OTLP receiver's own routes are
dropped. The conversion runs on the event loop after the response was sent (scheduled with
`call_soon_threadsafe`, whichever thread ended the span): the request's latency is unaffected."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import SpanProcessor

from maestrale.config.telemetry import OTLP_PATHS
from maestrale.telemetry.otlp.records import Owner
from maestrale.telemetry.otlp.spans import span_rows
from maestrale.telemetry.otlp.values import Limits
from maestrale.telemetry.queue import Batch, IngestQueue

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span

WORKSPACE = "maestrale.workspace.id"
ORGANIZATION = "maestrale.organization.id"
# Traces whose root has not ended yet: past this many, the oldest are forgotten (a leak bound).
MAX_OPEN_TRACES = 10_000
MAX_SPANS_PER_TRACE = 1_000
_SKIPPED = frozenset(OTLP_PATHS)


class StoreSpans(SpanProcessor):
    """A span processor handing each request's spans to the workspace's store."""

    def __init__(self, queue: IngestQueue, limits: Limits) -> None:
        self.queue = queue
        self.limits = limits
        self.loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._open: OrderedDict[int, list[ReadableSpan]] = OrderedDict()
        self._lock = threading.Lock()
        self.closed = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self.closed or span.context is None:
            return
        trace_id = span.context.trace_id
        local_root = span.parent is None or span.parent.is_remote
        with self._lock:
            spans = self._open.pop(trace_id, [])
            if not local_root:
                if len(spans) < MAX_SPANS_PER_TRACE:
                    spans.append(span)
                self._open[trace_id] = spans
                while len(self._open) > MAX_OPEN_TRACES:
                    self._open.popitem(last=False)
                return
        attributes = span.attributes or {}
        workspace = attributes.get(WORKSPACE)
        if not isinstance(workspace, str) or attributes.get("http.route") in _SKIPPED:
            return
        organization = str(attributes.get(ORGANIZATION, ""))
        spans.append(span)
        if threading.get_ident() == self._loop_thread:
            self.loop.call_soon(self._store, Owner(organization, workspace), spans)
        else:
            self.loop.call_soon_threadsafe(self._store, Owner(organization, workspace), spans)

    def _store(self, owner: Owner, spans: list[ReadableSpan]) -> None:
        if self.closed:
            return
        decoded = span_rows(encode_spans(spans), owner, self.limits, time.time_ns())
        # A full queue drops the server's own spans (counted as a rejected batch).
        self.queue.offer(Batch(spans=decoded.rows))

    def shutdown(self) -> None:
        self.closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
