"""Synthetic OpenTelemetry GenAI traces for the telemetry benchmarks, as OTLP protobuf bodies.

A trace is an agent run: a root `invoke_agent` span, LLM `chat` calls carrying the GenAI
attributes (model, provider, tokens, input/output messages as JSON text, as the semantic
conventions' instrumentations send them), `execute_tool` calls and a few internal spans; ~1 in
20 traces has an error. Every span id is fresh (random), so no span of a run is a retried one
(the store's ON CONFLICT would not count it). Built with opentelemetry-proto directly.

    from bench.traces.spans import batches
    bodies = batches(count=200, size=512)   # 200 ExportTraceServiceRequest bodies, bytes
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

MODELS = ["mistral-small-latest", "mistral-medium-latest", "mistral-large-latest", "codestral"]
TOOLS = ["web_search", "get_weather", "lookup_order", "send_email", "sql_query"]
SERVICES = ["shop-assistant", "support-bot", "docs-qa", "billing-agent"]
QUESTIONS = [
    "Where is my order 48213?",
    "Summarise the last three support tickets of this customer.",
    "What is the weather in Lyon tomorrow?",
    "Translate the refund policy into Italian.",
    "Which invoices are overdue this month?",
]
SPANS_PER_TRACE = 8


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def _messages(rng: random.Random, tool: str) -> tuple[str, str]:
    question = rng.choice(QUESTIONS)
    inputs = [
        {"role": "system", "parts": [{"type": "text", "content": "You are a helpful agent."}]},
        {"role": "user", "parts": [{"type": "text", "content": question}]},
    ]
    outputs = [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": f"Let me check that for you ({question[:30]})."},
                {"type": "tool_call", "id": f"call_{rng.randrange(10**9)}", "name": tool},
            ],
            "finish_reason": "tool_call",
        }
    ]
    return json.dumps(inputs), json.dumps(outputs)


def _span(
    rng: random.Random,
    trace_id: bytes,
    parent: bytes,
    name: str,
    start: int,
    attributes: dict[str, Any],
    error: bool = False,
) -> Span:
    duration = int(rng.lognormvariate(18.5, 1.0))  # ~100 ms median
    span = Span(
        trace_id=trace_id,
        span_id=os.urandom(8),
        parent_span_id=parent,
        name=name,
        kind=Span.SPAN_KIND_CLIENT if parent else Span.SPAN_KIND_SERVER,
        start_time_unix_nano=start,
        end_time_unix_nano=start + duration,
        attributes=[_kv(k, v) for k, v in attributes.items()],
    )
    if error:
        span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="upstream timeout"))
    return span


def trace(rng: random.Random, start: int) -> list[Span]:
    """One agent run's spans (SPANS_PER_TRACE of them)."""
    trace_id = os.urandom(16)
    agent = rng.choice(["support", "orders", "research"])
    root = _span(
        rng,
        trace_id,
        b"",
        f"invoke_agent {agent}",
        start,
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent},
    )
    spans = [root]
    failed = rng.random() < 0.05
    at = start
    for turn in range(3):
        model = rng.choice(MODELS)
        tool = rng.choice(TOOLS)
        inputs, outputs = _messages(rng, tool)
        at += 1_000_000
        spans.append(
            _span(
                rng,
                trace_id,
                root.span_id,
                f"chat {model}",
                at,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "mistral_ai",
                    "gen_ai.request.model": model,
                    "gen_ai.response.model": model,
                    "gen_ai.request.temperature": 0.3,
                    "gen_ai.usage.input_tokens": rng.randrange(50, 4000),
                    "gen_ai.usage.output_tokens": rng.randrange(10, 800),
                    "gen_ai.conversation.id": f"conv-{trace_id.hex()[:12]}",
                    "gen_ai.input.messages": inputs,
                    "gen_ai.output.messages": outputs,
                },
                error=failed and turn == 2,
            )
        )
        if turn < 2:
            at += 1_000_000
            spans.append(
                _span(
                    rng,
                    trace_id,
                    root.span_id,
                    f"execute_tool {tool}",
                    at,
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": tool,
                        "gen_ai.tool.type": "function",
                    },
                )
            )
    spans.append(
        _span(rng, trace_id, root.span_id, "GET /orders", at + 500, {"http.route": "/orders"})
    )
    return spans


def request(rng: random.Random, size: int, now_ns: int) -> bytes:
    """An ExportTraceServiceRequest of `size` spans (whole traces; the last one cut)."""
    spans: list[Span] = []
    while len(spans) < size:
        spans += trace(rng, now_ns - rng.randrange(3_600 * 10**9))
    service = rng.choice(SERVICES)
    resource = Resource(
        attributes=[
            _kv("service.name", service),
            _kv("deployment.environment.name", "prod"),
            _kv("telemetry.sdk.language", "python"),
        ]
    )
    scope = InstrumentationScope(name="opentelemetry.instrumentation.mistralai", version="0.1")
    body = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=resource, scope_spans=[ScopeSpans(scope=scope, spans=spans[:size])]
            )
        ]
    )
    return body.SerializeToString()


def batches(count: int, size: int = 512, seed: int = 36) -> list[bytes]:
    """`count` protobuf bodies of `size` spans each, all span ids distinct."""
    rng = random.Random(seed)
    now = time.time_ns()
    return [request(rng, size, now) for _ in range(count)]
