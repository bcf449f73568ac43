"""usage records and chat completion events

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26 01:55:20.486089
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "chat_completion_events",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("key_id", sa.String(length=36), nullable=True),
        sa.Column("correlation_id", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=50), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column(
            "request_messages",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "response_messages",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "enabled_tools",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("nb_input_tokens", sa.Integer(), nullable=False),
        sa.Column("nb_output_tokens", sa.Integer(), nullable=False),
        sa.Column("nb_messages", sa.Integer(), nullable=False),
        sa.Column(
            "extra_fields",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chat_completion_events")),
    )
    with op.batch_alter_table("chat_completion_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_cce_ws_correlation", ["workspace_id", "correlation_id"], unique=False
        )
        batch_op.create_index(
            "ix_cce_ws_created", ["workspace_id", "created_at", "id"], unique=False
        )
        batch_op.create_index("ix_cce_ws_model", ["workspace_id", "model"], unique=False)

    op.create_table(
        "usage_records",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("key_id", sa.String(length=36), nullable=True),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("endpoint", sa.String(length=50), nullable=False),
        sa.Column("source", sa.String(length=50), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("correlation_id", sa.String(length=200), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_records")),
    )
    with op.batch_alter_table("usage_records", schema=None) as batch_op:
        batch_op.create_index(
            "ix_usage_records_org_created", ["organization_id", "created_at"], unique=False
        )
        batch_op.create_index(
            "ix_usage_records_ws_created", ["workspace_id", "created_at"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("usage_records", schema=None) as batch_op:
        batch_op.drop_index("ix_usage_records_ws_created")
        batch_op.drop_index("ix_usage_records_org_created")

    op.drop_table("usage_records")
    with op.batch_alter_table("chat_completion_events", schema=None) as batch_op:
        batch_op.drop_index("ix_cce_ws_model")
        batch_op.drop_index("ix_cce_ws_created")
        batch_op.drop_index("ix_cce_ws_correlation")

    op.drop_table("chat_completion_events")
