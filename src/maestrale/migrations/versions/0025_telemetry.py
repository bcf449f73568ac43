"""telemetry: spans, logs and trace summaries received over OTLP

Revision ID: 0025_telemetry
Revises: 0024_audio_agents
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0025_telemetry"
down_revision: str | None = "0024_audio_agents"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _text(name: str, length: int | None = 256) -> sa.Column[Any]:
    kind: Any = sa.Text() if length is None else sa.String(length=length)
    return sa.Column(name, kind, nullable=False)


def _count(name: str, big: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.BigInteger() if big else sa.Integer(), nullable=False)


def _tenancy() -> list[sa.Column[Any]]:
    return [
        _text("organization_id", 36),
        _text("workspace_id", 36),
        _text("user_id", 200),
        _text("service_account_id", 200),
    ]


def _partial_index(name: str, table: str, columns: list[str], where: str) -> None:
    clause = sa.text(where)
    op.create_index(name, table, columns, sqlite_where=clause, postgresql_where=clause)


def upgrade() -> None:
    op.create_table(
        "telemetry_spans",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        *_tenancy(),
        _text("trace_id", 32),
        _text("span_id", 16),
        _text("parent_span_id", 16),
        _text("trace_state", None),
        _count("start_ns", True),
        _count("end_ns", True),
        _count("duration_ns", True),
        _text("name", 1024),
        _text("kind", 32),
        _text("service_name"),
        _text("status_code", 8),
        _text("status_message", None),
        *(
            _text(name)
            for name in (
                "error_type",
                "operation_name",
                "provider_name",
                "request_model",
                "response_model",
                "response_id",
                "conversation_id",
                "agent_id",
                "agent_name",
                "workflow_name",
                "execution_id",
                "tool_name",
                "tool_type",
            )
        ),
        _count("usage_input_tokens", True),
        _count("usage_output_tokens", True),
        _count("usage_cache_read_input_tokens", True),
        _count("usage_cache_creation_input_tokens", True),
        sa.Column("attributes", JSON, nullable=False),
        sa.Column("resource_attributes", JSON, nullable=False),
        _text("scope_name"),
        _text("scope_version"),
        sa.Column("events", JSON, nullable=False),
        sa.Column("links", JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_telemetry_spans")),
        sa.UniqueConstraint("workspace_id", "trace_id", "span_id", name="uq_telemetry_spans_ids"),
    )
    op.create_index(
        "ix_telemetry_spans_ws_start", "telemetry_spans", ["workspace_id", "start_ns", "id"]
    )
    _partial_index(
        "ix_telemetry_spans_ws_conversation",
        "telemetry_spans",
        ["workspace_id", "conversation_id", "start_ns"],
        "conversation_id <> ''",
    )
    _partial_index(
        "ix_telemetry_spans_ws_execution",
        "telemetry_spans",
        ["workspace_id", "execution_id", "start_ns"],
        "execution_id <> ''",
    )
    op.create_table(
        "telemetry_traces",
        _text("workspace_id", 36),
        _text("trace_id", 32),
        _text("organization_id", 36),
        _text("user_id", 200),
        _text("service_account_id", 200),
        _count("start_ns", True),
        _count("end_ns", True),
        _count("duration_ns", True),
        _text("root_span_id", 16),
        _text("root_span_name", 1024),
        *(
            _text(name)
            for name in (
                "service_name",
                "environment",
                "conversation_id",
                "workflow_name",
                "agent_id",
                "agent_name",
            )
        ),
        _text("status_code", 8),
        *(
            _count(name)
            for name in (
                "error_count",
                "span_count",
                "gen_ai_span_count",
                "llm_call_count",
                "tool_call_count",
                "retrieval_count",
                "evaluation_count",
            )
        ),
        *(
            _count(name, True)
            for name in (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            )
        ),
        sa.Column("models_used", JSON, nullable=False),
        sa.Column("tools_used", JSON, nullable=False),
        *(
            _text(name, None)
            for name in (
                "first_turn_last_input_message",
                "first_turn_last_output_message",
                "last_turn_last_input_message",
                "last_turn_last_output_message",
            )
        ),
        _count("first_turn_ns", True),
        _count("last_turn_ns", True),
        sa.PrimaryKeyConstraint("workspace_id", "trace_id", name=op.f("pk_telemetry_traces")),
    )
    op.create_index(
        "ix_telemetry_traces_ws_start",
        "telemetry_traces",
        ["workspace_id", "start_ns", "trace_id"],
    )
    op.create_table(
        "telemetry_logs",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        *_tenancy(),
        _count("timestamp_ns", True),
        _count("observed_ns", True),
        _text("trace_id", 32),
        _text("span_id", 16),
        _count("trace_flags"),
        _text("severity_text", 32),
        _count("severity_number"),
        _text("service_name"),
        _text("body", None),
        _text("event_name"),
        _text("execution_id"),
        _text("deployment_name"),
        _text("resource_schema_url", 1024),
        sa.Column("resource_attributes", JSON, nullable=False),
        _text("scope_schema_url", 1024),
        _text("scope_name"),
        _text("scope_version"),
        sa.Column("scope_attributes", JSON, nullable=False),
        sa.Column("attributes", JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_telemetry_logs")),
    )
    op.create_index(
        "ix_telemetry_logs_ws_time", "telemetry_logs", ["workspace_id", "timestamp_ns", "id"]
    )
    op.create_index("ix_telemetry_logs_ws_trace", "telemetry_logs", ["workspace_id", "trace_id"])
    for column in ("execution_id", "deployment_name"):
        _partial_index(
            f"ix_telemetry_logs_ws_{column.split('_')[0]}",
            "telemetry_logs",
            ["workspace_id", column, "timestamp_ns", "id"],
            f"{column} <> ''",
        )


def downgrade() -> None:
    op.drop_table("telemetry_logs")
    op.drop_table("telemetry_traces")
    op.drop_table("telemetry_spans")
