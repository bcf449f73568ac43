"""responses: stored responses (a turn of a conversation each) and the events of background ones

Revision ID: 0022_responses
Revises: 0021_dataset_slugs
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0022_responses"
down_revision: str | None = "0021_dataset_slugs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "responses",
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("conversation_id", sa.String(length=200), nullable=True),
        sa.Column("first_seq", sa.Integer(), nullable=False),
        sa.Column("input_count", sa.Integer(), nullable=False),
        sa.Column("end_seq", sa.Integer(), nullable=False),
        sa.Column("previous_response_id", sa.String(length=200), nullable=True),
        sa.Column("started", sa.Boolean(), nullable=False),
        sa.Column("body", JSON, nullable=False),
        sa.Column("request", JSON, nullable=True),
        sa.Column("job_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_responses_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_responses_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_responses_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_responses")),
    )
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_responses_conversation_id"), ["conversation_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_responses_workspace_id"), ["workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_responses_ws_created", ["workspace_id", "created_at", "id"], unique=False
        )
    op.create_table(
        "response_events",
        sa.Column("response_id", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("body", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["response_id"],
            ["responses.id"],
            name=op.f("fk_response_events_response_id_responses"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("response_id", "seq", name=op.f("pk_response_events")),
    )


def downgrade() -> None:
    op.drop_table("response_events")
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.drop_index("ix_responses_ws_created")
        batch_op.drop_index(batch_op.f("ix_responses_workspace_id"))
        batch_op.drop_index(batch_op.f("ix_responses_conversation_id"))
    op.drop_table("responses")
