"""console sign-in sessions

Revision ID: 0017_console_sessions
Revises: 0016_fine_tuning_jobs
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import maestrale.core.db

revision: str = "0017_console_sessions"
down_revision: str | None = "0016_fine_tuning_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("api_key", sa.Text(), nullable=False),
        sa.Column("admin_key", sa.Text(), nullable=True),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_sessions")),
    )
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_console_sessions_expires_at"), ["expires_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_console_sessions_expires_at"))

    op.drop_table("console_sessions")
