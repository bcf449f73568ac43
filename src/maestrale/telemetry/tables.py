"""The telemetry store's tables: spans and logs as they arrive (one row each), and one summary
row per trace that ingestion keeps up to date (what the trace list searches, without grouping
spans at read time). Times are integers of nanoseconds since the epoch (OTLP's own unit, exact,
and ordered by a plain index); ids are lower-case hex (32 digits for a trace, 16 for a span)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.db import Base, JSONDoc

# Autoincrement ids: BIGINT on Postgres, INTEGER (the rowid) on SQLite.
RowId = BigInteger().with_variant(Integer(), "sqlite")
NAME = 256


def _partial(name: str, *columns: str, where: str) -> Index:
    """An index of the rows where `where` holds (a workflow's records among all others)."""
    clause = text(where)
    return Index(name, *columns, sqlite_where=clause, postgresql_where=clause)


class TelemetrySpan(Base):
    """A span. The OpenTelemetry GenAI attributes that searches and the trace summary read are
    copied into columns at ingestion (`gen_ai.*`, tokens, conversation, agent, workflow, tool);
    every attribute stays in `attributes` as it came (typed JSON)."""

    __tablename__ = "telemetry_spans"
    __table_args__ = (
        # A retried export writes nothing twice.
        UniqueConstraint("workspace_id", "trace_id", "span_id", name="uq_telemetry_spans_ids"),
        # Search pages: newest first within a time range.
        Index("ix_telemetry_spans_ws_start", "workspace_id", "start_ns", "id"),
        # A conversation's spans (a rare value over a long range would walk every span in it).
        _partial(
            "ix_telemetry_spans_ws_conversation",
            "workspace_id",
            "conversation_id",
            "start_ns",
            where="conversation_id <> ''",
        ),
        # A workflow execution's spans (workflows' trace routes).
        _partial(
            "ix_telemetry_spans_ws_execution",
            "workspace_id",
            "execution_id",
            "start_ns",
            where="execution_id <> ''",
        ),
    )

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str] = mapped_column(String(36))
    user_id: Mapped[str] = mapped_column(String(200), default="")
    service_account_id: Mapped[str] = mapped_column(String(200), default="")
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    parent_span_id: Mapped[str] = mapped_column(String(16), default="")
    trace_state: Mapped[str] = mapped_column(Text, default="")
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    duration_ns: Mapped[int] = mapped_column(BigInteger)
    name: Mapped[str] = mapped_column(String(1024))
    # SPAN_KIND_INTERNAL, _SERVER, _CLIENT, _PRODUCER, _CONSUMER (UNSPECIFIED when not set).
    kind: Mapped[str] = mapped_column(String(32))
    service_name: Mapped[str] = mapped_column(String(NAME), default="")
    # Unset, Ok or Error.
    status_code: Mapped[str] = mapped_column(String(8), default="Unset")
    status_message: Mapped[str] = mapped_column(Text, default="")
    error_type: Mapped[str] = mapped_column(String(NAME), default="")
    operation_name: Mapped[str] = mapped_column(String(NAME), default="")
    provider_name: Mapped[str] = mapped_column(String(NAME), default="")
    request_model: Mapped[str] = mapped_column(String(NAME), default="")
    response_model: Mapped[str] = mapped_column(String(NAME), default="")
    response_id: Mapped[str] = mapped_column(String(NAME), default="")
    conversation_id: Mapped[str] = mapped_column(String(NAME), default="")
    agent_id: Mapped[str] = mapped_column(String(NAME), default="")
    agent_name: Mapped[str] = mapped_column(String(NAME), default="")
    workflow_name: Mapped[str] = mapped_column(String(NAME), default="")
    # The workflow execution the span ran in (the official worker's wf.workflow.execution_id).
    execution_id: Mapped[str] = mapped_column(String(NAME), default="")
    tool_name: Mapped[str] = mapped_column(String(NAME), default="")
    tool_type: Mapped[str] = mapped_column(String(NAME), default="")
    usage_input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    usage_output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    usage_cache_read_input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    usage_cache_creation_input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    resource_attributes: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    scope_name: Mapped[str] = mapped_column(String(NAME), default="")
    scope_version: Mapped[str] = mapped_column(String(NAME), default="")
    # [{"time_ns", "name", "attributes"}] and [{"trace_id", "span_id", "attributes"}].
    events: Mapped[list[Any]] = mapped_column(JSONDoc, default=list)
    links: Mapped[list[Any]] = mapped_column(JSONDoc, default=list)


