"""inbound triggers: triggers bound to webhooks, and the events that fired them

Revision ID: 0030_triggers
Revises: 0029_webhooks
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0030_triggers"
down_revision: str | None = "0029_webhooks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _tenant(table: str) -> list[Any]:
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
        "triggers",
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("owner_type", sa.String(length=16), nullable=False),
        sa.Column("event_source_id", sa.String(length=200), nullable=False),
        sa.Column(
            "event_source",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("handler", sa.String(length=32), nullable=False),
        sa.Column("action_type", sa.String(length=32), nullable=False),
        sa.Column("primitive_id", sa.String(length=200), nullable=False),
        sa.Column("filters", sa.Text(), nullable=True),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        *_tenant("triggers"),
    )
    op.create_index(
        "ix_triggers_ws_source", "triggers", ["workspace_id", "event_source_id"], unique=False
    )
    op.create_index(
        "ix_triggers_ws_created", "triggers", ["workspace_id", "created_at", "id"], unique=False
    )
    op.create_index(op.f("ix_triggers_workspace_id"), "triggers", ["workspace_id"], unique=False)
    op.create_table(
        "trigger_events",
        sa.Column("trigger_id", sa.String(length=200), nullable=False),
        sa.Column("delivery_id", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("received_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("submitted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("triggered_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("started_kind", sa.String(length=32), nullable=True),
        sa.Column("started_id", sa.String(length=200), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        *_tenant("trigger_events"),
        sa.ForeignKeyConstraint(
            ["trigger_id"],
            ["triggers.id"],
            name=op.f("fk_trigger_events_trigger_id_triggers"),
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("trigger_id", "delivery_id", name="uq_trigger_events_trigger_delivery"),
    )
    op.create_index(
        "ix_trigger_events_trigger_received",
        "trigger_events",
        ["trigger_id", "received_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_trigger_events_workspace_id"), "trigger_events", ["workspace_id"], unique=False
    )


def downgrade() -> None:
    op.drop_table("trigger_events")
    op.drop_table("triggers")
