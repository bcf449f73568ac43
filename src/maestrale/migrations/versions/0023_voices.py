"""voices: custom voices of a workspace, and client sessions (realtime client secrets)

Revision ID: 0023_voices
Revises: 0022_responses
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0023_voices"
down_revision: str | None = "0022_responses"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "voices",
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column("slug", sa.String(length=256), nullable=True),
        sa.Column("languages", JSON, nullable=False),
        sa.Column("gender", sa.String(length=16), nullable=True),
        sa.Column("age", sa.Integer(), nullable=True),
        sa.Column("tags", JSON, nullable=True),
        sa.Column("color", sa.String(length=64), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("retention_notice", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("sample_filename", sa.String(length=512), nullable=True),
        sa.Column("sample_seconds", sa.Float(), nullable=False),
        sa.Column("trimmed_seconds", sa.Float(), nullable=True),
        sa.Column("blob_key", sa.String(length=600), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_voices_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_voices_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_voices")),
    )
    with op.batch_alter_table("voices", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_voices_workspace_id"), ["workspace_id"], unique=False)
        batch_op.create_index(
            "ix_voices_ws_created", ["workspace_id", "created_at", "id"], unique=False
        )
    op.create_table(
        "client_sessions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("api_key_id", sa.String(length=36), nullable=False),
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["api_key_id"],
            ["api_keys.id"],
            name=op.f("fk_client_sessions_api_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_client_sessions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_client_sessions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_client_sessions")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_client_sessions_secret_hash")),
    )
    with op.batch_alter_table("client_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_client_sessions_api_key_id"), ["api_key_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_client_sessions_workspace_id"), ["workspace_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("client_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_client_sessions_workspace_id"))
        batch_op.drop_index(batch_op.f("ix_client_sessions_api_key_id"))
    op.drop_table("client_sessions")
    with op.batch_alter_table("voices", schema=None) as batch_op:
        batch_op.drop_index("ix_voices_ws_created")
        batch_op.drop_index(batch_op.f("ix_voices_workspace_id"))
    op.drop_table("voices")
