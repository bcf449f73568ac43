"""conversation turns: the lease an append holds while its model runs

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 10:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import maestrale.core.db

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch_op:
        batch_op.add_column(sa.Column("turn_owner", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column(
                "turn_expires_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch_op:
        batch_op.drop_column("turn_expires_at")
        batch_op.drop_column("turn_owner")
