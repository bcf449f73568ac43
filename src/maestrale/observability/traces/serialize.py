"""Stored telemetry rows as the SDK reads them: times from nanoseconds, attributes as strings,
the GenAI request settings and contents of a span from its `gen_ai.*` attributes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from maestrale.observability.traces.schemas import LogOut, SpanOut, TraceOut
from maestrale.telemetry.tables import TelemetryLog, TelemetrySpan, TelemetryTrace

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The range of a datetime: a stored time outside it (garbage from an exporter) is clamped.
_MIN_NS = -62_135_596_800 * 10**9
_MAX_NS = 253_402_300_799 * 10**9


def from_ns(ns: int) -> datetime:
    ns = min(max(ns, _MIN_NS), _MAX_NS)
    return EPOCH + timedelta(microseconds=ns // 1000)


def to_ns(value: datetime) -> int:
    moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def text(value: Any) -> str:
    """An attribute value as a string: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def texts(attributes: dict[str, Any] | None) -> dict[str, str]:
    return {str(k): text(v) for k, v in (attributes or {}).items()}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def _integer(value: Any) -> int:
    number = _number(value)
    if number is None or abs(number) >= 2**63:
        return 0
    return int(number)


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [text(v) for v in value]
    return [text(value)]


def owner(organization_id: str, workspace_id: str, user_id: str, account: str) -> dict[str, str]:
    return {
        # No customer of its own: the organization stands for it.
        "customer_id": organization_id or "",
        "organization_id": organization_id or "",
        "workspace_id": workspace_id,
        "user_id": user_id or "",
        "service_account_id": account or "",
    }


def trace_out(row: TelemetryTrace) -> TraceOut:
    return TraceOut(
        **owner(row.organization_id, row.workspace_id, row.user_id, row.service_account_id),
        trace_id=row.trace_id,
        root_span_id=row.root_span_id,
        root_span_name=row.root_span_name,
        start_time=from_ns(row.start_ns),
        end_time=from_ns(row.end_ns),
        duration_ns=row.duration_ns,
        service_name=row.service_name,
        environment=row.environment,
        conversation_id=row.conversation_id,
        workflow_name=row.workflow_name,
        agent_id=row.agent_id,
        agent_name=row.agent_name,
        status_code=row.status_code,
        error_count=row.error_count,
        span_count=row.span_count,
        gen_ai_span_count=row.gen_ai_span_count,
        llm_call_count=row.llm_call_count,
        tool_call_count=row.tool_call_count,
        retrieval_count=row.retrieval_count,
        evaluation_count=row.evaluation_count,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cache_read_input_tokens=row.cache_read_input_tokens,
        cache_creation_input_tokens=row.cache_creation_input_tokens,
        models_used=[text(m) for m in row.models_used or []],
        tools_used=[text(t) for t in row.tools_used or []],
        first_turn_last_input_message=row.first_turn_last_input_message,
        first_turn_last_output_message=row.first_turn_last_output_message,
        last_turn_last_input_message=row.last_turn_last_input_message,
        last_turn_last_output_message=row.last_turn_last_output_message,
    )


# GetSpan's string fields read from the span's attributes (OpenTelemetry GenAI conventions).
_ATTRIBUTE_TEXTS = {
    "output_type": "gen_ai.output.type",
    "data_source_id": "gen_ai.data_source.id",
    "agent_version": "gen_ai.agent.version",
    "agent_description": "gen_ai.agent.description",
    "prompt_name": "gen_ai.prompt.name",
    "tool_call_id": "gen_ai.tool.call.id",
    "input_messages": "gen_ai.input.messages",
    "output_messages": "gen_ai.output.messages",
    "system_instructions": "gen_ai.system_instructions",
    "tool_definitions": "gen_ai.tool.definitions",
    "tool_call_arguments": "gen_ai.tool.call.arguments",
    "tool_call_result": "gen_ai.tool.call.result",
}
_REQUEST_NUMBERS = {
    "request_temperature": "gen_ai.request.temperature",
    "request_top_p": "gen_ai.request.top_p",
    "request_top_k": "gen_ai.request.top_k",
    "request_presence_penalty": "gen_ai.request.presence_penalty",
    "request_frequency_penalty": "gen_ai.request.frequency_penalty",
}
_REQUEST_INTEGERS = {
    "request_choice_count": "gen_ai.request.choice.count",
    "request_max_tokens": "gen_ai.request.max_tokens",
    "request_seed": "gen_ai.request.seed",
}
_LISTS = {
    "request_stop_sequences": "gen_ai.request.stop_sequences",
    "request_encoding_formats": "gen_ai.request.encoding_formats",
    "response_finish_reasons": "gen_ai.response.finish_reasons",
}


def span_out(row: TelemetrySpan) -> SpanOut:
    attrs: dict[str, Any] = row.attributes or {}
    derived: dict[str, Any] = {
        **{
            name: text(attrs[key]) if key in attrs else "" for name, key in _ATTRIBUTE_TEXTS.items()
        },
        **{name: _number(attrs.get(key)) for name, key in _REQUEST_NUMBERS.items()},
        **{name: _integer(attrs.get(key)) for name, key in _REQUEST_INTEGERS.items()},
        **{name: _strings(attrs.get(key)) for name, key in _LISTS.items()},
    }
    return SpanOut(
        **owner(row.organization_id, row.workspace_id, row.user_id, row.service_account_id),
        **derived,
        trace_id=row.trace_id,
        span_id=row.span_id,
        parent_span_id=row.parent_span_id,
        trace_state=row.trace_state,
        start_time=from_ns(row.start_ns),
        end_time=from_ns(row.end_ns),
        duration_ns=row.duration_ns,
        span_name=row.name,
        span_kind=row.kind,
        service_name=row.service_name,
        status_code=row.status_code,
        status_message=row.status_message,
        error_type=row.error_type,
        operation_name=row.operation_name,
        provider_name=row.provider_name,
        request_model=row.request_model,
        response_model=row.response_model,
        response_id=row.response_id,
        conversation_id=row.conversation_id,
        agent_id=row.agent_id,
        agent_name=row.agent_name,
        workflow_name=row.workflow_name,
        tool_name=row.tool_name,
        tool_type=row.tool_type,
        usage_input_tokens=row.usage_input_tokens,
        usage_output_tokens=row.usage_output_tokens,
        usage_cache_read_input_tokens=row.usage_cache_read_input_tokens,
        usage_cache_creation_input_tokens=row.usage_cache_creation_input_tokens,
        resource_attributes=texts(row.resource_attributes),
        span_attributes=texts(attrs),
        scope_name=row.scope_name,
        scope_version=row.scope_version,
    )


def log_out(row: TelemetryLog) -> LogOut:
    return LogOut(
        **owner(row.organization_id, row.workspace_id, row.user_id, row.service_account_id),
        timestamp=from_ns(row.timestamp_ns),
        trace_id=row.trace_id,
        span_id=row.span_id,
        trace_flags=row.trace_flags,
        severity_text=row.severity_text,
        severity_number=row.severity_number,
        service_name=row.service_name,
        body=row.body,
        event_name=row.event_name,
        resource_schema_url=row.resource_schema_url,
        resource_attributes=texts(row.resource_attributes),
        scope_schema_url=row.scope_schema_url,
        scope_name=row.scope_name,
        scope_version=row.scope_version,
        scope_attributes=texts(row.scope_attributes),
        log_attributes=texts(row.attributes),
    )
