"""evaluation pipelines: judges run over incoming spans, and the span evaluations they store

Revision ID: 0026_eval_pipelines
Revises: 0025_telemetry
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0026_eval_pipelines"
down_revision: str | None = "0025_telemetry"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TIME = maestrale.core.db.UTCDateTime(timezone=True)


def _owner(table: str) -> list[Any]:
    return [
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f(f"fk_{table}_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f(f"fk_{table}_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def upgrade() -> None:
    op.create_table(
        "observability_pipelines",
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("slug", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("selectors", JSON, nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("creator_id", sa.String(length=200), nullable=True),
        sa.Column("key_id", sa.String(length=36), nullable=True),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("last_span_row_id", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        *_owner("observability_pipelines"),
        sa.UniqueConstraint("workspace_id", "slug", name="uq_obs_pipelines_slug"),
    )
    op.create_index(
        "ix_obs_pipelines_ws_created",
        "observability_pipelines",
        ["workspace_id", "created_at", "id"],
    )
    op.create_index(
        op.f("ix_observability_pipelines_workspace_id"),
        "observability_pipelines",
        ["workspace_id"],
    )
    op.create_table(
        "observability_pipeline_configs",
        sa.Column("pipeline_id", sa.String(length=200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("slug", sa.String(length=200), nullable=False),
        sa.Column("judge_id", sa.String(length=200), nullable=False),
        sa.Column("judge_slug", sa.String(length=500), nullable=False),
        sa.Column("judge_definition", JSON, nullable=False),
        sa.Column("mapping", JSON, nullable=False),
        sa.Column("sampling", JSON, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        *_owner("observability_pipeline_configs"),
        sa.ForeignKeyConstraint(
            ["pipeline_id"],
            ["observability_pipelines.id"],
            name=op.f("fk_observability_pipeline_configs_pipeline_id_observability_pipelines"),
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("workspace_id", "slug", name="uq_obs_pipeline_configs_slug"),
    )
    op.create_index(
        "ix_obs_pipeline_configs_pipeline",
        "observability_pipeline_configs",
        ["pipeline_id", "position"],
    )
    op.create_index(
        op.f("ix_observability_pipeline_configs_workspace_id"),
        "observability_pipeline_configs",
        ["workspace_id"],
    )
    op.create_table(
        "observability_span_evaluations",
        sa.Column("id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=200), nullable=False),
        sa.Column("service_account_id", sa.String(length=200), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=False),
        sa.Column("span_row_id", sa.BigInteger(), nullable=False),
        sa.Column("span_name", sa.String(length=1024), nullable=False),
        sa.Column("span_duration_ns", sa.BigInteger(), nullable=False),
        sa.Column("response_id", sa.String(length=256), nullable=False),
        sa.Column("conversation_id", sa.String(length=256), nullable=False),
        sa.Column("timestamp_ns", sa.BigInteger(), nullable=False),
        sa.Column("evaluation_name", sa.String(length=500), nullable=False),
        sa.Column("score_value", sa.Float(), nullable=False),
        sa.Column("score_label", sa.String(length=500), nullable=False),
        sa.Column("explanation", sa.Text(), nullable=False),
        sa.Column("metadata", JSON, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("pipeline_id", sa.String(length=200), nullable=False),
        sa.Column("pipeline_config_id", sa.String(length=200), nullable=False),
        sa.Column("pipeline_config_slug", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_span_evaluations")),
        sa.UniqueConstraint(
            "pipeline_config_id", "span_row_id", name="uq_obs_span_evaluations_once"
        ),
    )
    op.create_index(
        "ix_obs_span_evaluations_ws_time",
        "observability_span_evaluations",
        ["workspace_id", "timestamp_ns", "id"],
    )
    op.create_index(
        "ix_obs_span_evaluations_ws_span",
        "observability_span_evaluations",
        ["workspace_id", "trace_id", "span_id"],
    )


def downgrade() -> None:
    op.drop_table("observability_span_evaluations")
    op.drop_table("observability_pipeline_configs")
    op.drop_table("observability_pipelines")
