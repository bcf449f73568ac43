"""judge revisions: up, down and base revision links

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 04:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("observability_judges") as batch_op:
        batch_op.add_column(sa.Column("up_revision", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("down_revision", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("base_revision", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("observability_judges") as batch_op:
        batch_op.drop_column("base_revision")
        batch_op.drop_column("down_revision")
        batch_op.drop_column("up_revision")
