"""An in-process OTLP/HTTP collector: an HTTP server thread that decodes the
`ExportTraceServiceRequest` protobuf posted to /v1/traces and keeps the spans it carried."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

KINDS = {
    ProtoSpan.SPAN_KIND_INTERNAL: "internal",
    ProtoSpan.SPAN_KIND_SERVER: "server",
    ProtoSpan.SPAN_KIND_CLIENT: "client",
    ProtoSpan.SPAN_KIND_PRODUCER: "producer",
    ProtoSpan.SPAN_KIND_CONSUMER: "consumer",
}


@dataclass(frozen=True)
class Span:
    trace_id: str  # hex, as in a traceparent
    span_id: str
    parent_id: str  # "" for a root span
    name: str
    kind: str
    attributes: dict[str, Any]
    error: bool  # status code ERROR
    service: str

    def attribute_values(self) -> list[str]:
        return [str(value) for value in self.attributes.values()]


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return None if which is None else getattr(value, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        out[pair.key] = _value(pair.value)
    return out


@dataclass
class Collector:
    url: str = ""  # the base URL (MAESTRALE_OTLP_ENDPOINT); the exporter posts to /v1/traces
    spans: list[Span] = field(default_factory=list)
    posts: int = 0
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, body: bytes, path: str) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_spans in request.resource_spans:
            service = _attributes(resource_spans.resource.attributes).get("service.name", "")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        Span(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            kind=KINDS.get(span.kind, "unspecified"),
                            attributes=_attributes(span.attributes),
                            error=span.status.code == span.status.STATUS_CODE_ERROR,
                            service=service,
                        )
                    )
        with self.lock:
            self.posts += 1
            self.paths.append(path)
            self.spans.extend(found)

    def snapshot(self) -> list[Span]:
        with self.lock:
            return list(self.spans)

    def wait_for(
        self, check: Callable[[list[Span]], bool], what: str, timeout: float = 15
    ) -> list[Span]:
        """The spans received once `check` holds for them; fails after `timeout` seconds."""
        end = time.monotonic() + timeout
        while True:
            spans = self.snapshot()
            if check(spans):
                return spans
            assert time.monotonic() < end, f"timed out waiting for {what}: {spans}"
            time.sleep(0.05)

    def trace(self, trace_id: str) -> list[Span]:
        return [span for span in self.snapshot() if span.trace_id == trace_id]


def _handler(collector: Collector) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.headers.get("content-type") != "application/x-protobuf":
                self.send_error(415)
                return
            collector.take(body, self.path)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@contextmanager
def running_collector() -> Iterator[Collector]:
    collector = Collector()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(collector))
    collector.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="otlp-collector", daemon=True)
    thread.start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
