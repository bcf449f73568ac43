"""usage records count audio seconds and pages

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 04:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("usage_records") as batch_op:
        batch_op.add_column(
            sa.Column("audio_seconds", sa.Float(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("pages", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("usage_records") as batch_op:
        batch_op.drop_column("pages")
        batch_op.drop_column("audio_seconds")
