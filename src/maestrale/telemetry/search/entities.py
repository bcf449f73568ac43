"""The searchable entities of the telemetry store: traces (their summary rows), spans and logs,
with fields named as the SDK's GetTrace, GetSpan and GetLog keys. Times are TIMESTAMP fields
over the nanosecond columns (`start_time` reads `start_ns`); the GenAI attributes ingestion does
not copy into columns are read from the span's attributes by key. Each row below is
(name, label, type, column or attribute key, group, attribute the column was copied from)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text, cast

from maestrale.telemetry.search.fields import attribute_field, build_entity, column_field
from maestrale.telemetry.search.fields import map_field as _map
from maestrale.telemetry.search.model import Entity, Field
from maestrale.telemetry.tables import TelemetryLog as L
from maestrale.telemetry.tables import TelemetrySpan as S
from maestrale.telemetry.tables import TelemetryTrace as T

Row = tuple[str, str, str, Any, str, str | None]


def _columns(rows: list[Row]) -> list[Field]:
    return [column_field(n, lb, t, c, group=g, source=s) for n, lb, t, c, g, s in rows]


def _identity(c: Any) -> list[Row]:
    return [
        ("user_id", "User id", "TEXT", c.user_id, "identity", None),
        (
            "service_account_id",
            "Service account id",
            "TEXT",
            c.service_account_id,
            "identity",
            None,
        ),
    ]


_AGENT, _CONVERSATION, _WORKFLOW = "gen_ai.agent", "gen_ai.conversation.id", "gen_ai.workflow.name"

TRACES: Entity = build_entity(
    "traces",
    T,
    workspace=T.workspace_id,
    time=T.start_ns,
    fields=_columns(
        [
            ("trace_id", "Trace id", "TEXT", T.trace_id, "trace", None),
            ("root_span_id", "Root span id", "TEXT", T.root_span_id, "trace", None),
            ("root_span_name", "Root span name", "TEXT", T.root_span_name, "trace", None),
            ("start_time", "Start time", "TIMESTAMP", T.start_ns, "timing", None),
            ("end_time", "End time", "TIMESTAMP", T.end_ns, "timing", None),
            ("duration_ns", "Duration (ns)", "INT", T.duration_ns, "timing", None),
            ("service_name", "Service", "TEXT", T.service_name, "resource", "service.name"),
            ("environment", "Environment", "TEXT", T.environment, "resource", None),
            ("conversation_id", "Conversation", "TEXT", T.conversation_id, "gen_ai", _CONVERSATION),
            ("workflow_name", "Workflow", "TEXT", T.workflow_name, "gen_ai", _WORKFLOW),
            ("agent_id", "Agent id", "TEXT", T.agent_id, "agent", f"{_AGENT}.id"),
            ("agent_name", "Agent name", "TEXT", T.agent_name, "agent", f"{_AGENT}.name"),
            ("status_code", "Status", "ENUM", T.status_code, "status", None),
            ("error_count", "Errors", "INT", T.error_count, "status", None),
            ("span_count", "Spans", "INT", T.span_count, "counts", None),
            ("gen_ai_span_count", "GenAI spans", "INT", T.gen_ai_span_count, "counts", None),
            ("llm_call_count", "LLM calls", "INT", T.llm_call_count, "counts", None),
            ("tool_call_count", "Tool calls", "INT", T.tool_call_count, "counts", None),
            ("retrieval_count", "Retrievals", "INT", T.retrieval_count, "counts", None),
            ("evaluation_count", "Evaluations", "INT", T.evaluation_count, "counts", None),
            ("input_tokens", "Input tokens", "INT", T.input_tokens, "usage", None),
            ("output_tokens", "Output tokens", "INT", T.output_tokens, "usage", None),
            (
                "cache_read_input_tokens",
                "Cache read tokens",
                "INT",
                T.cache_read_input_tokens,
                "usage",
                None,
            ),
            (
                "cache_creation_input_tokens",
                "Cache creation tokens",
                "INT",
                T.cache_creation_input_tokens,
                "usage",
                None,
            ),
            ("models_used", "Models used", "ARRAY", T.models_used, "gen_ai", None),
            ("tools_used", "Tools used", "ARRAY", T.tools_used, "gen_ai", None),
            (
                "first_turn_last_input_message",
                "First input",
                "TEXT",
                T.first_turn_last_input_message,
                "content",
                None,
            ),
            (
                "first_turn_last_output_message",
                "First output",
                "TEXT",
                T.first_turn_last_output_message,
                "content",
                None,
            ),
            (
                "last_turn_last_input_message",
                "Last input",
                "TEXT",
                T.last_turn_last_input_message,
                "content",
                None,
            ),
            (
                "last_turn_last_output_message",
                "Last output",
                "TEXT",
                T.last_turn_last_output_message,
                "content",
                None,
            ),
            *_identity(T),
        ]
    ),
    text=(
        T.root_span_name,
        T.first_turn_last_input_message,
        T.first_turn_last_output_message,
        T.last_turn_last_input_message,
        T.last_turn_last_output_message,
    ),
)

# Span fields read from the span's attributes: (name, label, type, attribute key, group).
_SPAN_ATTRIBUTES: list[tuple[str, str, str, str, str]] = [
    ("output_type", "Output type", "TEXT", "gen_ai.output.type", "gen_ai"),
    ("data_source_id", "Data source id", "TEXT", "gen_ai.data_source.id", "gen_ai"),
    ("agent_version", "Agent version", "TEXT", f"{_AGENT}.version", "agent"),
    ("agent_description", "Agent description", "TEXT", f"{_AGENT}.description", "agent"),
    ("prompt_name", "Prompt name", "TEXT", "gen_ai.prompt.name", "gen_ai"),
    ("tool_call_id", "Tool call id", "TEXT", "gen_ai.tool.call.id", "tool"),
    ("input_messages", "Input messages", "TEXT", "gen_ai.input.messages", "content"),
    ("output_messages", "Output messages", "TEXT", "gen_ai.output.messages", "content"),
    ("system_instructions", "System instructions", "TEXT", "gen_ai.system_instructions", "content"),
    ("tool_definitions", "Tool definitions", "TEXT", "gen_ai.tool.definitions", "tool"),
    ("tool_call_arguments", "Tool call arguments", "TEXT", "gen_ai.tool.call.arguments", "tool"),
    ("tool_call_result", "Tool call result", "TEXT", "gen_ai.tool.call.result", "tool"),
    ("request_choice_count", "Choice count", "INT", "gen_ai.request.choice.count", "request"),
    ("request_max_tokens", "Max tokens", "INT", "gen_ai.request.max_tokens", "request"),
    ("request_temperature", "Temperature", "FLOAT", "gen_ai.request.temperature", "request"),
    ("request_top_p", "Top p", "FLOAT", "gen_ai.request.top_p", "request"),
    ("request_top_k", "Top k", "FLOAT", "gen_ai.request.top_k", "request"),
    (
        "request_presence_penalty",
        "Presence penalty",
        "FLOAT",
        "gen_ai.request.presence_penalty",
        "request",
    ),
    (
        "request_frequency_penalty",
        "Frequency penalty",
        "FLOAT",
        "gen_ai.request.frequency_penalty",
        "request",
    ),
    ("request_seed", "Seed", "INT", "gen_ai.request.seed", "request"),
    (
        "request_stop_sequences",
        "Stop sequences",
        "ARRAY",
        "gen_ai.request.stop_sequences",
        "request",
    ),
    (
        "request_encoding_formats",
        "Encoding formats",
        "ARRAY",
        "gen_ai.request.encoding_formats",
        "request",
    ),
    (
        "response_finish_reasons",
        "Finish reasons",
        "ARRAY",
        "gen_ai.response.finish_reasons",
        "gen_ai",
    ),
]
_USAGE = "gen_ai.usage"

SPANS: Entity = build_entity(
    "spans",
    S,
    workspace=S.workspace_id,
    time=S.start_ns,
    fields=[
        *_columns(
            [
                ("trace_id", "Trace id", "TEXT", S.trace_id, "span", None),
                ("span_id", "Span id", "TEXT", S.span_id, "span", None),
                ("parent_span_id", "Parent span id", "TEXT", S.parent_span_id, "span", None),
                ("trace_state", "Trace state", "TEXT", S.trace_state, "span", None),
                ("start_time", "Start time", "TIMESTAMP", S.start_ns, "timing", None),
                ("end_time", "End time", "TIMESTAMP", S.end_ns, "timing", None),
                ("duration_ns", "Duration (ns)", "INT", S.duration_ns, "timing", None),
                ("span_name", "Span name", "TEXT", S.name, "span", None),
                ("span_kind", "Span kind", "ENUM", S.kind, "span", None),
                ("service_name", "Service", "TEXT", S.service_name, "resource", "service.name"),
                ("status_code", "Status", "ENUM", S.status_code, "status", None),
                ("status_message", "Status message", "TEXT", S.status_message, "status", None),
                ("error_type", "Error type", "TEXT", S.error_type, "status", "error.type"),
                (
                    "operation_name",
                    "Operation",
                    "TEXT",
                    S.operation_name,
                    "gen_ai",
                    "gen_ai.operation.name",
                ),
                (
                    "provider_name",
                    "Provider",
                    "TEXT",
                    S.provider_name,
                    "gen_ai",
                    "gen_ai.provider.name",
                ),
                (
                    "request_model",
                    "Request model",
                    "TEXT",
                    S.request_model,
                    "gen_ai",
                    "gen_ai.request.model",
                ),
                (
                    "response_model",
                    "Response model",
                    "TEXT",
                    S.response_model,
                    "gen_ai",
                    "gen_ai.response.model",
                ),
                (
                    "response_id",
                    "Response id",
                    "TEXT",
                    S.response_id,
                    "gen_ai",
                    "gen_ai.response.id",
                ),
                (
                    "conversation_id",
                    "Conversation",
                    "TEXT",
                    S.conversation_id,
                    "gen_ai",
                    _CONVERSATION,
                ),
                ("agent_id", "Agent id", "TEXT", S.agent_id, "agent", f"{_AGENT}.id"),
                ("agent_name", "Agent name", "TEXT", S.agent_name, "agent", f"{_AGENT}.name"),
                ("workflow_name", "Workflow", "TEXT", S.workflow_name, "gen_ai", _WORKFLOW),
                ("tool_name", "Tool name", "TEXT", S.tool_name, "tool", "gen_ai.tool.name"),
                ("tool_type", "Tool type", "TEXT", S.tool_type, "tool", "gen_ai.tool.type"),
                (
                    "usage_input_tokens",
                    "Input tokens",
                    "INT",
                    S.usage_input_tokens,
                    "usage",
                    f"{_USAGE}.input_tokens",
                ),
                (
                    "usage_output_tokens",
                    "Output tokens",
                    "INT",
                    S.usage_output_tokens,
                    "usage",
                    f"{_USAGE}.output_tokens",
                ),
                (
                    "usage_cache_read_input_tokens",
                    "Cache read tokens",
                    "INT",
                    S.usage_cache_read_input_tokens,
                    "usage",
                    f"{_USAGE}.cache_read.input_tokens",
                ),
                (
                    "usage_cache_creation_input_tokens",
                    "Cache creation tokens",
                    "INT",
                    S.usage_cache_creation_input_tokens,
                    "usage",
                    f"{_USAGE}.cache_creation.input_tokens",
                ),
                ("scope_name", "Scope name", "TEXT", S.scope_name, "scope", None),
                ("scope_version", "Scope version", "TEXT", S.scope_version, "scope", None),
                *_identity(S),
            ]
        ),
        *(
            attribute_field(n, lb, t, S.attributes, k, group=g)
            for n, lb, t, k, g in _SPAN_ATTRIBUTES
        ),
        _map(
            "resource_attributes", "Resource attributes", S.resource_attributes, group="attributes"
        ),
        _map("span_attributes", "Span attributes", S.attributes, group="attributes"),
    ],
    text=(S.name, S.status_message, cast(S.attributes, Text)),
)

LOGS: Entity = build_entity(
    "logs",
    L,
    workspace=L.workspace_id,
    time=L.timestamp_ns,
    fields=[
        *_columns(
            [
                ("timestamp", "Time", "TIMESTAMP", L.timestamp_ns, "log", None),
                ("trace_id", "Trace id", "TEXT", L.trace_id, "log", None),
                ("span_id", "Span id", "TEXT", L.span_id, "log", None),
                ("trace_flags", "Trace flags", "INT", L.trace_flags, "log", None),
                ("severity_text", "Severity", "ENUM", L.severity_text, "log", None),
                ("severity_number", "Severity number", "INT", L.severity_number, "log", None),
                ("service_name", "Service", "TEXT", L.service_name, "resource", "service.name"),
                ("body", "Body", "TEXT", L.body, "log", None),
                ("event_name", "Event name", "TEXT", L.event_name, "log", None),
                (
                    "resource_schema_url",
                    "Resource schema URL",
                    "TEXT",
                    L.resource_schema_url,
                    "resource",
                    None,
                ),
                ("scope_schema_url", "Scope schema URL", "TEXT", L.scope_schema_url, "scope", None),
                ("scope_name", "Scope name", "TEXT", L.scope_name, "scope", None),
                ("scope_version", "Scope version", "TEXT", L.scope_version, "scope", None),
                *_identity(L),
            ]
        ),
        _map(
            "resource_attributes", "Resource attributes", L.resource_attributes, group="attributes"
        ),
        _map("scope_attributes", "Scope attributes", L.scope_attributes, group="attributes"),
        _map("log_attributes", "Log attributes", L.attributes, group="attributes"),
    ],
    text=(L.body, cast(L.attributes, Text)),
)

ENTITIES: dict[str, Entity] = {e.name: e for e in (TRACES, SPANS, LOGS)}
