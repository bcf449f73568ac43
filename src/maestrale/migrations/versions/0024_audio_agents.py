"""audio agents: versioned voice agents, and audio sessions

Revision ID: 0024_audio_agents
Revises: 0023_voices
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0024_audio_agents"
down_revision: str | None = "0023_voices"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _tenancy(table: str) -> list[Any]:
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
        "audio_agents",
        sa.Column("current_version", sa.Integer(), nullable=False),
        sa.Column("last_version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("owner_id", sa.String(length=200), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        *_tenancy("audio_agents"),
    )
    with op.batch_alter_table("audio_agents", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_audio_agents_workspace_id"), ["workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_audio_agents_ws_created", ["workspace_id", "created_at", "id"], unique=False
        )
    op.create_table(
        "audio_agent_versions",
        sa.Column("agent_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("configuration", JSON, nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["audio_agents.id"],
            name=op.f("fk_audio_agent_versions_agent_id_audio_agents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("agent_id", "version", name=op.f("pk_audio_agent_versions")),
    )
    op.create_table(
        "audio_sessions",
        sa.Column("agent_id", sa.String(length=200), nullable=True),
        sa.Column("agent_version", sa.Integer(), nullable=True),
        sa.Column("configuration", JSON, nullable=False),
        sa.Column("owner_id", sa.String(length=200), nullable=False),
        sa.Column("caller", JSON, nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("conversation_id", sa.String(length=200), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("started_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("ended_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        *_tenancy("audio_sessions"),
    )
    with op.batch_alter_table("audio_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_audio_sessions_workspace_id"), ["workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_audio_sessions_ws_agent_created",
            ["workspace_id", "agent_id", "created_at"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("audio_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_audio_sessions_ws_agent_created")
        batch_op.drop_index(batch_op.f("ix_audio_sessions_workspace_id"))
    op.drop_table("audio_sessions")
    op.drop_table("audio_agent_versions")
    with op.batch_alter_table("audio_agents", schema=None) as batch_op:
        batch_op.drop_index("ix_audio_agents_ws_created")
        batch_op.drop_index(batch_op.f("ix_audio_agents_workspace_id"))
    op.drop_table("audio_agents")