class TelemetryTrace(Base):
    """A trace's summary, merged by ingestion from each batch of its spans (spans may arrive in
    any order and over several batches): the trace list and its fields read this."""

    __tablename__ = "telemetry_traces"
    __table_args__ = (
        Index("ix_telemetry_traces_ws_start", "workspace_id", "start_ns", "trace_id"),
    )

    workspace_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    trace_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    user_id: Mapped[str] = mapped_column(String(200), default="")
    service_account_id: Mapped[str] = mapped_column(String(200), default="")
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    duration_ns: Mapped[int] = mapped_column(BigInteger)
    # The span without a parent ('' until it arrives).
    root_span_id: Mapped[str] = mapped_column(String(16), default="")
    root_span_name: Mapped[str] = mapped_column(String(1024), default="")
    service_name: Mapped[str] = mapped_column(String(NAME), default="")
    # deployment.environment(.name) of the resource.
    environment: Mapped[str] = mapped_column(String(NAME), default="")
    conversation_id: Mapped[str] = mapped_column(String(NAME), default="")
    workflow_name: Mapped[str] = mapped_column(String(NAME), default="")
    agent_id: Mapped[str] = mapped_column(String(NAME), default="")
    agent_name: Mapped[str] = mapped_column(String(NAME), default="")
    # Error when any span is an error, else Unset.
    status_code: Mapped[str] = mapped_column(String(8), default="Unset")
    error_count: Mapped[int] = mapped_column(Integer, default=0)
    span_count: Mapped[int] = mapped_column(Integer, default=0)
    gen_ai_span_count: Mapped[int] = mapped_column(Integer, default=0)
    llm_call_count: Mapped[int] = mapped_column(Integer, default=0)
    tool_call_count: Mapped[int] = mapped_column(Integer, default=0)
    retrieval_count: Mapped[int] = mapped_column(Integer, default=0)
    evaluation_count: Mapped[int] = mapped_column(Integer, default=0)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_read_input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cache_creation_input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    models_used: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    tools_used: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    # The last input and output messages of the first and of the last LLM call (by start).
    first_turn_last_input_message: Mapped[str] = mapped_column(Text, default="")
    first_turn_last_output_message: Mapped[str] = mapped_column(Text, default="")
    last_turn_last_input_message: Mapped[str] = mapped_column(Text, default="")
    last_turn_last_output_message: Mapped[str] = mapped_column(Text, default="")
    # The start of the first and of the last LLM call those messages came from (0: none yet).
    first_turn_ns: Mapped[int] = mapped_column(BigInteger, default=0)
    last_turn_ns: Mapped[int] = mapped_column(BigInteger, default=0)


class TelemetryLog(Base):
    """A log record (OTLP LogRecord). The body is kept as text (a structured body as JSON)."""

    __tablename__ = "telemetry_logs"
    __table_args__ = (
        Index("ix_telemetry_logs_ws_time", "workspace_id", "timestamp_ns", "id"),
        Index("ix_telemetry_logs_ws_trace", "workspace_id", "trace_id"),
        # A workflow execution's and a deployment's logs (workflows' log routes).
        _partial(
            "ix_telemetry_logs_ws_execution",
            "workspace_id",
            "execution_id",
            "timestamp_ns",
            "id",
            where="execution_id <> ''",
        ),
        _partial(
            "ix_telemetry_logs_ws_deployment",
            "workspace_id",
            "deployment_name",
            "timestamp_ns",
            "id",
            where="deployment_name <> ''",
        ),
    )

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    organization_id: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str] = mapped_column(String(36))
    user_id: Mapped[str] = mapped_column(String(200), default="")
    service_account_id: Mapped[str] = mapped_column(String(200), default="")
    # The record's time, else its observed time (OTLP allows either to be unset).
    timestamp_ns: Mapped[int] = mapped_column(BigInteger)
    observed_ns: Mapped[int] = mapped_column(BigInteger, default=0)
    trace_id: Mapped[str] = mapped_column(String(32), default="")
    span_id: Mapped[str] = mapped_column(String(16), default="")
    trace_flags: Mapped[int] = mapped_column(Integer, default=0)
    severity_text: Mapped[str] = mapped_column(String(32), default="")
    severity_number: Mapped[int] = mapped_column(Integer, default=0)
    service_name: Mapped[str] = mapped_column(String(NAME), default="")
    body: Mapped[str] = mapped_column(Text, default="")
    event_name: Mapped[str] = mapped_column(String(NAME), default="")
    # The official workflow worker's workflowExecutionID and deploymentName attributes.
    execution_id: Mapped[str] = mapped_column(String(NAME), default="")
    deployment_name: Mapped[str] = mapped_column(String(NAME), default="")
    resource_schema_url: Mapped[str] = mapped_column(String(1024), default="")
    resource_attributes: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    scope_schema_url: Mapped[str] = mapped_column(String(1024), default="")
    scope_name: Mapped[str] = mapped_column(String(NAME), default="")
    scope_version: Mapped[str] = mapped_column(String(NAME), default="")
    scope_attributes: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
