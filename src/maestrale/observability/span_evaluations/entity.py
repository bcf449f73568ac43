"""Span evaluations as a searchable entity of the search language (fields named as the SDK's
GetSpanEvaluation keys), for their search, aggregate and fields routes."""

from __future__ import annotations

from sqlalchemy import ColumnElement

from maestrale.observability.span_evaluations.tables import SpanEvaluation as E
from maestrale.telemetry.search.fields import build_entity, map_field
from maestrale.telemetry.search.fields import column_field as col
from maestrale.telemetry.search.model import Entity

SPAN_EVALUATIONS: Entity = build_entity(
    "span_evaluations",
    E,
    workspace=E.workspace_id,
    time=E.timestamp_ns,
    fields=[
        col("timestamp", "Evaluated at", "TIMESTAMP", E.timestamp_ns, group="evaluation"),
        col("evaluation_name", "Evaluation", "ENUM", E.evaluation_name, group="evaluation"),
        col("score_value", "Score", "FLOAT", E.score_value, group="evaluation"),
        col("score_label", "Label", "ENUM", E.score_label, group="evaluation"),
        col("explanation", "Explanation", "TEXT", E.explanation, group="evaluation"),
        map_field("metadata", "Metadata", E.meta, group="evaluation"),
        col("trace_id", "Trace id", "TEXT", E.trace_id, group="span"),
        col("span_id", "Span id", "TEXT", E.span_id, group="span"),
        col("span_name", "Span name", "TEXT", E.span_name, group="span"),
        col("duration_ns", "Span duration (ns)", "INT", E.span_duration_ns, group="span"),
        col(
            "response_id",
            "Response id",
            "TEXT",
            E.response_id,
            group="gen_ai",
            source="gen_ai.response.id",
        ),
        col(
            "conversation_id",
            "Conversation id",
            "TEXT",
            E.conversation_id,
            group="gen_ai",
            source="gen_ai.conversation.id",
        ),
        col("pipeline_id", "Pipeline id", "TEXT", E.pipeline_id, group="pipeline"),
        col(
            "pipeline_config_slug",
            "Pipeline config",
            "ENUM",
            E.pipeline_config_slug,
            group="pipeline",
        ),
        col("user_id", "User id", "TEXT", E.user_id, group="identity"),
        col(
            "service_account_id",
            "Service account id",
            "TEXT",
            E.service_account_id,
            group="identity",
        ),
    ],
    text=(E.evaluation_name, E.score_label, E.explanation),
)


def judged() -> ColumnElement[bool]:
    """Every search's condition: failed judge calls are kept but never shown."""
    return E.error.is_(None)
